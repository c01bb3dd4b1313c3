// dot and outer: the vector-product entries.
#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/linalg/util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

const std::vector<ScalarType> kVectorDtypes = {kFloat64, kFloat32, kBFloat16,
                                               kFloat16, kInt64,   kInt32};

std::vector<TensorSpec> dot_meta(const std::vector<Tensor>& in, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  KILN_CHECK(a.dim() == 1 && b.dim() == 1, "dot: 1D tensors expected, but got ", a.dim(), "D and ",
             b.dim(), "D tensors of shapes ", a.sym_sizes(), " and ", b.sym_sizes());
  linalg::check_same_dtype("dot", "self", a, "other", b);
  KILN_CHECK(a.dtype() != kBool, "dot: not supported for dtype bool");
  KILN_CHECK(a.sym_size(0) == b.sym_size(0), "dot: inconsistent tensor size, expected tensor ",
             a.sym_sizes(), " and src ", b.sym_sizes(),
             " to have the same number of elements, but got ", a.sym_size(0), " and ",
             b.sym_size(0), " elements respectively");
  return {meta::spec({}, a.dtype(), a.device())};
}

void dot_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  cpu::dot(a.dtype(), a.sym_size(0).guard_int(), a.data_ptr(), a.sym_stride(0).guard_int(),
           b.data_ptr(), b.sym_stride(0).guard_int(), out[0].data_ptr());
}

std::vector<TensorSpec> outer_meta(const std::vector<Tensor>& in, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  KILN_CHECK(a.dim() == 1, "outer: expected 1-D argument self, but got a ", a.dim(),
             "-D tensor of shape ", a.sym_sizes());
  KILN_CHECK(b.dim() == 1, "outer: expected 1-D argument vec2, but got a ", b.dim(),
             "-D tensor of shape ", b.sym_sizes());
  return {meta::spec({a.sym_size(0), b.sym_size(0)}, meta::result_type(in), a.device())};
}

// out[i, j] = a[i] * b[j] in the output's dtype.
void outer_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const ScalarType dt = out[0].dtype();
  const Tensor a = in[0].dtype() == dt ? in[0] : in[0].to(dt);
  const Tensor b = in[1].dtype() == dt ? in[1] : in[1].to(dt);
  const int64_t n = a.sym_size(0).guard_int(), m = b.sym_size(0).guard_int();
  const int64_t sa = a.sym_stride(0).guard_int(), sb = b.sym_stride(0).guard_int();
  cpu::visit_all(dt, "outer", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    const T* pa = static_cast<const T*>(a.data_ptr());
    const T* pb = static_cast<const T*>(b.data_ptr());
    T* po = static_cast<T*>(out[0].data_ptr());
    cpu::parallel_for(0, n, std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(m, 1)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) {
                          const C x = static_cast<C>(pa[i * sa]);
                          for (int64_t j = 0; j < m; ++j)
                            po[i * m + j] = static_cast<T>(x * static_cast<C>(pb[j * sb]));
                        }
                      });
  });
}

std::vector<Tensor> outer_backward(const BackwardContext& c) {
  const Tensor& g = c.grad();
  return {c.needs_grad(0) ? mv(g, c.input(1).to(g.dtype())) : Tensor(),
          c.needs_grad(1) ? mv(g.t(), c.input(0).to(g.dtype())) : Tensor()};
}

// Naive float64 loops over the first two inputs as vectors.
Tensor reference_vectors(const Tensor& a_in, const Tensor& b_in, bool outer) {
  Tensor a = a_in.to(kFloat64).contiguous(), b = b_in.to(kFloat64).contiguous();
  const int64_t n = a.sym_numel(), m = b.sym_numel();
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  if (!outer) {
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) acc += pa[i] * pb[i];
    return full({}, acc, kFloat64);
  }
  Tensor out = empty({n, m}, kFloat64);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) out.data_ptr<double>()[i * m + j] = pa[i] * pb[j];
  return out;
}

std::vector<OpSample> vector_samples(ScalarType dt, bool outer) {
  using samples::make;
  const int64_t m = outer ? 4 : 7;
  return {
      {{make({7}, dt), make({m}, dt)}, {}, "vectors"},
      {{make({14}, dt).slice(0, 0, 14, 2), make({m}, dt)}, {}, "strided"},
      {{make({7, 3}, dt).slice(1, 1, 2).reshape({7}), make({1}, dt).expand({m})},
       {},
       "column view, 0-stride",
       /*check_grad=*/false},
      {{make({0}, dt), make({outer ? 3 : 0}, dt)}, {}, "zero-size"},
      {{make({300}, dt), make({outer ? 5 : 300}, dt)}, {}, "longer"},
  };
}

}  // namespace

KILN_REGISTER_OP(dot)
    .schema("dot(Tensor self, Tensor tensor) -> Tensor")
    .meta(dot_meta)
    .cpu(dot_kernel)
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.needs_grad(0) ? c.grad() * c.input(1) : Tensor(),
                                 c.needs_grad(1) ? c.grad() * c.input(0) : Tensor()};
    })
    .samples([](ScalarType dt) { return vector_samples(dt, false); })
    .error_samples([] {
      const Tensor v = samples::make({3}, kFloat32);
      return std::vector<OpErrorSample>{
          {{samples::make({2, 3}, kFloat32), v},
           {},
           "but got 2D and 1D tensors of shapes [2, 3] and [3]",
           "matrix"},
          {{v, v.to(kFloat64)},
           {},
           "expected self and other to have the same dtype, but got "
           "float32 and float64",
           "dtypes"},
          {{v.to(kBool), v.to(kBool)}, {}, "not supported for dtype bool", "bool"},
          {{v, samples::make({4}, kFloat32)},
           {},
           "expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4",
           "sizes"},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{reference_vectors(in[0], in[1], false)};
    })
    .dtypes(kVectorDtypes)
    .lowering("extern:dot");

KILN_REGISTER_OP(outer)
    .schema("outer(Tensor self, Tensor vec2) -> Tensor")
    .meta(outer_meta)
    .cpu(outer_kernel)
    .backward(outer_backward)
    .samples([](ScalarType dt) { return vector_samples(dt, true); })
    .error_samples([] {
      const Tensor v = samples::make({3}, kFloat32), m = samples::make({2, 3}, kFloat32);
      return std::vector<OpErrorSample>{
          {{m, v}, {}, "expected 1-D argument self, but got a 2-D tensor of shape [2, 3]", "self"},
          {{v, m}, {}, "expected 1-D argument vec2, but got a 2-D tensor of shape [2, 3]", "vec2"},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{reference_vectors(in[0], in[1], true)};
    })
    .dtypes(kVectorDtypes)
    .lowering("extern:outer");

Tensor dot(const Tensor& self, const Tensor& other) {
  static const OpDef& op = get_op("dot");
  return call_op1(op, {self, other}, {});
}
Tensor outer(const Tensor& self, const Tensor& vec2) {
  static const OpDef& op = get_op("outer");
  return call_op1(op, {self, vec2}, {});
}
Tensor ger(const Tensor& self, const Tensor& vec2) { return outer(self, vec2); }

Tensor Tensor::dot(const Tensor& other) const { return kiln::dot(*this, other); }
Tensor Tensor::outer(const Tensor& other) const { return kiln::outer(*this, other); }

}  // namespace kiln
