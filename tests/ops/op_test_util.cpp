#include "tests/ops/op_test_util.h"

#include "kiln/core/device_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "kiln/kiln.h"

namespace kiln::testing {

Tolerance tolerance(const OpDef& op, ScalarType dt) {
  Tolerance t{0, 0};
  switch (dt) {
    case kFloat64:
      t = {1e-9, 1e-7};
      break;
    case kFloat32:
      t = {1e-5, 1e-4};
      break;
    case kFloat16:
      t = {5e-3, 5e-3};
      break;
    case kBFloat16:
      t = {3e-2, 2e-2};
      break;
    default:
      t = {0, 0};
      break;
  }
  if (op.atol >= 0 && is_floating_point(dt)) t.atol = std::max(t.atol, op.atol);
  if (op.rtol >= 0 && is_floating_point(dt)) t.rtol = std::max(t.rtol, op.rtol);
  return t;
}

void expect_close(const Tensor& actual, const Tensor& expected, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << what << ": shape";
  Tensor a = actual.detach().to(kFloat64).contiguous();
  Tensor e = expected.detach();
  // Integer results follow C++ semantics: truncation toward zero, then wraparound.
  if (is_integral(actual.dtype(), true) && e.is_floating_point())
    e = actual.dtype() == kBool ? e.to(kBool) : e.to(kInt64).to(actual.dtype());
  e = e.to(kFloat64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  const int64_t n = a.numel();
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    double x = pa[i], y = pe[i];
    bool ok;
    if (std::isnan(y))
      ok = std::isnan(x);
    else if (std::isinf(y))
      ok = x == y;
    else
      ok = std::abs(x - y) <= tol.atol + tol.rtol * std::abs(y);
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << n
                    << " elements differ; first at flat index " << first << ": got "
                    << (first >= 0 ? pa[first] : 0) << ", expected " << (first >= 0 ? pe[first] : 0)
                    << " (atol " << tol.atol << ", rtol " << tol.rtol << ")";
}

Tensor clone_preserving_layout(const Tensor& t) {
  if (!t.defined()) return t;
  const TensorImpl& i = *t.impl();
  const Storage& src = i.storage();
  auto storage = std::make_shared<StorageImpl>(src->nbytes(), src->device());
  if (src->nbytes()) std::memcpy(storage->data(), src->data(), src->nbytes());
  Tensor c(std::make_shared<TensorImpl>(storage, i.dtype(), i.sym_sizes(), i.sym_strides(),
                                        i.sym_storage_offset()));
  c.impl()->set_wrapped_number(i.is_wrapped_number());
  return c;
}

const char* test_backend_path() {
  const char* moved = std::getenv("KILN_TEST_BACKEND_PATH");
  return moved ? moved : KILN_TEST_BACKEND_PATH;
}

Tensor to_device_preserving_layout(const Tensor& t, Device device) {
  if (!t.defined() || t.impl()->is_wrapped_number()) return clone_preserving_layout(t);
  const TensorImpl& i = *t.impl();
  const Storage& src = i.storage();
  auto storage = std::make_shared<StorageImpl>(src->nbytes(), device);
  require_device_backend(device.type(), "to_device_preserving_layout")
      .copy_bytes(storage->data(), storage->device(), src->data(), src->device(), src->nbytes());
  return Tensor(std::make_shared<TensorImpl>(storage, i.dtype(), i.sym_sizes(), i.sym_strides(),
                                             i.sym_storage_offset()));
}

std::vector<Tensor> clone_inputs(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const auto& t : inputs) out.push_back(clone_preserving_layout(t));
  return out;
}

Tensor meta_like(const Tensor& t) {
  if (!t.defined()) return t;
  const TensorImpl& i = *t.impl();
  Tensor m(std::make_shared<TensorImpl>(StorageImpl::meta(i.device()), i.dtype(), i.sym_sizes(),
                                        i.sym_strides(), i.sym_storage_offset()));
  m.impl()->set_wrapped_number(i.is_wrapped_number());
  return m;
}

::testing::AssertionResult raises(const std::function<void()>& f, const std::string& op,
                                  const std::string& expected) {
  std::string message;
  try {
    f();
    return ::testing::AssertionFailure() << "no error was thrown (expected one from " << op << ")";
  } catch (const Error& e) {
    message = e.what();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << "threw a std::exception, not a kiln::Error: " << e.what();
  }
  const std::string prefix = op + ": ";
  if (message.rfind(prefix, 0) != 0)
    return ::testing::AssertionFailure()
           << "message does not start with \"" << prefix << "\": " << message;
  if (message.find(expected) == std::string::npos)
    return ::testing::AssertionFailure()
           << "message does not contain \"" << expected << "\": " << message;
  return ::testing::AssertionSuccess();
}

std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

const std::set<std::string>& second_order_ops() {
  static const std::set<std::string> ops = {"add",
                                            "mul",
                                            "div",
                                            "exp",
                                            "log",
                                            "tanh",
                                            "sigmoid",
                                            "pow",
                                            "sin",
                                            "sqrt",
                                            "sum",
                                            "mean",
                                            "prod",
                                            "softmax",
                                            "log_softmax",
                                            "logsumexp",
                                            "matmul",
                                            "mm",
                                            "bmm",
                                            "view",
                                            "expand",
                                            "permute",
                                            "slice",
                                            "cat",
                                            "var",
                                            "norm",
                                            "gelu",
                                            "silu",
                                            "softplus",
                                            "where",
                                            "maximum",
                                            "addmm",
                                            "linear",
                                            "clone",
                                            "select",
                                            "index_select",
                                            "cumsum",
                                            "layer_norm",
                                            "rms_norm",
                                            "layer_norm_backward",
                                            "rms_norm_backward"};
  return ops;
}

namespace {

// Element j (in logical row-major order) of a float64 tensor, by reference.
double& element(const Tensor& t, int64_t j) {
  double* base = static_cast<double*>(t.data_ptr());
  int64_t off = 0, rem = j;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    int64_t n = t.size(d);
    off += (rem % n) * t.stride(d);
    rem /= n;
  }
  return base[off];
}

struct Problem {
  const OpDef& op;
  const OpSample& sample;
  std::vector<size_t> diff;  // indices of differentiable inputs
  // One per float output: the incoming gradient. In the second-order check it is an input too,
  // so that the backward formula's derivative in its incoming gradient is checked (which is all
  // there is for linear ops), as PyTorch's gradgradcheck does.
  std::vector<Tensor> projections;
  std::vector<Tensor> grad_weights;  // second order: weights on the first-order grads
  bool second_order = false;

