// Tensor::accessor<T, N>() and packed_accessor64/32 (kiln/core/tensor_accessor.h): element reads
// and writes through sizes, strides and the storage offset, on contiguous and strided tensors,
// and the dtype and rank checks.
#include <gtest/gtest.h>

#include <utility>

#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(TensorAccessor, ReadsAndWritesAContiguousTensor) {
  Tensor t = arange(6, kFloat32).view({2, 3});
  auto a = t.accessor<float, 2>();
  EXPECT_EQ(a.size(0), 2);
  EXPECT_EQ(a.size(1), 3);
  EXPECT_EQ(a.stride(0), 3);
  EXPECT_EQ(a.stride(1), 1);
  EXPECT_EQ(a.data(), t.data_ptr<float>());
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(a[i][j], static_cast<float>(3 * i + j));
  a[1][2] = 50.0f;
  a[0][0] += 7.0f;
  EXPECT_EQ(t[1][2].item<float>(), 50.0f);
  EXPECT_EQ(t[0][0].item<float>(), 7.0f);
  // A row is itself an accessor.
  auto row = a[1];
  EXPECT_EQ(row.size(0), 3);
  EXPECT_EQ(row[1], 4.0f);
}

TEST(TensorAccessor, FollowsStridesAndTheStorageOffset) {
  // base[i][j][k] = 12 i + 4 j + k; v = base.transpose(0, 2).narrow(0, 1, 2): v[a][b][c] =
  // base[c][b][a + 1], with strides {1, 4, 12} and storage offset 1.
  Tensor base = arange(24, kFloat64).view({2, 3, 4});
  Tensor v = base.transpose(0, 2).narrow(0, 1, 2);
  ASSERT_FALSE(v.is_contiguous());
  ASSERT_EQ(v.storage_offset(), 1);
  auto a = v.accessor<double, 3>();
  EXPECT_EQ(a.stride(0), 1);
  EXPECT_EQ(a.stride(1), 4);
  EXPECT_EQ(a.stride(2), 12);
  double sum = 0;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k) {
        EXPECT_EQ(a[i][j][k], 12.0 * k + 4.0 * j + i + 1) << i << j << k;
        sum += a[i][j][k];
      }
  EXPECT_EQ(sum, v.sum().item<double>());
  a[1][2][1] = -1;  // base[1][2][2]
  EXPECT_EQ(base[1][2][2].item<double>(), -1.0);
}

TEST(TensorAccessor, IntegerDtypesAndConstElements) {
  Tensor t = tensor(std::vector<int64_t>{4, 5, 6});
  auto a = t.accessor<const int64_t, 1>();
  EXPECT_EQ(a[0] + a[1] + a[2], 15);
  Tensor b = tensor({1, 2}).to(kInt32);
  auto ab = b.accessor<int32_t, 1>();
  ab[0] = 9;
  EXPECT_EQ(b[0].item<int64_t>(), 9);
}

// Whether accessors can be taken from a T (T&& a temporary, T& or const T& a named tensor).
template <class T>
constexpr bool kPackedAccessible = requires(T&& t) {
  std::forward<T>(t).template packed_accessor64<float, 1>();
  std::forward<T>(t).template packed_accessor32<float, 1>();
};
template <class T>
constexpr bool kAccessible = requires(T&& t) {
  std::forward<T>(t).template accessor<float, 1>();
};

TEST(TensorAccessor, PackedAccessorsCopySizesAndStrides) {
  Tensor t = arange(12, kFloat32).view({3, 4}).t();  // [4, 3], strides {1, 4}
  auto p64 = t.packed_accessor64<float, 2>();
  auto p32 = t.packed_accessor32<float, 2>();
  EXPECT_EQ(p64.size(0), 4);
  EXPECT_EQ(p32.stride(1), 4);
  static_assert(std::is_same_v<decltype(p32.size(0)), int32_t>);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(p64[i][j], static_cast<float>(4 * j + i));
      EXPECT_EQ(p32[static_cast<int32_t>(i)][static_cast<int32_t>(j)],
                static_cast<float>(4 * j + i));
    }
  // Accessors point into the tensor: it must outlive them, so on a temporary they do not compile,
  // as in libtorch (a packed accessor of a temporary once wrote into freed memory).
  static_assert(!kPackedAccessible<Tensor> && !kAccessible<Tensor>);
  static_assert(kPackedAccessible<const Tensor&> && kAccessible<Tensor&>);
  Tensor r = arange(3, kFloat32);
  auto flat = r.packed_accessor64<float, 1>();
  flat[2] = 8;
  EXPECT_EQ(r[2].item<float>(), 8.0f);
}

TEST(TensorAccessor, ChecksDtypeAndRank) {
  Tensor t = zeros({2, 3, 4});
  try {
    (void)t.accessor<float, 2>();
    FAIL() << "a 3-dim tensor read as 2-dim";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("accessor<float32, 2>"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected a 2-dim tensor, got a 3-dim tensor of shape [2, 3, 4]"),
              std::string::npos)
        << msg;
  }
  try {
    (void)t.accessor<double, 3>();
    FAIL() << "float32 read as double";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("expected a tensor of dtype float64, got a tensor of dtype float32"),
              std::string::npos)
        << msg;
  }
  EXPECT_THROW((void)(t.packed_accessor64<int64_t, 3>()), Error);
}

}  // namespace
}  // namespace kiln
