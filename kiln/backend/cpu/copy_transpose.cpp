#include "kiln/backend/cpu/copy_transpose.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "kiln/backend/cpu/parallel.h"

namespace kiln::cpu {
namespace {

struct TransposeGeometry {
  int64_t rows = 0, cols = 0;        // rows: src's dense dim; cols: dst's dense (last) dim
  int64_t dst_row = 0, src_col = 0;  // dst stride of a row, src stride of a column
  std::vector<int64_t> outer_sizes;  // the other dims
  std::vector<int64_t> outer_dst, outer_src;
};

// dst[r * dst_row + c] = src[c * src_col + r] for r in [r0, r1), c in [c0, c1).
template <class E>
void copy_block(E* __restrict dst, const E* __restrict src, const TransposeGeometry& g, int64_t r0,
                int64_t r1, int64_t c0, int64_t c1) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) dst[r * g.dst_row + c] = src[c * g.src_col + r];
}

#if defined(__AVX__)
// The same for an 8 x 8 block of 4-byte elements: eight row loads, the transpose in registers
// (unpack, shuffle, lane permute; bit moves only, so any 4-byte type and NaN payloads pass
// unchanged), eight row stores.
inline void transpose_8x8(const float* s, int64_t ss, float* d, int64_t ds) {
  __m256 r[8], t[8], u[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * ss);
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    u[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
    u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xee);
    u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
    u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xee);
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(d + k * ds, _mm256_permute2f128_ps(u[k], u[k + 4], 0x20));
    _mm256_storeu_ps(d + (k + 4) * ds, _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
  }
}
constexpr bool kVectorTranspose = true;
#else
constexpr bool kVectorTranspose = false;
#endif

// One tile: 8 x 8 register transposes where they fit (4-byte elements with AVX), element by
// element elsewhere.
template <class E>
void copy_tile(E* dst, const E* src, const TransposeGeometry& g, int64_t r0, int64_t r1, int64_t c0,
               int64_t c1) {
  int64_t r_full = r0, c_full = c0;
#if defined(__AVX__)
  if constexpr (sizeof(E) == 4) {
    r_full = r0 + (r1 - r0) / 8 * 8;
    c_full = c0 + (c1 - c0) / 8 * 8;
    for (int64_t c = c0; c < c_full; c += 8)
      for (int64_t r = r0; r < r_full; r += 8)
        transpose_8x8(reinterpret_cast<const float*>(src + c * g.src_col + r), g.src_col,
                      reinterpret_cast<float*>(dst + r * g.dst_row + c), g.dst_row);
  }
#endif
  copy_block(dst, src, g, r0, r_full, c_full, c1);
  copy_block(dst, src, g, r_full, r1, c0, c1);
}

template <class E>
void copy_tiles(char* dst_base, const char* src_base, const TransposeGeometry& g) {
  // Tile side: 32 with register transposes; 16 element by element, where a 32-row tile of a
  // wide matrix maps too many rows to the same L1 sets.
  constexpr int64_t tile = kVectorTranspose && sizeof(E) == 4 ? 32 : 16;
  int64_t outer = 1;
  for (int64_t s : g.outer_sizes) outer *= s;
  const int64_t row_tiles = (g.rows + tile - 1) / tile;
  const int64_t items = outer * row_tiles;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, tile * g.cols));
  parallel_for(0, items, grain, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t rest = item / row_tiles, dst_off = 0, src_off = 0;
      for (int64_t d = static_cast<int64_t>(g.outer_sizes.size()) - 1; d >= 0; --d) {
        const int64_t i = rest % g.outer_sizes[d];
        rest /= g.outer_sizes[d];
        dst_off += i * g.outer_dst[d];
        src_off += i * g.outer_src[d];
      }
      E* dst = reinterpret_cast<E*>(dst_base) + dst_off;
      const E* src = reinterpret_cast<const E*>(src_base) + src_off;
      const int64_t r0 = (item % row_tiles) * tile, r1 = std::min(g.rows, r0 + tile);
      for (int64_t c0 = 0; c0 < g.cols; c0 += tile)
        copy_tile(dst, src, g, r0, r1, c0, std::min(g.cols, c0 + tile));
    }
  });
}

}  // namespace

bool copy_transposed(const Tensor& dst, const Tensor& src) {
  // A source in the destination's own storage would be overwritten while it is read.
  if (dst.dtype() != src.dtype() || !dst.is_contiguous() || dst.dim() < 2 ||
      dst.sizes() != src.sizes() || dst.impl()->storage().get() == src.impl()->storage().get())
    return false;
  const int64_t item = static_cast<int64_t>(dst.element_size());
  if (item != 1 && item != 2 && item != 4 && item != 8) return false;
  // Dims of size 1 move nothing; the rest with their strides.
  std::vector<int64_t> sizes, dst_strides, src_strides;
  for (int64_t d = 0; d < dst.dim(); ++d) {
    const int64_t n = dst.size(d);
    if (n == 1) continue;
    sizes.push_back(n);
    dst_strides.push_back(dst.stride(d));
    src_strides.push_back(src.stride(d));
  }
  const int64_t last = static_cast<int64_t>(sizes.size()) - 1;
  if (last < 1 || src_strides[last] == 1 || sizes[last] < 8) return false;
  int64_t dense = -1;
  for (int64_t d = 0; d < last; ++d)
    if (src_strides[d] == 1) dense = d;
  if (dense < 0 || sizes[dense] < 8) return false;
  TransposeGeometry g;
  g.rows = sizes[dense];
  g.cols = sizes[last];
  g.dst_row = dst_strides[dense];
  g.src_col = src_strides[last];
  for (int64_t d = 0; d < last; ++d) {
    if (d == dense) continue;
    g.outer_sizes.push_back(sizes[d]);
    g.outer_dst.push_back(dst_strides[d]);
    g.outer_src.push_back(src_strides[d]);
  }
  char* out = static_cast<char*>(dst.data_ptr());
  const char* in = static_cast<const char*>(src.data_ptr());
  switch (item) {
    case 1:
      copy_tiles<uint8_t>(out, in, g);
      break;
    case 2:
      copy_tiles<uint16_t>(out, in, g);
      break;
    case 4:
      copy_tiles<uint32_t>(out, in, g);
      break;
    default:
      copy_tiles<uint64_t>(out, in, g);
      break;
  }
  return true;
}

}  // namespace kiln::cpu
