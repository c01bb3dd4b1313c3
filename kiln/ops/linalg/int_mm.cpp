// _int_mm: int8 [m, k] @ int8 [k, n] -> int32 [m, n], PyTorch's torch._int_mm, the product of
// int8 quantized layers. On oneDNN's s8 x s8 -> s32 matmul (VNNI where the CPU has it), else a
// loop accumulating in int32 (kiln/backend/cpu/blas.h).
#include "kiln/backend/cpu/blas.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/linalg/util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

std::vector<TensorSpec> int_mm_meta(const std::vector<Tensor>& in, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  KILN_CHECK(a.dim() == 2 && b.dim() == 2, "_int_mm: expected 2-D tensors, but got self of shape ",
             a.sym_sizes(), " and mat2 of shape ", b.sym_sizes());
  KILN_CHECK(a.dtype() == kInt8 && b.dtype() == kInt8,
             "_int_mm: expected self and mat2 of dtype int8, but got ", a.dtype(), " and ",
             b.dtype());
  linalg::check_inner_dims("_int_mm", a, a.sym_size(1), b, b.sym_size(0));
  return meta::one_spec({a.sym_size(0), b.sym_size(1)}, kInt32, a.device());
}

void int_mm_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const Tensor &a = in[0], &b = in[1], &c = out[0];
  cpu::GemmArgs g;
  g.dtype = kInt8;
  g.c_dtype = kInt32;
  g.m = c.size(0);
  g.n = c.size(1);
  g.k = a.size(1);
  g.a = {a.data_ptr(), 0, a.stride(0), a.stride(1)};
  g.b = {b.data_ptr(), 0, b.stride(0), b.stride(1)};
  g.c = c.data_ptr();
  g.ldc = c.stride(0);
  if (g.k == 0) {
    c.zero_();
    return;
  }
  cpu::gemm(g);
}

std::vector<OpSample> int_mm_samples(ScalarType dt) {
  using samples::make;
  return {
      {{make({5, 7}, dt, -128, 128), make({7, 9}, dt, -128, 128)}, {}, "full int8 range"},
      {{make({33, 64}, dt, -128, 128, true), make({48, 64}, dt, -128, 128).t()},
       {},
       "non-contiguous self, transposed mat2"},
      {{make({1, 300}, dt, 100, 128), make({300, 3}, dt, 100, 128)}, {}, "sums past int16"},
      {{make({4, 0}, dt), make({0, 6}, dt)}, {}, "zero-size k"},
  };
}

std::vector<OpErrorSample> int_mm_error_samples() {
  using samples::make;
  const Tensor a = make({2, 3}, kInt8), b = make({3, 4}, kInt8);
  return {
      {{a, b.to(kFloat32)},
       {},
       "expected self and mat2 of dtype int8, but got int8 and float32",
       "dtypes"},
      {{make({2, 3, 1}, kInt8), b}, {}, "expected 2-D tensors", "rank"},
      {{a, make({4, 4}, kInt8)}, {}, "cannot multiply [2, 3] by [4, 4]: 3 != 4", "inner sizes"},
  };
}

}  // namespace

KILN_REGISTER_OP(_int_mm)
    .schema("_int_mm(Tensor self, Tensor mat2) -> Tensor")
    .meta(int_mm_meta)
    .cpu(int_mm_kernel)
    .samples(int_mm_samples)
    .error_samples(int_mm_error_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{
          linalg::reference_matmul(in[0].to(kInt64), in[1].to(kInt64)).to(kInt32)};
    })
    .dtypes({kInt8})
    .lowering("extern:_int_mm");

Tensor _int_mm(const Tensor& self, const Tensor& mat2) {
  static const OpDef& op = get_op("_int_mm");
  return call_op1(op, {self, mat2}, {});
}

}  // namespace kiln