  std::vector<Tensor> run(const std::vector<Tensor>& in) const {
    std::vector<Tensor> a = in;
    if (op.is_inplace) a[0] = a[0].clone();
    return call_op(op, a, sample.attrs);
  }
  // Scalar objective: sum_k <out_k, v_k>.
  Tensor loss(const std::vector<Tensor>& in) {
    std::vector<Tensor> outs = run(in);
    bool init = projections.empty();
    Tensor total;
    size_t f = 0;
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].is_floating_point()) continue;
      if (init) projections.push_back(random_like(outs[k], 100 + k).requires_grad_(second_order));
      Tensor term = (outs[k] * projections.at(f++)).sum();
      total = total.defined() ? total + term : term;
    }
    return total;
  }
  // Second-order objective: sum_i <d loss / d in_i, w_i>, differentiable when grads have graphs.
  Tensor grad_loss(const std::vector<Tensor>& in, bool create_graph) {
    Tensor l = loss(in);
    std::vector<Tensor> xs;
    for (size_t i : diff) xs.push_back(in[i]);
    auto g = autograd::grad({l}, xs, {}, true, create_graph, true);
    bool init = grad_weights.empty();
    Tensor total = zeros({}, kFloat64);
    for (size_t i = 0; i < g.size(); ++i) {
      if (init) grad_weights.push_back(random_like(xs[i], 200 + i));
      if (g[i].defined()) total = total + (g[i] * grad_weights[i]).sum();
    }
    return total;
  }
  static Tensor random_like(const Tensor& t, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    Tensor r = empty(t.sym_sizes(), kFloat64);
    double* p = r.data_ptr<double>();
    for (int64_t i = 0; i < r.numel(); ++i) p[i] = u(rng);
    return r;
  }
};

}  // namespace

int64_t gradcheck(const OpDef& op, const OpSample& sample, bool second_order) {
  Problem p{op, sample, {}, {}, {}, second_order};
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < sample.inputs.size(); ++i) {
    Tensor t = clone_preserving_layout(sample.inputs[i]);
    if (t.defined() && t.dtype() == kFloat64 && !t.impl()->is_wrapped_number()) {
      t.requires_grad_(true);
      p.diff.push_back(i);
    }
    inputs.push_back(t);
  }
  if (p.diff.empty()) return 0;
  auto objective = [&](bool create_graph) {
    return second_order ? p.grad_loss(inputs, create_graph) : p.loss(inputs);
  };
  Tensor l = objective(second_order);
  if (!l.defined() || !l.requires_grad()) return 0;
  std::vector<Tensor> xs;
  std::vector<std::string> names;
  for (size_t i : p.diff) {
    xs.push_back(inputs[i]);
    names.push_back("input " + std::to_string(i));
  }
  if (second_order)
    for (size_t k = 0; k < p.projections.size(); ++k) {
      xs.push_back(p.projections[k]);
      names.push_back("the gradient of output " + std::to_string(k));
    }
  std::vector<Tensor> analytic = autograd::grad({l}, xs, {}, false, false, true);

  const double eps = 1e-6;
  int64_t probes = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor& x = xs[k];
    const int64_t n = x.numel();
    const int64_t step = std::max<int64_t>(1, n / 40);  // at most ~40 probes per input
    Tensor a = analytic[k].defined() ? analytic[k].contiguous() : zeros_like(x);
    for (int64_t j = 0; j < n; j += step) {
      double& v = element(x, j);
      const double orig = v;
      double plus, minus;
      {
        v = orig + eps;
        plus = objective(false).item<double>();
        v = orig - eps;
        minus = objective(false).item<double>();
        v = orig;
      }
      const double numeric = (plus - minus) / (2 * eps);
      const double got = a.data_ptr<double>()[j];
      EXPECT_NEAR(got, numeric, 1e-4 + 1e-3 * std::abs(numeric))
          << op.name << (second_order ? " (second order)" : "") << ": d/d " << names[k]
          << " at element " << j;
      ++probes;
    }
  }
  return probes;
}

}  // namespace kiln::testing
