#include "kiln/backend/cpu/flash_attention_amx.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>

#include "kiln/backend/cpu/amx.h"
#include "kiln/backend/cpu/parallel.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#define KILN_FLASH_AMX 1
#else
#define KILN_FLASH_AMX 0
#endif

namespace kiln::cpu {

#if KILN_FLASH_AMX
namespace {

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// n elements aligned to 64 bytes, uninitialised: a tile row (64 bytes) that straddles two cache
// lines loads at half the speed.
template <class T>
struct AlignedArray {
  explicit AlignedArray(int64_t n)
      : data(static_cast<T*>(
            std::aligned_alloc(64, round_up(std::max<int64_t>(n, 1) * sizeof(T), 64)))) {
    if (!data) throw std::bad_alloc();
  }
  ~AlignedArray() { std::free(data); }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  T* data;
};

// The packed tiles of one problem: K block b of key/value head h (keys b * kFlashKeyBlock..)
// packed as the B of Q K^T (head_dim x keys), V's as the B of P V (keys x value_dim).
struct PackedKv {
  PackedKv(int64_t kv_rows, int64_t num_blocks, int64_t head_dim_pad, int64_t value_dim_pad)
      : blocks(num_blocks),
        e_pad(head_dim_pad),
        ev_pad(value_dim_pad),
        k(kv_rows * blocks * e_pad * kFlashKeyBlock),
        v(kv_rows * blocks * kFlashKeyBlock * ev_pad) {}
  int64_t blocks, e_pad, ev_pad;
  AlignedArray<uint16_t> k, v;

  int64_t k_at(int64_t h, int64_t b) const { return (h * blocks + b) * e_pad * kFlashKeyBlock; }
  int64_t v_at(int64_t h, int64_t b) const { return (h * blocks + b) * kFlashKeyBlock * ev_pad; }
};

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps(), which -Wmaybe-uninitialized flags
// once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// 2^x in the lanes of `lanes` where x >= -126, 0 in the others (x = -inf and NaN included):
// 2^n 2^f with n = round(x), |f| <= 1/2, and 2^f by its degree-5 interpolant at the Chebyshev
// nodes (relative error 1.6e-7). Masked scores never reach the subnormal range and its assists.
inline __m512 exp2_nonpositive(__m512 x, __mmask16 lanes) {
  const __mmask16 keep = _mm512_mask_cmp_ps_mask(lanes, x, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.33908634e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.67603192e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.55035711e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.40221075e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.93147188e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.00000008f));
  return _mm512_maskz_scalef_ps(keep, p, n);
}

inline __mmask16 first_lanes(int64_t w) {
  return w >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << std::max<int64_t>(w, 0)) - 1);
}

// Mask elements j.. (up to 16, `left` of them; zeros past) of a mask row of column stride cs.
inline __m512 mask_lanes(const float* row, int64_t cs, int64_t j, int64_t left) {
  if (cs == 1) return _mm512_maskz_loadu_ps(first_lanes(left), row + j);
  alignas(64) float g[16] = {};
  for (int64_t t = 0; t < std::min<int64_t>(16, left); ++t) g[t] = row[(j + t) * cs];
  return _mm512_load_ps(g);
}

inline void scale_row(float* x, int64_t n, float by) {
  const __m512 b = _mm512_set1_ps(by);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 w = first_lanes(n - j);
    _mm512_mask_storeu_ps(x + j, w, _mm512_mul_ps(_mm512_maskz_loadu_ps(w, x + j), b));
  }
}

