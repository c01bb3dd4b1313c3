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

// The rows of a [heads..., len, dim] operand of any strides but a dense last dim: row i of head n
// starts at data + offset[n] + i * row_stride.
template <class T>
struct Rows {
  T* data = nullptr;
  std::vector<int64_t> offset;
  int64_t row_stride = 0;

  T* row(int64_t n, int64_t i) const { return data + offset[n] + i * row_stride; }
  explicit operator bool() const { return data != nullptr; }
};

// Changes to the tiles of scaled scores, for FlexAttention (kiln/ops/nn/flex): which tiles show
// any key, and the scores' new values in a tile.
template <class T>
class TileMod {
 public:
  enum Visible { kNone, kSome, kAll };
  virtual ~TileMod() = default;
  // Whether queries i0.. (m) of head n see none, some or all of keys j0.. (nb).
  virtual Visible visible(int64_t n, int64_t i0, int64_t m, int64_t j0, int64_t nb) const = 0;
  // scores (m x nb) become their modified values, -inf where a key is hidden (unless
  // all_visible); with `derivative`, d(modified) / d(score) is written there.
  virtual void apply(int64_t n, int64_t i0, int64_t m, int64_t j0, int64_t nb, bool all_visible,
                     T* scores, T* derivative) const = 0;
  // The backward's gradient of the modified scores of a tile (before the chain through
  // `derivative`), for gradients to what the modification reads; `slot` (the key/value head) is
  // owned by the calling thread.
  virtual void accumulate(int64_t n, int64_t i0, int64_t m, int64_t j0, int64_t nb,
                          const T* grad_scores, int64_t slot) const = 0;
};

// One attention problem over T (float or double). Query heads n run over batch x heads;
// key/value heads are shared by heads / kv_heads consecutive query heads.
template <class T>
struct FlashAttention {
  int64_t batch = 1, heads = 1, kv_heads = 1;
  int64_t q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  T scale = 1;
  bool causal = false;  // upper-left aligned: query i sees keys j <= i
  Rows<const T> q, k, v;
  // An additive mask (-inf where masked), or none: element (n, i, j) at mask.row(n, i)[j *
  // mask_col_stride].
  Rows<const T> mask;
  int64_t mask_col_stride = 0;
  const TileMod<T>* mod = nullptr;  // applied after the mask

  int64_t rows() const { return batch * heads; }
  int64_t kv_head_of(int64_t n) const {
    return (n / heads) * kv_heads + (n % heads) / (heads / kv_heads);
  }
};

// out: [rows, q_len, value_dim]; lse: dense [rows, q_len], -inf for a row that sees no key (its
// output is 0).
template <class T>
void flash_attention_forward(const FlashAttention<T>& p, const Rows<T>& out, T* lse);

// The gradients given the forward's out and lse. Parallel over key/value heads, each of which
// owns its gradients: deterministic, no atomics.
template <class T>
struct FlashGradients {
  Rows<const T> grad_out;
  const T* grad_lse;               // dense [rows, q_len], or null
  Rows<T> grad_q, grad_k, grad_v;  // shaped as q, k and v
  T* grad_scores;  // dense [rows, q_len, kv_len] (the mask's gradient before reduction), or null
};
template <class T>
void flash_attention_backward(const FlashAttention<T>& p, const Rows<const T>& out, const T* lse,
                              const FlashGradients<T>& g);

}  // namespace kiln::cpu
