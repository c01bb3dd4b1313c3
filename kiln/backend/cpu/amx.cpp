#include "kiln/backend/cpu/amx.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kiln/backend/cpu/cpu_capability.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define KILN_AMX 1
#else
#define KILN_AMX 0
#endif

namespace kiln::cpu {
namespace {

#if KILN_AMX
bool detect_amx() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;
  if ((d & (kAmxBf16 | kAmxTile)) != (kAmxBf16 | kAmxTile)) return false;
  unsigned xcr0_low, xcr0_high;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  constexpr unsigned kTileState = (1u << 17) | (1u << 18);  // XTILECFG, XTILEDATA
  if ((xcr0_low & kTileState) != kTileState) return false;
  // Linux hands out the 8 KiB tile state only to processes that ask for it (once, for all
  // threads).
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#else
bool detect_amx() { return false; }
#endif

}  // namespace

bool amx_bf16_available() {
  static const bool supported = detect_amx();
  return supported && cpu_capability() >= CpuCapability::Avx512Bf16;
}

void amx_pack_b(const uint16_t* b, int64_t ld, int64_t k, int64_t n, uint16_t* packed) {
  const int64_t n_pad = amx_packed_cols(n);
  std::fill(packed, packed + amx_packed_size(k, n), uint16_t{0});
  for (int64_t p = 0; p < k; p += 2) {
    uint16_t* out = packed + p * n_pad;
    const uint16_t *r0 = b + p * ld, *r1 = r0 + ld;
    if (p + 1 < k)
      for (int64_t j = 0; j < n; ++j) {
        out[2 * j] = r0[j];
        out[2 * j + 1] = r1[j];
      }
    else
      for (int64_t j = 0; j < n; ++j) out[2 * j] = r0[j];
  }
}

void amx_pack_b_transposed(const uint16_t* b, int64_t ld, int64_t k, int64_t n, uint16_t* packed) {
  const int64_t n_pad = amx_packed_cols(n);
  std::fill(packed, packed + amx_packed_size(k, n), uint16_t{0});
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t* col = b + j * ld;
    uint16_t* out = packed + 2 * j;
    for (int64_t p = 0; p + 1 < k; p += 2) {
      out[p * n_pad] = col[p];
      out[p * n_pad + 1] = col[p + 1];
    }
    if (k % 2) out[(k - 1) * n_pad] = col[k - 1];
  }
}

#if KILN_AMX
#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 0;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// One shape for every product: eight 16 x 64-byte tiles, C in tmm0-3 (a 2 x 2 block of 16 x 16
// floats), A in tmm4-5, B in tmm6-7. Edges are zero-padded instead of reshaped, so a thread
// loads its configuration once.
TileConfig full_tiles() {
  TileConfig t;
  t.palette = 1;
  for (int i = 0; i < 8; ++i) {
    t.colsb[i] = 64;
    t.rows[i] = 16;
  }
  return t;
}

// The configuration is per thread; other AMX code in the thread (oneDNN) may have replaced or
// released it since, so the cached flag is only trusted while the live one matches.
thread_local bool t_configured = false;

void ensure_tiles() {
  static const TileConfig want = full_tiles();
  if (t_configured) {
    TileConfig now;
    _tile_storeconfig(&now);
    if (std::memcmp(&now, &want, sizeof now) == 0) return;
  }
  _tile_loadconfig(&want);
  t_configured = true;
}

// The tile intrinsics take register numbers as literals; these switches fold away once t is a
// constant.
#define KILN_AMX_TILE_SWITCH(op) \
  switch (t) {                   \
    case 0:                      \
      op(0);                     \
      break;                     \
    case 1:                      \
      op(1);                     \
      break;                     \
    case 2:                      \
      op(2);                     \
      break;                     \
    default:                     \
      op(3);                     \
      break;                     \
  }

inline void c_zero(int t) {
#define KILN_AMX_OP(i) _tile_zero(i)
  KILN_AMX_TILE_SWITCH(KILN_AMX_OP)
#undef KILN_AMX_OP
}
inline void c_load(int t, const float* p, int64_t ld) {
#define KILN_AMX_OP(i) _tile_loadd(i, p, ld * 4)
  KILN_AMX_TILE_SWITCH(KILN_AMX_OP)
#undef KILN_AMX_OP
}
inline void c_store(int t, float* p, int64_t ld) {
#define KILN_AMX_OP(i) _tile_stored(i, p, ld * 4)
  KILN_AMX_TILE_SWITCH(KILN_AMX_OP)
#undef KILN_AMX_OP
}
#undef KILN_AMX_TILE_SWITCH

struct Plan {
  const uint16_t* a;
  int64_t lda;
  const uint16_t* b;
  int64_t b_pitch;  // elements from one packed pair of rows to the next
  int64_t chunks;   // of 32 k
  float* c;
  int64_t ldc;
  int64_t m, n;
  float alpha;
  bool accumulate;
};