// Query row-blocks [begin, end) as flash_forward_tasks (flash_attention.inc).
void forward_tasks(const FlashAttention<float>& p, const Rows<const uint16_t>& q,
                   const PackedKv& kv, const Rows<float>& out, float* lse, int64_t begin,
                   int64_t end) {
  constexpr int64_t kM = kFlashQueryBlock, kN = kFlashKeyBlock;
  const int64_t q_blocks = (p.q_len + kM - 1) / kM;
  const int64_t e = p.head_dim, ev = p.value_dim, e_pad = kv.e_pad, ev_pad = kv.ev_pad;
  AlignedArray<uint16_t> qt_buffer(kM * e_pad), probs_buffer(kM * kN);
  AlignedArray<float> scores_buffer(kM * kN), acc_buffer(kM * ev_pad);
  uint16_t *qt = qt_buffer.data, *probs = probs_buffer.data;
  float *scores = scores_buffer.data, *acc = acc_buffer.data;
  constexpr float kLog2e = 1.44269504f, kLn2 = 0.693147181f;
  alignas(64) float row_max[kM], row_sum[kM], new_max[kM], factor[kM];
  int64_t visible[kM];
  const __m512 scale2 = _mm512_set1_ps(p.scale * kLog2e), log2e = _mm512_set1_ps(kLog2e);
  const __m512 minus_inf = _mm512_set1_ps(-INFINITY);
  for (int64_t task = begin; task < end; ++task) {
    const int64_t n = task / q_blocks, i0 = task % q_blocks * kM;
    const int64_t m = std::min(kM, p.q_len - i0), m_pad = round_up(m, 16), nk = p.kv_head_of(n);
    // This block's queries, zero-padded to whole tiles.
    std::fill(qt, qt + m_pad * e_pad, uint16_t{0});
    for (int64_t r = 0; r < m; ++r)
      std::copy(q.row(n, i0 + r), q.row(n, i0 + r) + e, qt + r * e_pad);
    std::fill(probs + m * kN, probs + m_pad * kN, uint16_t{0});
    std::fill(acc, acc + m_pad * ev_pad, 0.0f);
    std::fill(row_max, row_max + m, -INFINITY);
    std::fill(row_sum, row_sum + m, 0.0f);
    const int64_t kv_end = p.causal ? std::min(p.kv_len, i0 + m) : p.kv_len;
    for (int64_t j0 = 0; j0 < kv_end; j0 += kN) {
      const int64_t nb = std::min(kN, kv_end - j0), block = j0 / kN;
      const int64_t packed_cols = std::min(kN, p.kv_len - j0), nb32 = round_up(nb, 32);
      amx_bf16_gemm(AmxGemm{m_pad, round_up(nb, 16), e_pad, qt, e_pad,
                            kv.k.data + kv.k_at(nk, block), packed_cols, scores, kN});
      // The scores in base-2 units, x = log2(e) (scale s + mask), so that exp(scale s + mask -
      // max) = 2^(x - max2): each row's maximum (the scores themselves are rewritten only with a
      // mask). Keys past visible[r] are hidden by causality.
      for (int64_t r = 0; r < m; ++r) {
        float* s = scores + r * kN;
        visible[r] = p.causal ? std::min(nb, i0 + r + 1 - j0) : nb;
        const float* mrow = p.mask ? p.mask.row(n, i0 + r) + j0 * p.mask_col_stride : nullptr;
        __m512 vmax = minus_inf;
        for (int64_t j = 0; j < visible[r]; j += 16) {
          const __mmask16 w = first_lanes(visible[r] - j);
          __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(w, s + j), scale2);
          if (mrow) {
            x = _mm512_fmadd_ps(mask_lanes(mrow, p.mask_col_stride, j, visible[r] - j), log2e, x);
            _mm512_mask_storeu_ps(s + j, w, x);
          }
          vmax = _mm512_mask_max_ps(vmax, w, vmax, x);
        }
        new_max[r] = std::max(row_max[r], _mm512_reduce_max_ps(vmax));
      }
      // The factors by which earlier sums and outputs shrink (0 after no key seen yet).
      for (int64_t r = 0; r < m; r += 16) {
        const __mmask16 w = first_lanes(m - r);
        const __m512 old = _mm512_maskz_loadu_ps(w, row_max + r);
        _mm512_mask_storeu_ps(
            factor + r, w,
            exp2_nonpositive(_mm512_sub_ps(old, _mm512_maskz_loadu_ps(w, new_max + r)), w));
      }
      // The probabilities 2^(x - max2) as bfloat16, zero past the visible keys (up to 32).
      const __m512 mul = p.mask ? _mm512_set1_ps(1.0f) : scale2;
      for (int64_t r = 0; r < m; ++r) {
        const float* s = scores + r * kN;
        uint16_t* prow = probs + r * kN;
        if (new_max[r] == -INFINITY) {  // no key visible to this row yet
          std::fill(prow, prow + nb32, uint16_t{0});
          continue;
        }
        const __m512 shift = _mm512_set1_ps(-new_max[r]);
        __m512 vsum = _mm512_setzero_ps();
        for (int64_t j = 0; j < nb32; j += 16) {
          const __mmask16 w = first_lanes(visible[r] - j);
          const __m512 x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(w, s + j), mul, shift);
          const __m512 prob = exp2_nonpositive(x, w);
          vsum = _mm512_add_ps(vsum, prob);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(prow + j),
                              (__m256i)_mm512_cvtneps_pbh(prob));
        }
        row_sum[r] = row_sum[r] * factor[r] + _mm512_reduce_add_ps(vsum);
        if (factor[r] != 1) scale_row(acc + r * ev_pad, ev, factor[r]);
        row_max[r] = new_max[r];
      }
      AmxGemm pv{m_pad, ev_pad, nb32, probs, kN, kv.v.data + kv.v_at(nk, block), ev, acc, ev_pad};
      pv.accumulate = true;
      amx_bf16_gemm(pv);
    }
    for (int64_t r = 0; r < m; ++r) {
      const bool seen = row_sum[r] > 0;
      float* o = out.row(n, i0 + r);
      std::copy(acc + r * ev_pad, acc + r * ev_pad + ev, o);
      scale_row(o, ev, seen ? 1.0f / row_sum[r] : 0.0f);
      lse[n * p.q_len + i0 + r] = seen ? row_max[r] * kLn2 + std::log(row_sum[r]) : -INFINITY;
    }
  }
}

