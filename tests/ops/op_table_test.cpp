// The op-table suites: every registry entry is checked against its float64 reference, its
// gradients against finite differences (float64), its meta function against eager, over the
// entry's samples (non-contiguous, broadcast, 0-dim and zero-size inputs) and dtypes, and its
// error samples against the message convention.
// Adding an op to the registry adds it here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "kiln/core/device_backend.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpDef* op : all_ops()) names.push_back(op->name);
  return names;
}

class OpTable : public ::testing::TestWithParam<std::string> {
 protected:
  const OpDef& op() const { return get_op(GetParam()); }
};

std::vector<ScalarType> test_dtypes(const OpDef& op) {
  if (!op.dtypes_.empty()) return op.dtypes_;
  return {kFloat64, kFloat32};
}

TEST_P(OpTable, HasSamples) {
  ASSERT_TRUE(op().meta_) << op().name << " has no meta function";
  ASSERT_TRUE(op().samples_) << op().name << " has no samples";
  EXPECT_FALSE(op().samples_(test_dtypes(op())[0]).empty());
}

TEST_P(OpTable, MatchesReference) {
  const OpDef& o = op();
  if (!o.reference_)
    GTEST_SKIP() << o.name << " is random or has no closed form (checked elsewhere)";
  for (ScalarType dt : test_dtypes(o)) {
    for (const OpSample& s : o.samples_(dt)) {
      SCOPED_TRACE(o.name + " [" + std::string(dtype_name(dt)) + "] " + s.desc);
      std::vector<Tensor> inputs = testing::clone_inputs(s.inputs);
      std::vector<Tensor> outs = call_op(o, inputs, s.attrs);
      std::vector<Tensor> refs = o.reference_(testing::clone_inputs(s.inputs), s.attrs);
      ASSERT_EQ(outs.size() >= refs.size(), true);
      for (size_t i = 0; i < refs.size(); ++i) {
        testing::expect_close(outs[i], refs[i], testing::tolerance(o, outs[i].dtype()),
                              "output " + std::to_string(i));
      }
    }
  }
}

TEST_P(OpTable, MetaAgreesWithEager) {
  const OpDef& o = op();
  for (ScalarType dt : test_dtypes(o)) {
    for (const OpSample& s : o.samples_(dt)) {
      SCOPED_TRACE(o.name + " [" + std::string(dtype_name(dt)) + "] " + s.desc);
      if (o.dynamic_output) continue;
      std::vector<Tensor> meta_in;
      for (const auto& t : s.inputs) meta_in.push_back(testing::meta_like(t));
      std::vector<Tensor> eager = call_op(o, testing::clone_inputs(s.inputs), s.attrs);
      std::vector<Tensor> meta;
      {
        ModeGuard g(std::make_shared<MetaMode>());
        meta = call_op(o, meta_in, s.attrs);
      }
      ASSERT_EQ(meta.size(), eager.size());
      for (size_t i = 0; i < meta.size(); ++i) {
        EXPECT_TRUE(meta[i].is_meta());
        EXPECT_EQ(meta[i].sizes().vec(), eager[i].sizes().vec());
        EXPECT_EQ(meta[i].dtype(), eager[i].dtype());
        if (!o.is_inplace) {
          EXPECT_EQ(meta[i].strides().vec(), eager[i].strides().vec());
        }
      }
    }
  }
}

// kiln::compile captures each sample's call, with static and with symbolic sizes, and its
// replays match eager. Random ops and ops whose output sizes depend on values run eagerly (their
// fallback is tested in tests/compile); the rest must capture as one graph.
// Pointwise ops also run in float32, where the generated kernels take their vector path.
TEST_P(OpTable, CompiledMatchesEager) {
  const OpDef& o = op();
  std::vector<ScalarType> dtypes{test_dtypes(o).back()};
  const auto& all = test_dtypes(o);
  if (o.lowering_.kind == lowering::Lowering::Kind::Pointwise && dtypes[0] != kFloat32 &&
      std::find(all.begin(), all.end(), kFloat32) != all.end())
    dtypes.push_back(kFloat32);
  const bool captures = !o.is_random && !o.dynamic_output;
  const bool has_values = !o.is_random && o.name != "empty";  // empty's memory is uninitialised
  for (ScalarType dt : dtypes)
    for (bool dynamic : {false, true}) {
      for (const OpSample& s : o.samples_(dt)) {
        SCOPED_TRACE(o.name + " [" + std::string(dtype_name(dt)) + "] " + s.desc +
                     (dynamic ? " (dynamic)" : " (static)"));
        auto f = compile([&](std::vector<Tensor> in) { return call_op(o, std::move(in), s.attrs); },
                         CompileOptions().dynamic(dynamic).fullgraph(captures));
        for (int call = 0; call < 2; ++call) {  // the capture, then a replay
          std::vector<Tensor> compiled = f(testing::clone_inputs(s.inputs));
          std::vector<Tensor> eager = call_op(o, testing::clone_inputs(s.inputs), s.attrs);
          ASSERT_EQ(compiled.size(), eager.size());
          for (size_t i = 0; i < eager.size(); ++i) {
            if (!eager[i].defined()) continue;
            ASSERT_EQ(compiled[i].sizes().vec(), eager[i].sizes().vec()) << "output " << i;
            ASSERT_EQ(compiled[i].dtype(), eager[i].dtype()) << "output " << i;
            if (has_values)
              testing::expect_close(compiled[i], eager[i], testing::tolerance(o, eager[i].dtype()),
                                    "output " + std::to_string(i));
          }
        }
        EXPECT_EQ(f.compilations(), captures ? 1 : 0);
      }
    }
}

