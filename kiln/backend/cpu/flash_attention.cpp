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

// Each key/value head's rows [len, dim] transposed tile by tile: tile j0.. (nb = min(block,
// len - j0) keys) becomes a dense dim x nb matrix at (head * len + j0) * dim, so that a tile of
// K^T is read with unit stride.
template <class T>
std::vector<T> pack_blocks(const Rows<const T>& x, int64_t heads, int64_t len, int64_t dim) {
  std::vector<T> packed(heads * len * dim);
  parallel_for(0, heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t h = begin; h < end; ++h)
      for (int64_t j0 = 0; j0 < len; j0 += kFlashKeyBlock) {
        const int64_t nb = std::min(kFlashKeyBlock, len - j0);
        T* tile = packed.data() + (h * len + j0) * dim;
        for (int64_t j = 0; j < nb; ++j) {
          const T* row = x.row(h, j0 + j);
          for (int64_t d = 0; d < dim; ++d) tile[d * nb + j] = row[d];
        }
      }
  });
  return packed;
}

// Tasks per thread chunk: enough that a chunk does at least ~1M flops (small problems, the demo
// GPT's heads of 8 tokens, run on one thread rather than pay for waking others).
int64_t grain(int64_t flops_per_task) {
  return std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(flops_per_task, 1));
}

}  // namespace

template <class T>
void flash_attention_forward(const FlashAttention<T>& p, const Rows<T>& out, T* lse) {
  const int64_t kv_rows = p.batch * p.kv_heads;
  const std::vector<T> kt = pack_blocks(p.k, kv_rows, p.kv_len, p.head_dim);
  const int64_t q_blocks = (p.q_len + kFlashQueryBlock - 1) / kFlashQueryBlock;
  const int64_t task_flops =
      2 * std::min(p.q_len, kFlashQueryBlock) * p.kv_len * (p.head_dim + p.value_dim);
  parallel_for(0, p.rows() * q_blocks, grain(task_flops), [&](int64_t begin, int64_t end) {
    at_level<T>([&](auto isa) { flash_forward_tasks(isa, p, kt.data(), out, lse, begin, end); });
  });
}

template <class T>
void flash_attention_backward(const FlashAttention<T>& p, const Rows<const T>& out, const T* lse,
                              const FlashGradients<T>& g) {
  const int64_t kv_rows = p.batch * p.kv_heads;
  const std::vector<T> kt = pack_blocks(p.k, kv_rows, p.kv_len, p.head_dim);
  const std::vector<T> vt = pack_blocks(p.v, kv_rows, p.kv_len, p.value_dim);
  const int64_t task_flops = 4 * (p.heads / std::max<int64_t>(p.kv_heads, 1)) * p.q_len * p.kv_len *
                             (p.head_dim + p.value_dim);
  parallel_for(0, kv_rows, grain(task_flops), [&](int64_t begin, int64_t end) {
    at_level<T>([&](auto isa) {
      flash_backward_tasks(isa, p, kt.data(), vt.data(), out, lse, g, begin, end);
    });
  });
}

template void flash_attention_forward(const FlashAttention<float>&, const Rows<float>&, float*);
template void flash_attention_forward(const FlashAttention<double>&, const Rows<double>&, double*);
template void flash_attention_backward(const FlashAttention<float>&, const Rows<const float>&,
                                       const float*, const FlashGradients<float>&);
template void flash_attention_backward(const FlashAttention<double>&, const Rows<const double>&,
                                       const double*, const FlashGradients<double>&);

}  // namespace kiln::cpu