// Queries per backward tile, twice the forward's: dV += P^T dO and dK += dS^T Q then sum 128
// deep, which measured ~7% faster overall.
constexpr int64_t kBackwardQueryBlock = 128;

inline __m512 bf16_lanes(const uint16_t* x, __mmask16 w) {
  const __m256i h = _mm256_maskz_loadu_epi16(w, x);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// The per-thread buffers of the backward, which runs transposed (S^T = K Q^T, dP^T = V dO^T, dQ^T
// += K^T dS^T) so that no tile is transposed. Per key/value head: its keys and values as row-major
// A operands (zero-padded to whole key blocks and 32 columns), the keys transposed (A of dQ^T) and
// float accumulators of dK / scale and dV. Per query head: Q and dO packed as the B of S^T and dP^T
// and of dK += dS^T Q and dV += P^T dO, -log2(e) lse, delta and dQ^T / scale. Per tile: S^T, dP^T,
// P^T and dS^T (row-major, and packed as the B of dQ^T). The transposed operands are stored block
// by block (kt, q_t, go_t, grad_qt): with a whole head's row pitch (4 KiB or more), the 16 rows of
// a tile would share one L1 set.
struct BackwardBuffers {
  int64_t e_pad, e_pad16, ev_pad, ev_pad16, kv_pad, q_pad;
  AlignedArray<uint16_t> k, v, kt, q_t, q_p, go_t, go_p, probs_t, ds_t, ds_p;
  AlignedArray<float> grad_k, grad_v, grad_qt, neg_lse2, delta, scores_t, dp_t;

  BackwardBuffers(const FlashAttention<float>& p, int64_t kv_blocks, int64_t q_blocks)
      : e_pad(round_up(p.head_dim, 32)),
        e_pad16(round_up(p.head_dim, 16)),
        ev_pad(round_up(p.value_dim, 32)),
        ev_pad16(round_up(p.value_dim, 16)),
        kv_pad(kv_blocks * kFlashKeyBlock),
        q_pad(q_blocks * kBackwardQueryBlock),
        k(kv_pad * e_pad),
        v(kv_pad * ev_pad),
        kt(e_pad16 * kv_pad),
        q_t(q_blocks * e_pad * kBackwardQueryBlock),
        q_p(amx_packed_size(p.q_len, p.head_dim)),
        go_t(q_blocks * ev_pad * kBackwardQueryBlock),
        go_p(amx_packed_size(p.q_len, p.value_dim)),
        probs_t(kFlashKeyBlock * kBackwardQueryBlock),
        ds_t(kFlashKeyBlock * kBackwardQueryBlock),
        ds_p(kFlashKeyBlock * kBackwardQueryBlock),
        grad_k(kv_pad * e_pad16),
        grad_v(kv_pad * ev_pad16),
        grad_qt(e_pad16 * q_pad),
        neg_lse2(q_pad),
        delta(q_pad),
        scores_t(kFlashKeyBlock * kBackwardQueryBlock),
        dp_t(kFlashKeyBlock * kBackwardQueryBlock) {}
};

// Rows [0, len) of x (dim wide) into a zero-padded row-major [rows, ld] copy.
void copy_rows(const Rows<const uint16_t>& x, int64_t h, int64_t len, int64_t dim, int64_t rows,
               int64_t ld, uint16_t* to) {
  std::fill(to, to + rows * ld, uint16_t{0});
  for (int64_t j = 0; j < len; ++j) std::copy(x.row(h, j), x.row(h, j) + dim, to + j * ld);
}

// The mask's elements (queries i.. of lanes w, key j) of head n.
inline __m512 mask_column(const FlashAttention<float>& p, int64_t n, int64_t i, int64_t j,
                          __mmask16 w) {
  const float* at = p.mask.row(n, i) + j * p.mask_col_stride;
  const int64_t rs = p.mask.row_stride;
  if (rs == 1) return _mm512_maskz_loadu_ps(w, at);
  if (rs >= -(int64_t{1} << 26) && rs < (int64_t{1} << 26)) {
    const __m512i index =
        _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                           _mm512_set1_epi32(static_cast<int>(rs)));
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), w, index, at, 4);
  }
  alignas(64) float g[16] = {};
  for (int l = 0; l < 16; ++l)
    if (w >> l & 1) g[l] = at[l * rs];
  return _mm512_load_ps(g);
}

