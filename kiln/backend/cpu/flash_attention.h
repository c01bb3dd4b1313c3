#pragma once
// Flash attention on the CPU: softmax(scale * Q K^T + mask) V computed one tile of query rows by
// one tile of keys at a time with a running (online) softmax, so memory grows with the sequence,
// never with its square. The forward keeps each row's log-sum-exp; the backward recomputes the
// probabilities from it (FlashAttention-2). float runs the vector kernels of small_gemm.h at the
// CPU's level; double (the reference for gradient checks) runs the same tiles with plain loops.
#include <cstdint>
#include <vector>

namespace kiln::cpu {

// Query rows and keys per tile.
constexpr int64_t kFlashQueryBlock = 64;
constexpr int64_t kFlashKeyBlock = 128;

// One attention problem over contiguous buffers of T (float or double). Query "rows" n run over
// batch x heads; key/value heads are shared by heads / kv_heads consecutive query heads.
template <class T>
struct FlashAttention {
  int64_t batch = 1, heads = 1, kv_heads = 1;
  int64_t q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  T scale = 1;
  bool causal = false;   // upper-left aligned: query i sees keys j <= i
  const T* q = nullptr;  // [batch * heads, q_len, head_dim]
  const T* k = nullptr;  // [batch * kv_heads, kv_len, head_dim]
  // k and v transposed by blocks of kFlashKeyBlock keys, zero-padded:
  // [batch * kv_heads, key_blocks(), head_dim or value_dim, kFlashKeyBlock].
  const T* k_t = nullptr;
  const T* v = nullptr;    // [batch * kv_heads, kv_len, value_dim]
  const T* v_t = nullptr;  // the backward only
  // An additive mask (-inf where masked), or null: element (n, i, j) is at
  // mask[mask_offset[n] + i * mask_row_stride + j * mask_col_stride].
  const T* mask = nullptr;
  std::vector<int64_t> mask_offset;
  int64_t mask_row_stride = 0, mask_col_stride = 0;

  int64_t rows() const { return batch * heads; }
  int64_t key_blocks() const { return (kv_len + kFlashKeyBlock - 1) / kFlashKeyBlock; }
  int64_t kv_head_of(int64_t n) const {
    return (n / heads) * kv_heads + (n % heads) / (heads / kv_heads);
  }
};

// out: [rows, q_len, value_dim]; lse: [rows, q_len], -inf for a row that sees no key (its output
// is 0).
template <class T>
void flash_attention_forward(const FlashAttention<T>& p, T* out, T* lse);

// The gradients given the forward's out and lse. Parallel over key/value heads, each of which
// owns its gradients: deterministic, no atomics.
template <class T>
struct FlashGradients {
  const T* grad_out;            // [rows, q_len, value_dim]
  const T* grad_lse;            // [rows, q_len], or null
  T *grad_q, *grad_k, *grad_v;  // shaped as q, k and v
  T* grad_scores;  // [rows, q_len, kv_len] (the mask's gradient before reduction), or null
};
template <class T>
void flash_attention_backward(const FlashAttention<T>& p, const T* out, const T* lse,
                              const FlashGradients<T>& g);

// A product of tiles: C (m x n, leading dimension ldc) = alpha A B + beta C, A(i, p) at
// a[i * a_row + p * a_col], B(p, j) at b[p * ldb + j].
template <class T>
struct Tile {
  int64_t m, n, k;
  const T* a;
  int64_t a_row, a_col;
  const T* b;
  int64_t ldb;
  T* c;
  int64_t ldc;
  T alpha, beta;
};

}  // namespace kiln::cpu
