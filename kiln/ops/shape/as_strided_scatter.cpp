// as_strided_scatter: a copy of self with the elements of an as_strided geometry replaced by src,
// the out-of-place form of `self.as_strided(size, stride, offset).copy_(src)`. The compiler's
// functionalization writes a mutated view back into its base with it (kiln/compile/tracer.cpp).
// The result is contiguous, and the geometry addresses its storage (for a contiguous self at
// offset 0, the same elements as in self's own storage, as PyTorch's op).
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// The result's storage position of each geometry element, in row-major order of the geometry.
std::vector<int64_t> positions(const std::vector<int64_t>& sizes,
                               const std::vector<int64_t>& strides, int64_t offset) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> pos(static_cast<size_t>(n), offset);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i;
    for (size_t d = sizes.size(); d-- > 0;) {
      pos[i] += (rem % sizes[d]) * strides[d];
      rem /= sizes[d];
    }
  }
  return pos;
}

void kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  Tensor result = out[0];
  result.copy_(in[0]);
  result.as_strided(a.shape(0), a.shape(1), a.sym(2)).copy_(in[1]);
}

std::vector<Tensor> backward(const BackwardContext& c) {
  const Attrs& a = c.attrs;
  const Tensor& g = c.grad();
  // self's gradient: g with the replaced elements zeroed; src's: g at the geometry.
  Tensor grad_self =
      as_strided_scatter(g, zeros(a.shape(0), g.options()), a.shape(0), a.shape(1), a.sym(2));
  const Tensor dense = g.contiguous();
  Tensor grad_src =
      dense.as_strided(a.shape(0), a.shape(1), dense.sym_storage_offset() + a.sym(2)).clone();
  return {grad_self, grad_src};
}

Attrs geometry(SymShape size, SymShape stride, int64_t offset) {
  return {std::move(size), std::move(stride), SymInt(offset)};
}

}  // namespace

KILN_REGISTER_OP(as_strided_scatter)
    .schema(
        "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
        "SymInt storage_offset=0) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor &self = in[0], &src = in[1];
      const SymShape &size = a.shape(0), &stride = a.shape(1);
      const SymInt& offset = a.sym(2);
      KILN_CHECK(src.dtype() == self.dtype(), "as_strided_scatter: src of dtype ",
                 dtype_name(src.dtype()), " does not match self's dtype ",
                 dtype_name(self.dtype()));
      KILN_CHECK(src.device() == self.device(), "as_strided_scatter: src on ", src.device(),
                 " and self on ", self.device());
      KILN_CHECK(size.size() == stride.size(), "as_strided_scatter: mismatch in length of strides ",
                 "and shape (got ", size.size(), " sizes and ", stride.size(), " strides)");
      KILN_CHECK(src.sym_sizes() == SymIntArrayRef(size), "as_strided_scatter: src of shape ",
                 src.sym_sizes(), " does not match the geometry's shape ", SymIntArrayRef(size));
      SymInt last = offset;
      bool empty = false;
      for (size_t d = 0; d < size.size(); ++d) {
        KILN_CHECK(stride[d] >= 0, "as_strided_scatter: negative stride in ",
                   SymIntArrayRef(stride));
        empty = empty || size[d] == 0;
        last = last + (size[d] - 1) * stride[d];
      }
      KILN_CHECK(offset >= 0 && (empty || last < self.sym_numel()), "as_strided_scatter: size ",
                 SymIntArrayRef(size), ", stride ", SymIntArrayRef(stride), " and offset ", offset,
                 " reach past the ", self.sym_numel(), " elements of self (shape ",
                 self.sym_sizes(), ")");
      return meta::one_spec(self.sym_sizes(), self.dtype(), self.device());
    })
    .cpu(kernel)
    .save_inputs({})  // the backward reads no input
    .backward(backward)
    .samples([](ScalarType dt) {
      using S = SymShape;
      auto sample = [&](std::vector<int64_t> self, std::vector<int64_t> src, Attrs a,
                        const char* desc) {
        return OpSample{{samples::make(std::move(self), dt), samples::make(std::move(src), dt)},
                        std::move(a),
                        desc};
      };
      return std::vector<OpSample>{
          sample({4, 5}, {2, 3}, geometry(S{2, 3}, S{5, 1}, 6), "a block"),
          sample({12}, {3, 2}, geometry(S{3, 2}, S{1, 3}, 0), "transposed"),
          sample({3, 4}, {}, geometry(S{}, S{}, 5), "one element"),
          sample({2, 3}, {0, 2}, geometry(S{0, 2}, S{1, 1}, 0), "empty geometry")};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor out = in[0].to(kFloat64).contiguous().clone();
      const Tensor src = in[1].to(kFloat64).contiguous();
      double* o = out.data_ptr<double>();
      const std::vector<int64_t> pos =
          positions(SymIntArrayRef(a.shape(0)).vec(), SymIntArrayRef(a.shape(1)).vec(), a.i(2));
      for (size_t i = 0; i < pos.size(); ++i) o[pos[i]] = src.data_ptr<double>()[i];
      return std::vector<Tensor>{out.to(in[0].dtype())};
    })
    .dtypes({kFloat64, kFloat32, kInt64})
    .error_samples([] {
      using S = SymShape;
      const Tensor self = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{self, samples::make({2, 2}, kFloat32)},
           geometry(S{2, 3}, S{4, 1}, 0),
           "src of shape [2, 2] does not match the geometry's shape [2, 3]",
           "src's shape"},
          {{self, samples::make({2, 3}, kFloat32)},
           geometry(S{2, 3}, S{4, 1}, 7),
           "size [2, 3], stride [4, 1] and offset 7 reach past the 12 elements of self (shape "
           "[3, 4])",
           "past the end"},
          {{self, samples::make({2, 3}, kFloat64)},
           geometry(S{2, 3}, S{4, 1}, 0),
           "src of dtype float64 does not match self's dtype float32",
           "dtype"},
      };
    })
    .lowering("extern:as_strided_scatter");

Tensor as_strided_scatter(const Tensor& self, const Tensor& src, SymIntList size, SymIntList stride,
                          SymInt storage_offset) {
  static const OpDef& op = get_op("as_strided_scatter");
  return call_op1(op, {self, src},
                  {std::move(size).get(), std::move(stride).get(), std::move(storage_offset)});
}

}  // namespace kiln