// A loss that reaches every output that requires grad, each weighted differently.
Tensor weighted_sum(const std::vector<Tensor>& outs) {
  Tensor loss;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].defined() || !outs[i].requires_grad()) continue;
    Tensor term = (outs[i] * (1.0 + 0.5 * static_cast<double>(i))).sum().cpu();
    loss = loss.defined() ? loss + term : term;
  }
  return loss;
}

// Every sample on `device` (inputs copied there with their layouts) against the same call on the
// CPU: outputs, what in-place ops wrote, and for float64 samples the gradients of a weighted sum
// of the outputs. Ops without a kernel for the device take the CPU fallback, so the table covers
// them too, and backward formulas must make their tensors on the right device.
void expect_device_matches_cpu(const OpDef& o, Device device) {
  const bool has_values = o.name != "empty" && o.name != "empty_like";
  auto sparse = [](const Tensor& t) {
    return t.defined() && t.impl()->layout() != Layout::Strided;
  };
  for (ScalarType dt : test_dtypes(o)) {
    for (const OpSample& s : o.samples_(dt)) {
      SCOPED_TRACE(o.name + " [" + std::string(dtype_name(dt)) + "] " + s.desc);
      if (std::any_of(s.inputs.begin(), s.inputs.end(), sparse))
        GTEST_SKIP() << "sparse CSR tensors are not supported on devices other than the CPU yet";
      std::vector<Tensor> in_cpu = testing::clone_inputs(s.inputs), in_dev;
      for (const Tensor& t : s.inputs)
        in_dev.push_back(testing::to_device_preserving_layout(t, device));
      const bool grads = dt == kFloat64 && o.differentiable() && s.check_grad && !o.is_inplace;
      for (auto* list : {&in_cpu, &in_dev})
        for (Tensor& t : *list)
          if (grads && t.defined() && t.is_floating_point()) t.requires_grad_(true);
      manual_seed(0);
      std::vector<Tensor> out_cpu = call_op(o, in_cpu, s.attrs);
      manual_seed(0);
      std::vector<Tensor> out_dev = call_op(o, in_dev, s.attrs);
      ASSERT_EQ(out_cpu.size(), out_dev.size());
      for (size_t i = 0; i < out_cpu.size(); ++i) {
        if (!out_cpu[i].defined()) continue;
        ASSERT_EQ(out_dev[i].sizes().vec(), out_cpu[i].sizes().vec()) << "output " << i;
        ASSERT_EQ(out_dev[i].dtype(), out_cpu[i].dtype()) << "output " << i;
        if (has_values)
          testing::expect_close(out_dev[i].detach().cpu(), out_cpu[i].detach().to(kFloat64),
                                testing::tolerance(o, out_cpu[i].dtype()),
                                "output " + std::to_string(i));
      }
      if (o.is_inplace)
        testing::expect_close(in_dev[0].cpu(), in_cpu[0].to(kFloat64), testing::tolerance(o, dt),
                              "the tensor written in place");
      if (!grads) continue;
      Tensor loss_cpu = weighted_sum(out_cpu), loss_dev = weighted_sum(out_dev);
      if (!loss_cpu.defined()) continue;
      loss_cpu.backward();
      loss_dev.backward();
      for (size_t k = 0; k < in_cpu.size(); ++k) {
        if (!in_cpu[k].defined() || !in_cpu[k].grad().defined()) continue;
        ASSERT_TRUE(in_dev[k].grad().defined()) << "input " << k;
        EXPECT_EQ(in_dev[k].grad().device(), in_dev[k].device()) << "input " << k;
        testing::expect_close(in_dev[k].grad().cpu(), in_cpu[k].grad(),
                              testing::tolerance(o, kFloat64), "gradient " + std::to_string(k));
      }
    }
  }
}

