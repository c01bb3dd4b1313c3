#pragma once
// Float vectors (GCC/Clang vector extensions; 8 lanes with AVX, else 4) for the fused kernels that
// need exp (softmax, log_softmax, logsumexp). std::exp does not vectorise without -ffast-math, and
// an exp with clamps written on scalars is turned into branches, so these are explicit vectors.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kiln/core/half.h"

namespace kiln::cpu {

#if defined(__AVX__)
constexpr int kVec = 8;
#else
constexpr int kVec = 4;
#endif
using fvec = float __attribute__((vector_size(kVec * 4)));
using ivec = int32_t __attribute__((vector_size(kVec * 4)));
using uvec = uint32_t __attribute__((vector_size(kVec * 4)));
using u16vec = uint16_t __attribute__((vector_size(kVec * 2)));

inline fvec splat(float v) { return fvec{} + v; }

// exp of each lane within about 1.5 ulp: x = n ln2 + r with |r| <= ln2/2, exp(r) by its Taylor
// polynomial to degree 7, times 2^n applied as two factors 2^(n/2) 2^(n-n/2) built in the
// exponent bits (so subnormal results and overflow come out right). NaN stays NaN.
inline fvec exp_vec(fvec x) {
  const fvec lo = splat(-104.0f), hi = splat(88.75f);
  fvec xc = x < lo ? lo : x;  // where the result is 0 or inf anyway
  xc = xc > hi ? hi : xc;
  // Round to nearest by adding and removing 1.5 * 2^23.
  const fvec n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const fvec r = (xc - n * 0.693359375f) - n * -2.12194440054690583e-4f;  // ln2 in two parts
  fvec p = splat(1.0f / 5040);
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const ivec ni = __builtin_convertvector(n, ivec);  // NaN lanes: p is NaN already
  const ivec n1 = ni >> 1, n2 = ni - n1;
  const fvec s1 = reinterpret_cast<fvec>((n1 + 127) << 23);
  const fvec s2 = reinterpret_cast<fvec>((n2 + 127) << 23);
  return p * s1 * s2;
}

inline float exp_scalar(float x) { return exp_vec(splat(x))[0]; }

// Loads and stores of kVec consecutive elements as floats.
inline fvec load_vec(const float* p) {
  fvec v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline fvec load_vec(const BFloat16* p) {
  u16vec h;
  std::memcpy(&h, p, sizeof(h));
  return reinterpret_cast<fvec>(__builtin_convertvector(h, uvec) << 16);
}
inline fvec load_vec(const Half* p) {
  fvec v;
  for (int k = 0; k < kVec; ++k) v[k] = static_cast<float>(p[k]);
  return v;
}
inline void store_vec(float* p, fvec v) { std::memcpy(p, &v, sizeof(v)); }
// Round to nearest even, NaN to the canonical NaN: BFloat16(float) on every lane.
inline void store_vec(BFloat16* p, fvec v) {
  const uvec u = reinterpret_cast<uvec>(v);
  const uvec rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uvec bits = v != v ? uvec{} + 0x7fc0u : rounded;
  const u16vec h = __builtin_convertvector(bits, u16vec);
  std::memcpy(static_cast<void*>(p), &h, sizeof(h));
}
template <class T>
inline void store_vec(T* p, fvec v) {
  for (int k = 0; k < kVec; ++k) p[k] = T(v[k]);
}

// max that keeps NaN (as torch.max does), on scalars.
template <class T>
inline T max_nan(T a, T b) {
  const T m = b > a ? b : a;
  return b != b ? b : m;
}

// Lane-wise max that keeps NaN (as torch.max does), and horizontal max / sum.
inline fvec max_vec(fvec a, fvec b) { return (b > a) | (b != b) ? b : a; }
inline float hmax(fvec v) {
  float m = v[0];
  for (int k = 1; k < kVec; ++k) m = (v[k] > m || v[k] != v[k]) ? v[k] : m;
  return m;
}
inline double hsum(fvec v) {
  double s = 0;
  for (int k = 0; k < kVec; ++k) s += v[k];
  return s;
}

}  // namespace kiln::cpu
