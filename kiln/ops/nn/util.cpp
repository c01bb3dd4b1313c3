#include "kiln/ops/nn/util.h"

#include "kiln/autograd/grad_mode.h"
#include "kiln/backend/cpu/copy.h"
#include "kiln/ops/ops.h"

namespace kiln::nn_util {

const std::vector<ScalarType> kNNDtypes{kFloat64, kFloat32, kBFloat16};

std::vector<double> to_doubles(const Tensor& t) {
  Tensor c = empty(t.sym_sizes(), TensorOptions(kFloat64));
  cpu::copy(c, t);
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.sym_numel().guard_int());
}

std::vector<int64_t> to_ints(const Tensor& t) {
  Tensor c = empty(t.sym_sizes(), TensorOptions(kInt64));
  cpu::copy(c, t);
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.sym_numel().guard_int());
}

Tensor from_doubles(const std::vector<double>& v, std::vector<int64_t> shape) {
  Tensor t = empty(SymIntList(shape), TensorOptions(kFloat64));
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}

std::vector<int64_t> concrete_sizes(const Tensor& t) {
  std::vector<int64_t> s;
  for (const SymInt& d : t.sym_sizes()) s.push_back(d.guard_int());
  return s;
}

int64_t reduction_attr(Reduction r) { return static_cast<int64_t>(r); }

Reduction reduction_of(const char* op, int64_t v) {
  KILN_CHECK(v >= 0 && v <= 2, op, ": reduction ", v, " is not one of none (0), mean (1), sum (2)");
  return static_cast<Reduction>(v);
}

void check_class_index(int64_t t, int64_t classes, int64_t ignore_index) {
  KILN_CHECK(t == ignore_index || (t >= 0 && t < classes), "nll_loss: Target ", t,
             " is out of bounds for ", classes, " classes (expected a class index in [0, ", classes,
             ") or ignore_index ", ignore_index, ")");
}

Tensor apply_reduction(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::Mean:
      return loss.mean();
    case Reduction::Sum:
      return loss.sum();
    case Reduction::None:
      break;
  }
  return loss;
}

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
    case Reduction::None:
      break;
  }
  return "none";
}

Tensor as_compute(const Tensor& t) {
  const ScalarType want = t.dtype() == kFloat64 ? kFloat64 : kFloat32;
  if (t.dtype() == want && t.is_contiguous()) return t;
  Tensor c = empty(t.sym_sizes(), TensorOptions(want));
  cpu::copy(c, t);
  return c;
}

void store(const Tensor& out, const Tensor& computed) {
  if (out.is_same(computed)) return;
  if (out.is_cpu() && computed.is_cpu()) {
    cpu::copy(out, computed);
  } else {  // a device kernel written with Kiln ops (attention::math_kernel)
    NoGradGuard no_grad;
    out.copy_(computed);
  }
}

}  // namespace kiln::nn_util
