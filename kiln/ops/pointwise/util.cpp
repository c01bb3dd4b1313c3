#include "kiln/ops/pointwise/util.h"

#include "kiln/ops/inplace.h"
#include "kiln/ops/ops.h"

namespace kiln::pointwise {

void check_nonzero_divisor(const char* op, const Tensor& divisor) {
  if (!is_integral(divisor.dtype(), /*include_bool=*/true)) return;
  Tensor d = divisor.contiguous();
  const int64_t n = d.sym_numel().guard_int();
  bool zero = false;
  cpu::visit_integral(d.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* p = d.data_ptr<T>();
    for (int64_t i = 0; i < n && !zero; ++i) zero = p[i] == T(0);
  });
  KILN_CHECK(!zero, op, ": ZeroDivisionError (integer division by zero)");
}

ReferenceFn reference_fn(ElementFn f) {
  return [f](const std::vector<Tensor>& in, const Attrs& attrs) {
    std::vector<SymShape> shapes;
    for (const auto& t : in)
      if (t.defined()) shapes.push_back(t.sym_sizes());
    SymShape shape = meta::broadcast_shapes("reference", shapes);
    std::vector<Tensor> dense;
    for (const auto& t : in)
      if (t.defined()) dense.push_back(t.to(kFloat64).expand(shape).contiguous());
    Tensor out = empty(shape, kFloat64);
    double* o = out.data_ptr<double>();
    const int64_t n = out.sym_numel().guard_int();
    std::vector<double> values(dense.size());
    for (int64_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < dense.size(); ++k) values[k] = dense[k].data_ptr<double>()[i];
      o[i] = f(values.data(), attrs);
    }
    return std::vector<Tensor>{out};
  };
}

ReferenceFn reference(double (*f)(double)) {
  return reference_fn([f](const double* v, const Attrs&) { return f(v[0]); });
}
ReferenceFn reference(double (*f)(double, double)) {
  return reference_fn([f](const double* v, const Attrs&) { return f(v[0], v[1]); });
}
ReferenceFn reference(double (*f)(double, double, double)) {
  return reference_fn([f](const double* v, const Attrs&) { return f(v[0], v[1], v[2]); });
}

std::vector<OpSample> binary_samples(ScalarType dt, double low, double high, double low2,
                                     double high2) {
  auto s = samples::binary(dt, low, high, low2, high2);
  const double v = low2 + 0.7 * (high2 - low2);
  Scalar number = is_floating_point(dt) ? Scalar(v) : Scalar(static_cast<int64_t>(std::floor(v)));
  s.push_back({{samples::make({3, 4}, dt, low, high), wrapped_scalar(number)}, {}, "number other"});
  return s;
}

OpErrorSample broadcast_error(size_t n, const Attrs& attrs) {
  std::vector<Tensor> in{samples::make({2, 3}, kFloat32)};
  for (size_t k = 1; k < n; ++k) in.push_back(samples::make({4}, kFloat32));
  return {in, attrs, "the size 3 must match the size 4 at non-singleton dimension 1",
          "operands that do not broadcast"};
}

OpErrorSample dtype_error(size_t n, ScalarType unsupported, const Attrs& attrs) {
  std::vector<Tensor> in;
  // Ones: a divisor the kernel checks for zeros first passes.
  for (size_t k = 0; k < n; ++k) in.push_back(ones({2, 3}, unsupported));
  return {in, attrs, detail::str_cat("not supported for dtype ", unsupported),
          detail::str_cat(dtype_name(unsupported), " operands"), /*in_meta=*/false};
}

ErrorSampleFn errors(size_t n, ScalarType unsupported, const Attrs& attrs) {
  return [n, unsupported, attrs] {
    std::vector<OpErrorSample> s;
    if (n > 1) s.push_back(broadcast_error(n, attrs));
    if (unsupported != ScalarType::Undefined) s.push_back(dtype_error(n, unsupported, attrs));
    return s;
  };
}

std::vector<OpSample> with_attrs(std::vector<OpSample> samples, const Attrs& attrs) {
  for (auto& s : samples) s.attrs = attrs;
  return samples;
}

std::vector<OpSample> nonzero_input(std::vector<OpSample> samples, size_t k) {
  for (auto& s : samples) {
    Tensor& t = s.inputs.at(k);
    const double step = t.is_floating_point() ? 0.5 : 1;
    Tensor v = t.to(kFloat64).contiguous();
    double* p = v.data_ptr<double>();
    for (int64_t i = 0; i < v.sym_numel().guard_int(); ++i)
      p[i] = p[i] >= 0 ? p[i] + step : p[i] - step;
    t.copy_(v);
  }
  return samples;
}

bool register_inplace(std::initializer_list<const char*> names) {
  return kiln::register_inplace(names, InplaceKind::Elementwise);
}

}  // namespace kiln::pointwise
