#include "kiln/backend/cpu/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/backend/cpu/small_gemm.h"

#define KILN_ISA_BODY "kiln/backend/cpu/flash_attention.inc"
#include "kiln/backend/cpu/isa_expand.h"
#undef KILN_ISA_BODY

namespace kiln::cpu {
namespace {

// f(isa) at the CPU's level for float; double, which only checks gradients, runs the baseline's.
template <class T, class F>
void at_level(F&& f) {
  if constexpr (std::is_same_v<T, float>)
    dispatch_isa(f);
  else
    f(avx2::Isa{});
}

}  // namespace

template <class T>
void flash_attention_forward(const FlashAttention<T>& p, T* out, T* lse) {
  const int64_t q_blocks = (p.q_len + kFlashQueryBlock - 1) / kFlashQueryBlock;
  parallel_for(0, p.rows() * q_blocks, 1, [&](int64_t begin, int64_t end) {
    at_level<T>([&](auto isa) { flash_forward_tasks(isa, p, out, lse, begin, end); });
  });
}

template <class T>
void flash_attention_backward(const FlashAttention<T>& p, const T* out, const T* lse,
                              const FlashGradients<T>& g) {
  parallel_for(0, p.batch * p.kv_heads, 1, [&](int64_t begin, int64_t end) {
    at_level<T>([&](auto isa) { flash_backward_tasks(isa, p, out, lse, g, begin, end); });
  });
}

template void flash_attention_forward(const FlashAttention<float>&, float*, float*);
template void flash_attention_forward(const FlashAttention<double>&, double*, double*);
template void flash_attention_backward(const FlashAttention<float>&, const float*, const float*,
                                       const FlashGradients<float>&);
template void flash_attention_backward(const FlashAttention<double>&, const double*, const double*,
                                       const FlashGradients<double>&);

}  // namespace kiln::cpu
