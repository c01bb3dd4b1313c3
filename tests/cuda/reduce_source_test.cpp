// The CUDA backend's reduction and softmax kernels, without a GPU: every source variant the
// kernels can ask for (each op with each dtype, one-pass and split-row passes) compiles with
// NVRTC to PTX that holds its entry.
#include <gtest/gtest.h>

#include <set>

#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/reduce.h"
#include "kiln/core/error.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

using cuda::ReduceKind;
using cuda::ReducePass;

const ScalarType kDtypes[] = {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64,
                              kInt32,   kInt16,   kInt8,    kUInt8,    kBool};
const ReduceKind kFolds[] = {ReduceKind::Sum,        ReduceKind::Mean,         ReduceKind::Prod,
                             ReduceKind::Max,        ReduceKind::Min,          ReduceKind::All,
                             ReduceKind::Any,        ReduceKind::CountNonzero, ReduceKind::NormZero,
                             ReduceKind::NormOne,    ReduceKind::NormTwo,      ReduceKind::NormInf,
                             ReduceKind::NormNegInf, ReduceKind::NormP};
const ReduceKind kRowKinds[] = {ReduceKind::Softmax, ReduceKind::LogSoftmax, ReduceKind::LogSumExp,
                                ReduceKind::Var, ReduceKind::Std};

struct Variant {
  ReduceKind kind;
  ReducePass pass;
  ScalarType in, out;
};

// (kind, pass, in, out) of every kernel a call can launch, once each: the whole pass of each
// supported pair of dtypes and, for folds, the partial pass into the accumulator and the final
// pass out of it.
std::vector<Variant> variants() {
  std::vector<Variant> v;
  std::set<std::string> seen;
  auto add = [&](ReduceKind k, ReducePass p, ScalarType in, ScalarType out) {
    if (seen.insert(cuda::reduce_kernel_name(k, p, in, out)).second) v.push_back({k, p, in, out});
  };
  for (ReduceKind k : kFolds) {
    for (ScalarType in : kDtypes) {
      for (ScalarType out : kDtypes) {
        if (!cuda::reduce_supported(k, in, out)) continue;
        const ScalarType acc = cuda::reduce_accumulator(k, in);
        add(k, ReducePass::Whole, in, out);
        add(k, ReducePass::Partial, in, acc);
        add(k, ReducePass::Final, acc, out);
      }
    }
  }
  for (ReduceKind k : kRowKinds)
    for (ScalarType dt : kDtypes)
      if (cuda::reduce_supported(k, dt, dt)) add(k, ReducePass::Whole, dt, dt);
  return v;
}

TEST(CudaReduceSource, SupportedDtypes) {
  for (ScalarType dt : {kFloat64, kFloat32, kFloat16, kBFloat16}) {
    for (ReduceKind k :
         {ReduceKind::Mean, ReduceKind::NormTwo, ReduceKind::NormP, ReduceKind::Softmax,
          ReduceKind::LogSoftmax, ReduceKind::LogSumExp, ReduceKind::Var, ReduceKind::Std})
      EXPECT_TRUE(cuda::reduce_supported(k, dt, dt)) << dt;
  }
  for (ScalarType dt : kDtypes) {
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::Max, dt, dt)) << dt;
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::Min, dt, dt)) << dt;
    EXPECT_EQ(cuda::reduce_supported(ReduceKind::Sum, dt, dt), dt != kBool) << dt;
    EXPECT_EQ(cuda::reduce_supported(ReduceKind::Prod, dt, dt), dt != kBool) << dt;
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::All, dt, kBool)) << dt;
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::Any, dt, kUInt8)) << dt;
    EXPECT_TRUE(cuda::reduce_supported(ReduceKind::CountNonzero, dt, kInt64)) << dt;
  }
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::Mean, kInt64, kInt64));
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::Sum, kInt8, kInt64));
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::All, kFloat32, kFloat32));
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::Softmax, kInt32, kInt32));
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::Softmax, kFloat32, kFloat64));
  EXPECT_FALSE(cuda::reduce_supported(ReduceKind::Var, kInt64, kInt64));
  EXPECT_EQ(cuda::reduce_accumulator(ReduceKind::Sum, kBFloat16), kFloat32);
  EXPECT_EQ(cuda::reduce_accumulator(ReduceKind::Sum, kFloat64), kFloat64);
  EXPECT_EQ(cuda::reduce_accumulator(ReduceKind::Sum, kInt8), kInt64);
  EXPECT_EQ(cuda::reduce_accumulator(ReduceKind::Prod, kFloat32), kFloat64);
  EXPECT_EQ(cuda::reduce_accumulator(ReduceKind::Var, kBFloat16), kFloat64);
  EXPECT_EQ(cuda::reduce_accumulator(ReduceKind::All, kFloat32), kBool);
  EXPECT_EQ(cuda::reduce_accumulator(ReduceKind::CountNonzero, kFloat16), kInt64);
  EXPECT_EQ(cuda::reduce_kernel_name(ReduceKind::Mean, ReducePass::Partial, kFloat16, kFloat32),
            cuda::reduce_kernel_name(ReduceKind::Sum, ReducePass::Partial, kFloat16, kFloat32));
  EXPECT_THROW(cuda::reduce_source(ReduceKind::Softmax, ReducePass::Whole, kInt32, kInt32, "k"),
               Error);
  EXPECT_THROW(cuda::reduce_source(ReduceKind::Var, ReducePass::Partial, kFloat32, kFloat64, "k"),
               Error);
}

TEST(CudaReduceSource, EveryVariantCompiles) {
  const std::vector<Variant> all = variants();
  // Whole passes: sum 9, prod 9, max 10, min 10, mean 4, all 20, any 20, count_nonzero 10, six
  // norms 4 each, five row kinds 4 each. Partial passes: one per input dtype of each fold but
  // mean, whose partial pass is sum's: 9 + 9 + 10 + 10 + 10 + 10 + 10 + 6 * 4. Final passes,
  // one per (accumulator, output): sum 9, mean 4, prod 9, max 10, min 10, all 2, any 2,
  // count_nonzero 1, norms 4 each.
  EXPECT_EQ(all.size(), (9u + 9 + 10 + 10 + 4 + 20 + 20 + 10 + 24 + 20) +
                            (9u + 9 + 10 + 10 + 10 + 10 + 10 + 24) +
                            (9u + 4 + 9 + 10 + 10 + 2 + 2 + 1 + 24));
  for (const Variant& v : all) {
    const std::string name = cuda::reduce_kernel_name(v.kind, v.pass, v.in, v.out);
    testing::expect_ptx_compiles(cuda::reduce_source(v.kind, v.pass, v.in, v.out, name), name);
  }
}

}  // namespace
}  // namespace kiln
