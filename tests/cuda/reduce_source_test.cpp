// The CUDA backend's reduction and softmax kernels, without a GPU: every source variant the
// kernels can ask for (each op with each dtype, one-pass and split-row passes) compiles with
// NVRTC to PTX that holds its entry.
#include <gtest/gtest.h>

#include <set>

#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/reduce.h"
#include "kiln/core/error.h"

namespace kiln {
namespace {

using cuda::ReduceKind;

const ScalarType kDtypes[] = {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64,
                              kInt32,   kInt16,   kInt8,    kUInt8,    kBool};
const ReduceKind kKinds[] = {ReduceKind::Sum, ReduceKind::Mean,    ReduceKind::Max,
                             ReduceKind::Min, ReduceKind::Softmax, ReduceKind::LogSoftmax};

struct Variant {
  ReduceKind kind;
  ScalarType in, out;
};

// (kind, in, out) of every kernel a call can launch, once each: the one-pass kernel of each
// dtype, and for reductions the partial pass into the accumulator and the final pass out of it.
std::vector<Variant> variants() {
  std::vector<Variant> v;
  std::set<std::string> seen;
  auto add = [&](ReduceKind k, ScalarType in, ScalarType out) {
    if (seen.insert(cuda::reduce_kernel_name(k, in, out)).second) v.push_back({k, in, out});
  };
  for (ReduceKind k : kKinds) {
    for (ScalarType dt : kDtypes) {
      if (!cuda::reduce_supported(k, dt, dt)) continue;
      add(k, dt, dt);
      if (k == ReduceKind::Softmax || k == ReduceKind::LogSoftmax) continue;
      const ScalarType acc = cuda::reduce_accumulator(dt);
      if (acc == dt) continue;
      add(k == ReduceKind::Mean ? ReduceKind::Sum : k, dt, acc);  // mean's partial pass sums
      add(k, acc, dt);
    }
  }
  return v;
}

TEST(CudaReduceSource, SupportedDtypes) {
  for (ScalarType dt : {kFloat64, kFloat32, kFloat16, kBFloat16}) {
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::Mean, dt, dt)) << dt;
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::Softmax, dt, dt)) << dt;
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::LogSoftmax, dt, dt)) << dt;
  }
  for (ScalarType dt : kDtypes) {
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::Max, dt, dt)) << dt;
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::Min, dt, dt)) << dt;
    EXPECT_EQ(cuda::reduce_supported(ReduceKind::Sum, dt, dt), dt != kBool) << dt;
  }
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::Mean, kInt64, kInt64));
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::Softmax, kInt32, kInt32));
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::Softmax, kFloat32, kFloat64));
  EXPECT_EQ(cuda::reduce_accumulator(kBFloat16), kFloat32);
  EXPECT_EQ(cuda::reduce_accumulator(kFloat64), kFloat64);
  EXPECT_EQ(cuda::reduce_accumulator(kInt8), kInt64);
  EXPECT_THROW(cuda::reduce_source(ReduceKind::Softmax, kInt32, kInt32, "k"), Error);
}

TEST(CudaReduceSource, EveryVariantCompiles) {
  const std::vector<Variant> all = variants();
  // sum: 9 dtypes + 2 passes for float16, bfloat16 and the 4 narrow integers; mean: 4 + the
  // final passes of the 16-bit floats; amax, amin: 10 + 2 passes for 7 dtypes each; softmax,
  // log_softmax: 4 each.
  EXPECT_EQ(all.size(), 21u + 6u + 24u + 24u + 8u);
  for (const Variant& v : all) {
    const std::string name = cuda::reduce_kernel_name(v.kind, v.in, v.out);
    SCOPED_TRACE(name);
    const std::string source = cuda::reduce_source(v.kind, v.in, v.out, name);
    std::string ptx;
    try {
      ptx = cuda::compile_to_ptx(source, name, "compute_90");
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    EXPECT_NE(ptx.find(".entry " + name + "("), std::string::npos) << ptx;
  }
}

}  // namespace
}  // namespace kiln