// With inputs that require grad, kiln::compile makes a training graph of each float64 sample's
// call (the forward and the backward formulas, compiled): its gradients match eager autograd's,
// and they come from the compiled backward, not from a replay on the eager kernels. The ops whose
// backward reads values (sparse tensors' indices) or makes a size that depends on them
// (masked_scatter's masked_select) replay on the eager kernels instead, with a logged reason.
TEST_P(OpTable, CompiledGradientsMatchEager) {
  const OpDef& o = op();
  static const std::set<std::string> kBackwardReadsValues = {"masked_scatter", "sparse_csr_mm",
                                                             "sparse_csr_to_dense"};
  if (!o.differentiable() || o.is_inplace || o.is_random || o.dynamic_output)
    GTEST_SKIP() << o.name << " makes no training graph";
  for (const OpSample& s : o.samples_(kFloat64)) {
    SCOPED_TRACE(o.name + " " + s.desc);
    if (!s.check_grad) continue;
    std::vector<Tensor> compiled_in = testing::clone_inputs(s.inputs),
                        eager_in = testing::clone_inputs(s.inputs);
    for (auto* list : {&compiled_in, &eager_in})
      for (Tensor& t : *list)
        if (t.defined() && t.is_floating_point()) t.requires_grad_(true);
    auto f = compile([&](std::vector<Tensor> in) { return call_op(o, std::move(in), s.attrs); });
    const std::vector<Tensor> compiled_out = f(compiled_in);
    const Tensor compiled_loss = weighted_sum(compiled_out),
                 eager_loss = weighted_sum(call_op(o, eager_in, s.attrs));
    if (!eager_loss.defined()) continue;
    ASSERT_TRUE(compiled_loss.defined());
    for (const Tensor& out : compiled_out)
      if (out.defined() && out.requires_grad() && !kBackwardReadsValues.count(o.name))
        EXPECT_EQ(out.grad_fn()->name(), "CompiledFunctionBackward");
    compiled_loss.backward();
    eager_loss.backward();
    for (size_t k = 0; k < eager_in.size(); ++k) {
      if (!eager_in[k].defined() || !eager_in[k].is_floating_point()) continue;
      ASSERT_EQ(compiled_in[k].grad().defined(), eager_in[k].grad().defined()) << "input " << k;
      if (eager_in[k].grad().defined())
        testing::expect_close(compiled_in[k].grad(), eager_in[k].grad(),
                              testing::tolerance(o, kFloat64), "gradient " + std::to_string(k));
    }
  }
}

TEST_P(OpTable, CudaMatchesCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device (kiln::cuda::is_available() is false)";
  expect_device_matches_cpu(op(), Device(kCUDA, 0));
}

// The same on the kilntest backend (tests/device_backend), on any machine: its memory is host
// memory, so a CPU kernel handed a device tensor would still run; it checks the core's device
// handling (kernel choice, the fallback, gradients' devices), not kernels.
TEST_P(OpTable, TestDeviceMatchesCpu) {
  if (!device_backend(kPrivateUse1)) load_device_backend(testing::test_backend_path());
  expect_device_matches_cpu(op(), Device(kPrivateUse1, 1));
}

TEST_P(OpTable, GradientsMatchFiniteDifferences) {
  const OpDef& o = op();
  if (!o.differentiable()) GTEST_SKIP() << o.name << " has no backward";
  int64_t probes = 0, eligible = 0;
  for (const OpSample& s : o.samples_(kFloat64)) {
    SCOPED_TRACE(o.name + " " + s.desc);
    if (!s.check_grad) continue;
    ++eligible;
    probes += testing::gradcheck(o, s, /*second_order=*/false);
  }
  // Samples opt out where finite differences cannot work (random ops; ctc_loss, whose gradient
  // is PyTorch's formula for normalised inputs): those ops' gradients are checked in their own
  // tests. Otherwise a check that compared nothing (no float64 input, a loss that needed no
  // gradient) is a failure, not a pass.
  if (eligible == 0) GTEST_SKIP() << o.name << ": every sample opts out of finite differences";
  EXPECT_GT(probes, 0) << o.name << ": the gradient check compared no element (" << eligible
                       << " samples with check_grad)";
}

TEST_P(OpTable, SecondOrderGradients) {
  const OpDef& o = op();
  if (!o.differentiable() || !testing::second_order_ops().count(o.name))
    GTEST_SKIP() << "second-order checks run for a representative set of ops";
  for (const OpSample& s : o.samples_(kFloat64)) {
    SCOPED_TRACE(o.name + " " + s.desc);
    if (!s.check_grad) continue;
    EXPECT_GT(testing::gradcheck(o, s, /*second_order=*/true), 0)
        << o.name << ": the second-order check compared no element";
    break;
  }
}

// Each error sample throws a kiln::Error that names the op first and shows the offending
// values; under MetaMode too where the meta function checks it (the compiler relies on that).
TEST_P(OpTable, ErrorsNameTheOpAndTheirInputs) {
  const OpDef& o = op();
  if (!o.error_samples_) GTEST_SKIP() << o.name << " has no error samples";
  for (const OpErrorSample& s : o.error_samples_()) {
    SCOPED_TRACE(o.name + " " + s.desc);
    EXPECT_TRUE(testing::raises([&] { call_op(o, s.inputs, s.attrs); }, o.name, s.expected));
    if (!s.in_meta) continue;
    std::vector<Tensor> meta_in;
    for (const auto& t : s.inputs) meta_in.push_back(testing::meta_like(t));
    ModeGuard g(std::make_shared<MetaMode>());
    EXPECT_TRUE(testing::raises([&] { call_op(o, meta_in, s.attrs); }, o.name, s.expected))
        << "under MetaMode";
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, OpTable, ::testing::ValuesIn(op_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace kiln