// One tile of head n, queries i0.. (m) and keys j0.. (nb, written as `rows` rows, a multiple of
// 32): P^T from S^T and lse, and dS^T = P^T (dP^T - delta), both rounded to bfloat16, dS^T also
// packed in pairs of rows as the B of K^T dS^T; zero past m and nb and above the causal diagonal.
void probabilities_tile(const FlashAttention<float>& p, BackwardBuffers& b, int64_t n, int64_t i0,
                        int64_t m, int64_t j0, int64_t nb, int64_t rows) {
  constexpr int64_t kM = kBackwardQueryBlock;
  constexpr float kLog2e = 1.44269504f;
  const int64_t m32 = round_up(m, 32);
  const __m512 scale2 = _mm512_set1_ps(p.scale * kLog2e), log2e = _mm512_set1_ps(kLog2e);
  // Lanes 2l and 2l + 1 from lanes l of the low and high halves.
  const __m512i pairs = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  // P and dS of key row jj, queries i0 + c.. (unrolled by hand below: a loop over the pair kept
  // them in memory).
  auto row = [&](int64_t jj, int64_t c, __m512& prob, __m512& ds) {
    const int64_t j = j0 + jj;
    __mmask16 w = jj < nb ? first_lanes(m - c) : 0;
    if (p.causal) {  // queries i < j do not see key j
      const int64_t hidden = std::clamp<int64_t>(j - i0 - c, 0, 16);
      w &= static_cast<__mmask16>(~((1u << hidden) - 1));
    }
    if (!w) {
      prob = ds = _mm512_setzero_ps();
      return;
    }
    __m512 x = _mm512_fmadd_ps(_mm512_load_ps(b.scores_t.data + jj * kM + c), scale2,
                               _mm512_load_ps(b.neg_lse2.data + i0 + c));
    if (p.mask) x = _mm512_fmadd_ps(mask_column(p, n, i0 + c, j, w), log2e, x);
    prob = exp2_nonpositive(x, w);
    const __m512 dp = _mm512_sub_ps(_mm512_load_ps(b.dp_t.data + jj * kM + c),
                                    _mm512_load_ps(b.delta.data + i0 + c));
    ds = _mm512_maskz_mul_ps(w, prob, dp);
  };
  for (int64_t r = 0; r < rows; r += 2) {
    for (int64_t c = 0; c < m32; c += 16) {
      __m512 prob[2], ds[2];
      row(r, c, prob[0], ds[0]);
      row(r + 1, c, prob[1], ds[1]);
      const __m512i pb = (__m512i)_mm512_cvtne2ps_pbh(prob[1], prob[0]);
      const __m512i db = (__m512i)_mm512_cvtne2ps_pbh(ds[1], ds[0]);
      uint16_t* pt = b.probs_t.data + r * kM + c;
      uint16_t* dt = b.ds_t.data + r * kM + c;
      _mm256_store_si256(reinterpret_cast<__m256i*>(pt), _mm512_castsi512_si256(pb));
      _mm256_store_si256(reinterpret_cast<__m256i*>(pt + kM), _mm512_extracti64x4_epi64(pb, 1));
      _mm256_store_si256(reinterpret_cast<__m256i*>(dt), _mm512_castsi512_si256(db));
      _mm256_store_si256(reinterpret_cast<__m256i*>(dt + kM), _mm512_extracti64x4_epi64(db, 1));
      _mm512_store_si512(b.ds_p.data + r * kM + 2 * c, _mm512_permutexvar_epi16(pairs, db));
    }
  }
}