// How many of the 16 rows (or columns) of a tile at offset `at` lie inside `total`.
inline int64_t span(int64_t at, int64_t total) { return std::min<int64_t>(16, total - at); }

// The R x C tiles of C at rows i.., columns j.. (R, C in {1, 2}).
template <int R, int C>
void tile_block(const Plan& g, int64_t i, int64_t j) {
  float edge[16 * 16];
  bool direct[4];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const int t = 2 * r + c;
      const int64_t ti = i + 16 * r, tj = j + 16 * c;
      direct[t] = g.alpha == 1 && span(ti, g.m) == 16 && span(tj, g.n) == 16;
      if (direct[t] && g.accumulate)
        c_load(t, g.c + ti * g.ldc + tj, g.ldc);
      else
        c_zero(t);
    }
  const uint16_t* a = g.a + i * g.lda;
  const uint16_t* b = g.b + 2 * j;
  for (int64_t kc = 0; kc < g.chunks; ++kc) {
    const uint16_t* ak = a + 32 * kc;
    const uint16_t* bk = b + 16 * kc * g.b_pitch;
    _tile_loadd(4, ak, g.lda * 2);
    if constexpr (R == 2) _tile_loadd(5, ak + 16 * g.lda, g.lda * 2);
    _tile_loadd(6, bk, g.b_pitch * 2);
    if constexpr (C == 2) _tile_loadd(7, bk + 32, g.b_pitch * 2);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (C == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (R == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (R == 2 && C == 2) _tile_dpbf16ps(3, 5, 7);
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const int t = 2 * r + c;
      const int64_t ti = i + 16 * r, tj = j + 16 * c;
      float* out = g.c + ti * g.ldc + tj;
      if (direct[t]) {
        c_store(t, out, g.ldc);
        continue;
      }
      c_store(t, edge, 16);
      const int64_t rows = span(ti, g.m), cols = span(tj, g.n);
      if (rows <= 0 || cols <= 0) continue;
      const __mmask16 lanes = static_cast<__mmask16>((1u << cols) - 1);
      const __m512 alpha = _mm512_set1_ps(g.alpha);
      for (int64_t x = 0; x < rows; ++x) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(edge + 16 * x), alpha);
        if (g.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes, out + x * g.ldc));
        _mm512_mask_storeu_ps(out + x * g.ldc, lanes, v);
      }
    }
}

thread_local std::vector<uint16_t> t_padded_a;

}  // namespace

void amx_bf16_gemm(const AmxGemm& g) {
  if (g.m <= 0 || g.n <= 0) return;
  ensure_tiles();
  const int64_t m_pad = (g.m + 15) / 16 * 16, k_pad = (g.k + 31) / 32 * 32;
  Plan plan;
  plan.a = g.a;
  plan.lda = g.lda;
  plan.b = g.b;
  plan.b_pitch = 2 * amx_packed_cols(g.b_cols > 0 ? g.b_cols : g.n);
  plan.chunks = k_pad / 32;
  plan.c = g.c;
  plan.ldc = g.ldc;
  plan.m = g.m;
  plan.n = g.n;
  plan.alpha = g.alpha;
  plan.accumulate = g.accumulate;
  if (g.m != m_pad || g.k != k_pad) {
    // Tiles read whole 16 x 32 blocks of A: copy it with zeros past its rows and columns.
    // (64-byte aligned: a tile row that straddles two cache lines loads at half the speed.)
    std::vector<uint16_t>& buffer = t_padded_a;
    buffer.resize(m_pad * k_pad + 32);
    uint16_t* pad = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64 / 2;
    std::fill(pad, pad + m_pad * k_pad, uint16_t{0});
    for (int64_t i = 0; i < g.m; ++i)
      std::copy(g.a + i * g.lda, g.a + i * g.lda + g.k, pad + i * k_pad);
    plan.a = pad;
    plan.lda = k_pad;
  }
  const int64_t n_pad = amx_packed_cols(g.n);
  int64_t i = 0;
  for (; i + 32 <= m_pad; i += 32) {
    int64_t j = 0;
    for (; j + 32 <= n_pad; j += 32) tile_block<2, 2>(plan, i, j);
    if (j < n_pad) tile_block<2, 1>(plan, i, j);
  }
  if (i < m_pad) {
    int64_t j = 0;
    for (; j + 32 <= n_pad; j += 32) tile_block<1, 2>(plan, i, j);
    if (j < n_pad) tile_block<1, 1>(plan, i, j);
  }
}

void amx_release() {
  if (!t_configured) return;
  _tile_release();
  t_configured = false;
}

#pragma GCC pop_options
#else

void amx_bf16_gemm(const AmxGemm&) {}
void amx_release() {}

#endif

}  // namespace kiln::cpu
