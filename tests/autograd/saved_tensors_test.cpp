// What autograd saves for each registry op: exactly what its backward formula reads, so that
// in-place changes to anything else after the op are legal (as in PyTorch, whose
// derivatives.yaml makes the same choice) and in-place changes to what it does read are errors.
// Adding an op to the registry adds it here.
#include <gtest/gtest.h>

#include <random>

#include "kiln/kiln.h"
#include "kiln/ops/registry.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

std::vector<std::string> differentiable_ops() {
  std::vector<std::string> names;
  for (const OpDef* op : all_ops())
    if (op->differentiable()) names.push_back(op->name);
  return names;
}

bool differentiable_input(const Tensor& t) {
  return t.defined() && t.dtype() == kFloat64 && !t.impl()->is_wrapped_number();
}

Tensor random_like(const Tensor& t, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor r = empty(t.sizes(), kFloat64);
  double* p = r.data_ptr<double>();
  for (int64_t i = 0; i < r.numel(); ++i) p[i] = u(rng);
  return r;
}

class SavedTensors : public ::testing::TestWithParam<std::string> {
 protected:
  const OpDef& op() const { return get_op(GetParam()); }
};

// The formula, called directly with every input and output at hand, asks for exactly the ones
// the op declares it saves (metadata-only savers may ask for inputs for their shapes).
TEST_P(SavedTensors, BackwardReadsExactlyWhatTheOpSaves) {
  const OpDef& o = op();
  if (o.is_inplace) GTEST_SKIP() << "in-place variants share their base op's formula";
  uint64_t inputs_read = 0, outputs_read = 0;
  size_t num_inputs = 0, num_outputs = 0;
  for (const OpSample& s : o.samples_(kFloat64)) {
    SCOPED_TRACE(o.name + " " + s.desc);
    NoGradGuard no_grad;
    std::vector<Tensor> inputs = testing::clone_inputs(s.inputs);
    std::vector<Tensor> outputs = call_op(o, testing::clone_inputs(s.inputs), s.attrs);
    std::vector<Tensor> grads;
    for (size_t k = 0; k < outputs.size(); ++k)
      grads.push_back(outputs[k].is_floating_point() ? random_like(outputs[k], 7 + k) : Tensor());
    std::vector<bool> needs;
    for (const Tensor& t : inputs) needs.push_back(differentiable_input(t));
    BackwardContext ctx{grads, inputs, outputs, s.attrs, needs};
    try {
      o.backward_(ctx);
    } catch (const Error&) {
      continue;  // a call the op does not differentiate (scatter with reduce, as PyTorch)
    }
    inputs_read |= ctx.inputs_read;
    outputs_read |= ctx.outputs_read;
    num_inputs = std::max(num_inputs, inputs.size());
    num_outputs = std::max(num_outputs, outputs.size());
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    const bool read = inputs_read >> i & 1;
    EXPECT_FALSE(read && !o.saves_input(i)) << o.name << " reads input " << i << " unsaved";
    EXPECT_FALSE(!read && o.saves_input(i) && !o.saves_input_metadata(i))
        << o.name << " saves input " << i << " that its backward never reads";
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    const bool read = outputs_read >> i & 1;
    EXPECT_FALSE(read && !o.saves_output(i)) << o.name << " reads output " << i << " unsaved";
    EXPECT_FALSE(!read && o.saves_output(i))
        << o.name << " saves output " << i << " that its backward never reads";
  }
}

// Gradients of sum_k <out_k, v_k> with respect to the differentiable inputs, after `mutate` has
// run on the forward's inputs and outputs (in place, recorded by autograd).
using Mutation = std::function<void(std::vector<Tensor>& inputs, std::vector<Tensor>& outputs)>;

std::vector<Tensor> gradients(const OpDef& o, const OpSample& s, size_t nonleaf_input,
                              const Mutation& mutate) {
  std::vector<Tensor> leaves, inputs;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    Tensor t = testing::clone_preserving_layout(s.inputs[i]);
    if (differentiable_input(t)) {
      t.requires_grad_(true);
      leaves.push_back(t);
      if (i == nonleaf_input) t = t + 0.0;  // a leaf cannot be modified in place
    }
    inputs.push_back(t);
  }
  std::vector<Tensor> outputs = call_op(o, inputs, s.attrs);
  mutate(inputs, outputs);
  std::vector<Tensor> roots, seeds;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].requires_grad()) continue;
    roots.push_back(outputs[k]);
    seeds.push_back(random_like(outputs[k], 100 + k));
  }
  if (roots.empty()) return {};
  return autograd::grad(roots, leaves, seeds, false, false, /*allow_unused=*/true);
}

