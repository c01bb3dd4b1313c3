#pragma once
// bfloat16 products on Intel AMX (the tile registers of Sapphire Rapids and later): C (float32)
// = alpha * A B (+ C), with A in bfloat16 rows and B packed beforehand into the layout the tile
// multiply reads. Compiled with AMX code only in amx.cpp (under its own target options, as Note
// [ISA dispatch] in cpu_capability.h); callers check amx_bf16_available() first.
#include <cstdint>

namespace kiln::cpu {

// Whether this CPU has AMX-TILE and AMX-BF16, the operating system lets this process use the
// tile state (asked once), this build compiled amx.cpp's tiles (GCC on x86-64), and
// cpu_capability() is at least Avx512Bf16 (so KILN_CPU_CAPABILITY=avx2|avx512 turns AMX off).
bool amx_bf16_available();

// B (k x n bfloat16, as raw uint16_t bits) packed for the tile multiply: the k rows in pairs,
// interleaved, element (p, j) at packed[(p / 2) * 2 * n_pad + 2 * j + p % 2], with n_pad = n
// rounded up to 16 and k rounded up to 32 rows; the padding is zero.
inline int64_t amx_packed_cols(int64_t n) { return (n + 15) / 16 * 16; }
inline int64_t amx_packed_size(int64_t k, int64_t n) {
  return (k + 31) / 32 * 32 * amx_packed_cols(n);
}
// From B(p, j) = b[p * ld + j] (row-major k x n).
void amx_pack_b(const uint16_t* b, int64_t ld, int64_t k, int64_t n, uint16_t* packed);
// From B(p, j) = b[j * ld + p]: B is the transpose of an n x k row-major matrix (the keys of
// Q K^T, rows [len, dim]).
void amx_pack_b_transposed(const uint16_t* b, int64_t ld, int64_t k, int64_t n, uint16_t* packed);

// C (m x n floats, leading dimension ldc) = alpha * A B, plus C's old value if accumulate, with
// A(i, p) = a[i * lda + p] (bfloat16 bits) and B packed by amx_pack_b* for b_cols >= n columns
// (0: n) and at least k rows (rows past k, up to a multiple of 32, are read and multiplied by
// zeros, so they must be finite). Any m, n and k, in blocks of 32 x 32 of C (the flash kernel's
// are 64 x 128). A is read in place when m is a multiple of 16 and k of 32 (otherwise copied,
// zero-padded), and C's whole 16 x 16 tiles are written in place when alpha == 1 (other tiles go
// through a buffer). Rows of A, B and C that start on 64-byte boundaries (a tile row) run about
// twice as fast.
struct AmxGemm {
  int64_t m, n, k;
  const uint16_t* a;
  int64_t lda;
  const uint16_t* b;
  int64_t b_cols;
  float* c;
  int64_t ldc;
  float alpha = 1;
  bool accumulate = false;
};
// Requires amx_bf16_available(). The calling thread's tile configuration is loaded on its first
// product (and again if other code has changed or released it).
void amx_bf16_gemm(const AmxGemm& g);

// Returns the calling thread's tile state to its initial (unused) state, which the kernel then
// need not save on context switches; the next product loads the configuration again.
void amx_release();

}  // namespace kiln::cpu
