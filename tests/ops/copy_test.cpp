// Copies of transposed and permuted views into contiguous tensors (the tiled transpose of
// kiln/backend/cpu/copy_transpose.cpp) against the element-by-element converting copy.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

// Values that every dtype holds exactly and that differ between neighbouring positions.
Tensor numbered(const std::vector<int64_t>& shape, ScalarType dtype) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor i = arange(n, TensorOptions(kInt64)).view(shape);
  if (dtype == kBool) return i.remainder(3).eq(0);
  if (dtype == kUInt8 || dtype == kBFloat16) return i.remainder(199).to(dtype);
  return i.to(dtype);
}

TEST(TransposedCopy, MatchesTheConvertingCopy) {
  using View = std::function<Tensor(const Tensor&)>;
  struct Case {
    std::vector<int64_t> shape;
    View view;
    std::string name;
  };
  const std::vector<Case> cases = {
      {{37, 45}, [](const Tensor& x) { return x.t(); }, "edges on both dims"},
      {{64, 96}, [](const Tensor& x) { return x.t(); }, "whole tiles"},
      {{300, 257}, [](const Tensor& x) { return x.t(); }, "many tiles, split over threads"},
      {{3, 40, 50},
       [](const Tensor& x) {
         return x.permute({0, 2, 1});
       },
       "batched"},
      {{20, 5, 33},
       [](const Tensor& x) {
         return x.permute({2, 1, 0});
       },
       "outer dim between"},
      {{2, 9, 3, 16}, [](const Tensor& x) { return x.transpose(1, 2); }, "head split"},
      {{41, 43}, [](const Tensor& x) { return x.slice(0, 2).slice(1, 1).t(); }, "offset view"},
      {{40, 1, 24},
       [](const Tensor& x) {
         return x.permute({2, 1, 0});
       },
       "size-1 dim"},
  };
  for (ScalarType dt : {kFloat32, kFloat64, kInt64, kInt32, kInt16, kUInt8, kBool, kBFloat16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + ", " + c.name);
      Tensor src = c.view(numbered(c.shape, dt));
      ASSERT_FALSE(src.is_contiguous());
      Tensor got = src.contiguous();
      EXPECT_TRUE(got.is_contiguous());
      Tensor want = src.to(dt == kFloat64 ? kFloat32 : kFloat64).to(dt);
      EXPECT_TRUE(got.equal(want));
    }
  }
}

// A transpose of another part of the destination's own storage (taken element by element, as
// a tiled copy could overwrite what it still has to read when the parts overlap).
TEST(TransposedCopy, FromTheDestinationsOwnStorage) {
  Tensor x = numbered({32, 16}, kFloat32);
  Tensor before = x.clone();
  x.slice(0, 0, 8).copy_(x.slice(0, 16).t().slice(0, 0, 8));
  EXPECT_TRUE(x.slice(0, 0, 8).equal(before.slice(0, 16).t().slice(0, 0, 8)));
  EXPECT_TRUE(x.slice(0, 8).equal(before.slice(0, 8)));
}

}  // namespace
}  // namespace kiln