void expect_same_gradients(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                           const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].defined(), want[i].defined()) << what << ", gradient " << i;
    if (got[i].defined())
      testing::expect_close(got[i], want[i], {1e-12, 1e-12},
                            what + ", gradient " + std::to_string(i));
  }
}

void add_half(Tensor& t) { t.add_(0.5); }

// Modifying an output or an input in place after the op leaves the gradients unchanged when
// the backward does not read it, and is reported when it does.
TEST_P(SavedTensors, InPlaceChangesAfterTheOp) {
  const OpDef& o = op();
  if (o.is_inplace || o.is_view || o.is_random)
    GTEST_SKIP() << o.name << " aliases its input or is random";
  const std::string modified = "modified by an inplace operation";
  for (const OpSample& s : o.samples_(kFloat64)) {
    SCOPED_TRACE(o.name + " " + s.desc);
    if (!s.check_grad) continue;
    const auto none = [](std::vector<Tensor>&, std::vector<Tensor>&) {};
    const std::vector<Tensor> want = gradients(o, s, SIZE_MAX, none);
    if (want.empty()) continue;  // nothing differentiable in this sample
    std::vector<Tensor> plain;
    {
      NoGradGuard no_grad;
      plain = call_op(o, testing::clone_inputs(s.inputs), s.attrs);
    }
    for (size_t k = 0; k < plain.size(); ++k) {
      if (!plain[k].is_floating_point()) continue;  // indices: not differentiable
      auto change_output = [k](std::vector<Tensor>&, std::vector<Tensor>& out) {
        add_half(out[k]);
      };
      const std::string what = o.name + ": output " + std::to_string(k) + " changed in place";
      if (o.saves_output(k)) {
        EXPECT_TRUE(testing::error_message([&] {
                      gradients(o, s, SIZE_MAX, change_output);
                    }).find(modified) != std::string::npos)
            << what;
      } else {
        expect_same_gradients(gradients(o, s, SIZE_MAX, change_output), want, what);
      }
    }
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      if (!differentiable_input(s.inputs[i])) continue;
      auto change_input = [i](std::vector<Tensor>& in, std::vector<Tensor>&) { add_half(in[i]); };
      const std::string what = o.name + ": input " + std::to_string(i) + " changed in place";
      if (o.saves_input(i) && !o.saves_input_metadata(i)) {
        EXPECT_TRUE(testing::error_message([&] {
                      gradients(o, s, i, change_input);
                    }).find(modified) != std::string::npos)
            << what;
      } else {
        expect_same_gradients(gradients(o, s, i, change_input), want, what);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, SavedTensors, ::testing::ValuesIn(differentiable_ops()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// The ResNet block: conv -> batch_norm -> `out += residual` -> relu_ -> backward.
TEST(SavedTensorsResNet, ResidualAddedInPlaceAfterBatchNorm) {
  auto run = [](bool in_place) {
    manual_seed(0);
    Tensor x = randn({2, 3, 5, 5}, kFloat64).requires_grad_(true);
    Tensor w = randn({3, 3, 3, 3}, kFloat64).requires_grad_(true);
    Tensor gamma = randn({3}, kFloat64).requires_grad_(true);
    Tensor beta = randn({3}, kFloat64).requires_grad_(true);
    Tensor running_mean = zeros({3}, kFloat64), running_var = ones({3}, kFloat64);
    Tensor out = conv2d(x, w, {}, 1, 1);
    out = batch_norm(out, gamma, beta, running_mean, running_var, true, 0.1, 1e-5);
    if (in_place) {
      out += x;
      out.relu_();
    } else {
      out = relu(out + x);
    }
    (out * out).sum().backward();
    return std::vector<Tensor>{x.grad(), w.grad(), gamma.grad(), beta.grad()};
  };
  const std::vector<Tensor> in_place = run(true), functional = run(false);
  for (size_t i = 0; i < in_place.size(); ++i) {
    ASSERT_TRUE(in_place[i].defined());
    testing::expect_close(in_place[i], functional[i], {1e-12, 1e-12},
                          "gradient " + std::to_string(i));
    EXPECT_GT(in_place[i].abs().sum().item<double>(), 0.0);
  }
}

// The output of exp is what its backward reads: changing it in place is reported.
TEST(SavedTensorsResNet, ChangingWhatTheBackwardReadsIsReported) {
  Tensor x = randn({4}, kFloat64).requires_grad_(true);
  Tensor y = exp(x);
  y.add_(1.0);
  EXPECT_NE(testing::error_message([&] { y.sum().backward(); }).find("ExpBackward0"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
