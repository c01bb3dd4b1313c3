// The op table under kiln::func: for every op with a batching rule, vmap over several in_dims
// equals the loop that stacks the op's results one element at a time; for every differentiable
// op, jvp (forward mode) equals central finite differences along a random tangent (float64).
#include <gtest/gtest.h>

#include <random>

#include "kiln/func/autodiff.h"
#include "kiln/func/batching_rules.h"
#include "kiln/func/vmap_flat.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

constexpr int64_t kBatch = 3;

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpDef* op : all_ops()) names.push_back(op->name);
  return names;
}

class OpTableFunc : public ::testing::TestWithParam<std::string> {
 protected:
  const OpDef& op() const { return get_op(GetParam()); }
};

// The dtype the op's samples are made in: float64 where the op takes it.
ScalarType sample_dtype(const OpDef& op) {
  if (op.dtypes_.empty()) return kFloat64;
  for (ScalarType d : op.dtypes_)
    if (d == kFloat64) return d;
  return op.dtypes_[0];
}

bool batchable(const Tensor& t, ScalarType dtype) {
  return t.defined() && (is_floating_point(t.dtype()) || t.dtype() == dtype) &&
         !t.impl()->is_wrapped_number() && t.dim() > 0;
}

// kBatch copies of t stacked along `dim`: floating point ones each scaled a little differently
// (signs and zeros stay where they are, so domains hold), others repeated.
Tensor batch_of(const Tensor& t, int64_t dim) {
  std::vector<Tensor> copies;
  for (int64_t b = 0; b < kBatch; ++b)
    copies.push_back(is_floating_point(t.dtype()) ? t.mul(1.0 + 0.125 * b) : t.clone());
  return stack(copies, dim);
}

TEST_P(OpTableFunc, VmapMatchesTheLoop) {
  const OpDef& o = op();
  const auto kind = func::detail::batch_rule_kind(o);
  if (kind == func::detail::BatchRuleKind::Loop || o.is_random)
    GTEST_SKIP() << o.name << " runs as vmap's loop (it has no batching rule)";
  int64_t compared = 0;
  const ScalarType dtype = sample_dtype(o);
  for (const OpSample& s : o.samples_(dtype)) {
    // Every input batched at dim 0, at the last dim (the rules must move a batch from anywhere),
    // and only input 0 batched (the others broadcast over the batch).
    for (int variant = 0; variant < 3; ++variant) {
      const bool last = variant == 1, only_first = variant == 2;
      SCOPED_TRACE(o.name + " " + s.desc +
                   (last         ? " (in_dim -1)"
                    : only_first ? " (input 0 only)"
                                 : " (in_dim 0)"));
      std::vector<Tensor> inputs = testing::clone_inputs(s.inputs);
      std::vector<Tensor> batched(inputs.size());
      std::vector<std::optional<int64_t>> in_dims(inputs.size());
      bool any = false;
      for (size_t i = 0; i < inputs.size(); ++i) {
        // In-place ops write into input 0: only it may be batched when others are.
        if (!batchable(inputs[i], dtype) || ((o.is_inplace || only_first) && i > 0)) {
          batched[i] = inputs[i];
          continue;
        }
        const int64_t dim = last ? inputs[i].dim() : 0;
        batched[i] = batch_of(inputs[i], dim);
        in_dims[i] = last ? -1 : 0;
        any = true;
      }
      if (!any) continue;
      std::vector<Tensor> got;
      try {
        got = func::detail::vmap_flat(
            [&](const std::vector<Tensor>& x) { return call_op(o, x, s.attrs); },
            testing::clone_inputs(batched), in_dims, {0}, func::Randomness::Error, std::nullopt);
      } catch (const Error& e) {
        ADD_FAILURE() << "vmap threw: " << e.what();
        continue;
      }
      std::vector<std::vector<Tensor>> per_element;
      for (int64_t b = 0; b < kBatch; ++b) {
        std::vector<Tensor> args(inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i)
          args[i] = in_dims[i] ? batched[i].select(last ? batched[i].dim() - 1 : 0, b).clone()
                               : testing::clone_preserving_layout(inputs[i]);
        per_element.push_back(call_op(o, args, s.attrs));
      }
      ASSERT_EQ(got.size(), per_element[0].size());
      for (size_t k = 0; k < got.size(); ++k) {
        if (!per_element[0][k].defined()) continue;
        std::vector<Tensor> parts;
        for (auto& outs : per_element) parts.push_back(outs[k]);
        Tensor expected = stack(parts, 0);
        ASSERT_EQ(got[k].sizes(), expected.sizes()) << "output " << k;
        ASSERT_EQ(got[k].dtype(), expected.dtype()) << "output " << k;
        testing::expect_close(got[k], expected.to(kFloat64), {1e-12, 1e-10},
                              "output " + std::to_string(k));
        ++compared;
      }
    }
  }
  if (compared == 0) GTEST_SKIP() << o.name << ": no sample has a tensor input to batch";
}