// Rows at.. (len) of head n of `to` = `by` times the columns of x (dim rows, leading dimension ld).
void store_transposed(const float* x, int64_t ld, int64_t at, int64_t len, int64_t dim, float by,
                      const Rows<float>& to, int64_t n) {
  alignas(64) float block[16 * 16];
  for (int64_t i0 = 0; i0 < len; i0 += 16) {
    const int64_t rows = std::min<int64_t>(16, len - i0);
    for (int64_t d0 = 0; d0 < dim; d0 += 16) {
      const int64_t cols = std::min<int64_t>(16, dim - d0);
      for (int64_t d = 0; d < cols; ++d)
        _mm512_store_ps(block + 16 * d, _mm512_loadu_ps(x + (d0 + d) * ld + i0));
      for (int64_t r = 0; r < rows; ++r) {
        float* out = to.row(n, at + i0 + r) + d0;
        for (int64_t d = 0; d < cols; ++d) out[d] = by * block[16 * d + r];
      }
    }
  }
}

void accumulate_product(AmxGemm g) {
  g.accumulate = true;
  amx_bf16_gemm(g);
}

// The gradients of key/value heads [begin, end) and of their query heads.
void backward_tasks(const FlashAttention<float>& p, const Rows<const uint16_t>& q,
                    const Rows<const uint16_t>& k, const Rows<const uint16_t>& v,
                    const Rows<const uint16_t>& grad_out, const Rows<const uint16_t>& out,
                    const float* lse, const float* grad_lse, const Rows<float>& grad_q,
                    const Rows<float>& grad_k, const Rows<float>& grad_v, int64_t begin,
                    int64_t end) {
  constexpr int64_t kM = kBackwardQueryBlock, kN = kFlashKeyBlock;
  constexpr float kLog2e = 1.44269504f;
  const int64_t e = p.head_dim, ev = p.value_dim, group = p.heads / p.kv_heads;
  const int64_t kv_blocks = (p.kv_len + kN - 1) / kN, q_blocks = (p.q_len + kM - 1) / kM;
  BackwardBuffers b(p, kv_blocks, q_blocks);
  for (int64_t nk = begin; nk < end; ++nk) {
    copy_rows(k, nk, p.kv_len, e, b.kv_pad, b.e_pad, b.k.data);
    copy_rows(v, nk, p.kv_len, ev, b.kv_pad, b.ev_pad, b.v.data);
    std::fill(b.kt.data, b.kt.data + b.e_pad16 * b.kv_pad, uint16_t{0});
    for (int64_t j0 = 0; j0 < p.kv_len; j0 += 32) {
      const uint16_t* from[32];
      const int64_t width = std::min<int64_t>(32, p.kv_len - j0);
      for (int64_t j = 0; j < width; ++j) from[j] = k.row(nk, j0 + j);
      uint16_t* to = b.kt.data + j0 / kN * b.e_pad16 * kN + j0 % kN;
      for (int64_t d = 0; d < e; ++d)
        for (int64_t j = 0; j < width; ++j) to[d * kN + j] = from[j][d];
    }
    std::fill(b.grad_k.data, b.grad_k.data + b.kv_pad * b.e_pad16, 0.0f);
    std::fill(b.grad_v.data, b.grad_v.data + b.kv_pad * b.ev_pad16, 0.0f);
    for (int64_t g = 0; g < group; ++g) {
      const int64_t n = (nk / p.kv_heads) * p.heads + (nk % p.kv_heads) * group + g;
      const int64_t qs = q.row_stride, gs = grad_out.row_stride;
      for (int64_t i0 = 0; i0 < p.q_len; i0 += kM) {
        const int64_t m = std::min(kM, p.q_len - i0);
        amx_pack_b_transposed(q.row(n, i0), qs, e, m, b.q_t.data + i0 * b.e_pad);
        amx_pack_b_transposed(grad_out.row(n, i0), gs, ev, m, b.go_t.data + i0 * b.ev_pad);
      }
      amx_pack_b(q.row(n, 0), qs, p.q_len, e, b.q_p.data);
      amx_pack_b(grad_out.row(n, 0), gs, p.q_len, ev, b.go_p.data);
      // delta = rowsum(dO O) - dlse; P = 2^(log2(e) (scale s + mask - lse)), 0 where lse = -inf.
      std::fill(b.neg_lse2.data, b.neg_lse2.data + b.q_pad, -INFINITY);
      std::fill(b.delta.data, b.delta.data + b.q_pad, 0.0f);
      for (int64_t i = 0; i < p.q_len; ++i) {
        const float l = lse[n * p.q_len + i];
        b.neg_lse2.data[i] = l == -INFINITY ? -INFINITY : -l * kLog2e;
        __m512 dot = _mm512_setzero_ps();
        for (int64_t t = 0; t < ev; t += 16) {
          const __mmask16 w = first_lanes(ev - t);
          dot = _mm512_fmadd_ps(bf16_lanes(grad_out.row(n, i) + t, w),
                                bf16_lanes(out.row(n, i) + t, w), dot);
        }
        b.delta.data[i] = _mm512_reduce_add_ps(dot) - (grad_lse ? grad_lse[n * p.q_len + i] : 0);
      }
      std::fill(b.grad_qt.data, b.grad_qt.data + b.e_pad16 * b.q_pad, 0.0f);
      for (int64_t j0 = 0; j0 < p.kv_len; j0 += kN) {
        const int64_t i_first = p.causal ? j0 / kM * kM : 0;
        for (int64_t i0 = i_first; i0 < p.q_len; i0 += kM) {
          const int64_t m = std::min(kM, p.q_len - i0), m16 = round_up(m, 16),
                        m32 = round_up(m, 32);
          // Keys past the block's last query are hidden from all of it.
          const int64_t nb = std::min(kN, (p.causal ? std::min(p.kv_len, i0 + m) : p.kv_len) - j0);
          const int64_t nb16 = round_up(nb, 16), nb32 = round_up(nb, 32);
          // S^T = K Q^T, dP^T = V dO^T
          amx_bf16_gemm(AmxGemm{nb16, m16, b.e_pad, b.k.data + j0 * b.e_pad, b.e_pad,
                                b.q_t.data + i0 * b.e_pad, m, b.scores_t.data, kM});
          amx_bf16_gemm(AmxGemm{nb16, m16, b.ev_pad, b.v.data + j0 * b.ev_pad, b.ev_pad,
                                b.go_t.data + i0 * b.ev_pad, m, b.dp_t.data, kM});
          probabilities_tile(p, b, n, i0, m, j0, nb, nb32);
          // dV += P^T dO, dK += dS^T Q, dQ^T += K^T dS^T (dK and dQ without the scale)
          accumulate_product({nb16, b.ev_pad16, m32, b.probs_t.data, kM,
                              b.go_p.data + i0 * b.ev_pad16, ev, b.grad_v.data + j0 * b.ev_pad16,
                              b.ev_pad16});
          accumulate_product({nb16, b.e_pad16, m32, b.ds_t.data, kM, b.q_p.data + i0 * b.e_pad16, e,
                              b.grad_k.data + j0 * b.e_pad16, b.e_pad16});
          accumulate_product({b.e_pad16, m16, nb32, b.kt.data + j0 * b.e_pad16, kN, b.ds_p.data, kM,
                              b.grad_qt.data + i0 * b.e_pad16, kM});
        }
      }
      for (int64_t i0 = 0; i0 < p.q_len; i0 += kM)
        store_transposed(b.grad_qt.data + i0 * b.e_pad16, kM, i0, std::min(kM, p.q_len - i0), e,
                         p.scale, grad_q, n);
    }
    for (int64_t j = 0; j < p.kv_len; ++j) {
      const float* dk = b.grad_k.data + j * b.e_pad16;
      float* to = grad_k.row(nk, j);
      for (int64_t d = 0; d < e; ++d) to[d] = p.scale * dk[d];
      std::copy(b.grad_v.data + j * b.ev_pad16, b.grad_v.data + j * b.ev_pad16 + ev,
                grad_v.row(nk, j));
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace
#endif

bool flash_attention_forward_bf16(const FlashAttention<float>& p, const Rows<const uint16_t>& q,
                                  const Rows<const uint16_t>& k, const Rows<const uint16_t>& v,
                                  const Rows<float>& out, float* lse) {
#if KILN_FLASH_AMX
  if (p.mod || !amx_bf16_available()) return false;
  const int64_t kv_rows = p.batch * p.kv_heads;
  PackedKv kv(kv_rows, (p.kv_len + kFlashKeyBlock - 1) / kFlashKeyBlock, round_up(p.head_dim, 32),
              round_up(p.value_dim, 16));
  const int64_t pack_grain =
      std::max<int64_t>(1, 65536 / (kFlashKeyBlock * (p.head_dim + p.value_dim) + 1));
  parallel_for(0, kv_rows * kv.blocks, pack_grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t h = t / kv.blocks, b = t % kv.blocks, j0 = b * kFlashKeyBlock;
      const int64_t nb = std::min(kFlashKeyBlock, p.kv_len - j0);
      amx_pack_b_transposed(k.row(h, j0), k.row_stride, p.head_dim, nb, kv.k.data + kv.k_at(h, b));
      amx_pack_b(v.row(h, j0), v.row_stride, nb, p.value_dim, kv.v.data + kv.v_at(h, b));
    }
  });
  const int64_t q_blocks = (p.q_len + kFlashQueryBlock - 1) / kFlashQueryBlock;
  // As flash_attention.cpp's grain: ~1M flops per chunk at least.
  const int64_t task_flops =
      2 * std::min(p.q_len, kFlashQueryBlock) * p.kv_len * (p.head_dim + p.value_dim);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(task_flops, 1));
  parallel_for(0, p.rows() * q_blocks, grain, [&](int64_t begin, int64_t end) {
    forward_tasks(p, q, kv, out, lse, begin, end);
    amx_release();
  });
  return true;
#else
  (void)p, (void)q, (void)k, (void)v, (void)out, (void)lse;
  return false;
#endif
}

bool flash_attention_backward_bf16(const FlashAttention<float>& p, const Rows<const uint16_t>& q,
                                   const Rows<const uint16_t>& k, const Rows<const uint16_t>& v,
                                   const Rows<const uint16_t>& grad_out,
                                   const Rows<const uint16_t>& out, const float* lse,
                                   const float* grad_lse, const Rows<float>& grad_q,
                                   const Rows<float>& grad_k, const Rows<float>& grad_v) {
#if KILN_FLASH_AMX
  if (p.mod || !amx_bf16_available()) return false;
  // As flash_attention.cpp's grain.
  const int64_t task_flops = 4 * (p.heads / std::max<int64_t>(p.kv_heads, 1)) * p.q_len * p.kv_len *
                             (p.head_dim + p.value_dim);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(task_flops, 1));
  parallel_for(0, p.batch * p.kv_heads, grain, [&](int64_t begin, int64_t end) {
    backward_tasks(p, q, k, v, grad_out, out, lse, grad_lse, grad_q, grad_k, grad_v, begin, end);
    amx_release();
  });
  return true;
#else
  (void)p, (void)q, (void)k, (void)v, (void)grad_out, (void)out, (void)lse, (void)grad_lse;
  (void)grad_q, (void)grad_k, (void)grad_v;
  return false;
#endif
}

}  // namespace kiln::cpu