TEST_P(OpTableFunc, JvpMatchesFiniteDifferences) {
  const OpDef& o = op();
  if (!o.differentiable() || o.is_inplace || o.is_random)
    GTEST_SKIP() << o.name << " is not differentiable out of place";
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  int64_t probes = 0;
  for (const OpSample& s : o.samples_(kFloat64)) {
    if (!s.check_grad) continue;
    SCOPED_TRACE(o.name + " " + s.desc);
    std::vector<Tensor> inputs = testing::clone_inputs(s.inputs);
    std::vector<size_t> diff;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined() && inputs[i].dtype() == kFloat64 &&
          !inputs[i].impl()->is_wrapped_number())
        diff.push_back(i);
    if (diff.empty()) continue;
    std::vector<Tensor> primals, tangents;
    for (size_t i : diff) {
      primals.push_back(inputs[i]);
      Tensor v = empty(inputs[i].sizes(), kFloat64);
      for (int64_t j = 0; j < v.numel(); ++j) v.data_ptr<double>()[j] = normal(rng);
      tangents.push_back(v);
    }
    auto f = [&](const std::vector<Tensor>& p) {
      std::vector<Tensor> args = inputs;
      for (size_t k = 0; k < diff.size(); ++k) args[diff[k]] = p[k];
      std::vector<Tensor> outs = call_op(o, args, s.attrs);
      std::vector<Tensor> floats;
      for (const Tensor& t : outs)
        if (t.defined() && is_floating_point(t.dtype())) floats.push_back(t);
      return floats;
    };
    func::detail::JvpResult r;
    if (!o.backward_differentiable) {
      // A fused backward without a backward: forward mode must fail naming the op.
      EXPECT_TRUE(testing::raises([&] { func::detail::jvp_flat("jvp", f, primals, tangents); },
                                  "jvp", "the backward of " + o.name + " is not differentiable"));
      ++probes;
      continue;
    }
    try {
      r = func::detail::jvp_flat("jvp", f, primals, tangents);
    } catch (const Error& e) {
      ADD_FAILURE() << "jvp threw: " << e.what();
      continue;
    }
    const double eps = 1e-6;
    auto shifted = [&](double sign) {
      std::vector<Tensor> p;
      for (size_t k = 0; k < primals.size(); ++k)
        p.push_back(primals[k].add(tangents[k], sign * eps));
      NoGradGuard no_grad;
      return f(p);
    };
    std::vector<Tensor> plus = shifted(1), minus = shifted(-1);
    ASSERT_EQ(r.tangents.size(), plus.size());
    for (size_t k = 0; k < plus.size(); ++k) {
      Tensor numeric = plus[k].sub(minus[k]).div(2 * eps);
      if (!numeric.isfinite().all().item<bool>()) continue;  // an empty reduction's -inf
      testing::expect_close(r.tangents[k], numeric, {1e-4, 1e-3}, "tangent " + std::to_string(k));
      probes += numeric.numel();
    }
  }
  if (probes == 0) GTEST_SKIP() << o.name << ": no sample checks gradients in float64";
}

INSTANTIATE_TEST_SUITE_P(Registry, OpTableFunc, ::testing::ValuesIn(op_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace kiln
