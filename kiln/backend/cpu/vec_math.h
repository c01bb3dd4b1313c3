#pragma once
// Float vectors (GCC/Clang vector extensions; 8 lanes with AVX, else 4) and the transcendental
// functions the CPU kernels need on them. std::exp and friends do not vectorise without
// -ffast-math, and a scalar formula with clamps compiles to branches, so these are written on
// explicit vectors, branch-free: each lane computes every case and a select keeps one. Accuracy
// (checked against double precision in tests/backend/vec_math_test.cpp): a few float ulps.
#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

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
// a * b + c, fused where the CPU has FMA (the ISO C++ mode we build in does not contract a * b
// + c by itself).
inline fvec fma_vec(fvec a, fvec b, fvec c) {
#if defined(__FMA__) && defined(__AVX__)
  return __builtin_ia32_vfmaddps256(a, b, c);
#elif defined(__FMA__)
  return __builtin_ia32_vfmaddps(a, b, c);
#else
  return a * b + c;
#endif
}
// c0 x^n + c1 x^(n-1) + ... + cn by Horner's rule.
template <class... C>
inline fvec horner(fvec x, float c0, C... c) {
  fvec p = splat(c0);
  ((p = fma_vec(p, x, splat(c))), ...);
  return p;
}
inline fvec abs_vec(fvec x) {
  return reinterpret_cast<fvec>(reinterpret_cast<uvec>(x) & 0x7fffffffu);
}
// |magnitude| with the sign bit of `sign`.
inline fvec copysign_vec(fvec magnitude, fvec sign) {
  const uvec s = reinterpret_cast<uvec>(sign) & 0x80000000u;
  return reinterpret_cast<fvec>((reinterpret_cast<uvec>(magnitude) & 0x7fffffffu) | s);
}
inline fvec min_vec(fvec a, float hi) { return a < hi ? a : splat(hi); }  // NaN -> hi
inline fvec keep_nan(fvec x, fvec result) { return x != x ? x : result; }

// exp(r) for |r| <= ln2/2 + tail by its Taylor polynomial to degree 7, where x = n ln2 + r with
// n returned (rounded to nearest) and ln2 in two parts so that n * ln2 loses nothing. tail is a
// small correction that x + tail would round away (the low part of an exactly computed
// argument).
inline fvec exp_reduced(fvec x, fvec tail, fvec& n) {
  // Round to nearest by adding and removing 1.5 * 2^23.
  n = fma_vec(x, splat(1.44269504088896341f), splat(12582912.0f)) - 12582912.0f;
  const fvec r =
      fma_vec(n, splat(2.12194440054690583e-4f), fma_vec(n, splat(-0.693359375f), x)) + tail;
  return horner(r, 1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f);
}

// exp(x + tail) within about 1.5 ulp: exp_reduced times 2^n applied as two factors
// 2^(n/2) 2^(n-n/2) built in the exponent bits (so subnormal results and overflow come out
// right). NaN stays NaN.
inline fvec exp_vec(fvec x, fvec tail = fvec{}) {
  const fvec lo = splat(-104.0f), hi = splat(88.75f);
  fvec xc = x < lo ? lo : x;  // where the result is 0 or inf anyway
  xc = xc > hi ? hi : xc;
  fvec n;
  const fvec p = exp_reduced(xc, tail, n);
  const ivec ni = __builtin_convertvector(n, ivec);  // NaN lanes: p is NaN already
  const ivec n1 = ni >> 1, n2 = ni - n1;
  const fvec s1 = reinterpret_cast<fvec>((n1 + 127) << 23);
  const fvec s2 = reinterpret_cast<fvec>((n2 + 127) << 23);
  return p * s1 * s2;
}

// exp(x + tail) where the caller guarantees -87 <= x <= 0: the result is a normal float, so
// there is nothing to clamp and the scale is one factor. With AVX2 the reduction is finer:
// x = (8m + j) ln2/8 + r with |r| <= ln2/16, exp(x) = 2^m 2^(j/8) exp(r), 2^(j/8) from an
// eight-entry table in a register and exp(r) from a degree-3 fit (tools/vec_math/fit_erf.py,
// within 1e-7): three multiply-adds fewer than exp_reduced's polynomial.
inline fvec exp_normal_range(fvec x, fvec tail) {
#if defined(__AVX2__)
  // k's low mantissa bits hold n = round(8x / ln2) (as in exp_reduced's rounding).
  const fvec k = fma_vec(x, splat(11.5415603271117f), splat(12582912.0f));
  const fvec n = k - 12582912.0f;
  const fvec r =
      fma_vec(n, splat(2.65243050068363229e-5f), fma_vec(n, splat(-0.086669921875f), x)) + tail;
  const fvec p = horner(r, 1.666463315e-01f, 5.000813603e-01f, 1.0f, 1.0f);
  const __m256 table = _mm256_setr_ps(1.0f, 1.0905077326652577f, 1.1892071150027210f,
                                      1.2968395546510096f, 1.4142135623730951f, 1.5422108254079407f,
                                      1.6817928305074290f, 1.8340080864093424f);
  const ivec bits = reinterpret_cast<ivec>(k);
  const ivec fraction = reinterpret_cast<ivec>(
      _mm256_permutevar8x32_ps(table, reinterpret_cast<__m256i>(bits)));  // 2^(j/8), j = n & 7
  const ivec m = (bits - 0x4b400000) >> 3;                                // floor(n / 8)
  return p * reinterpret_cast<fvec>(fraction + (m << 23));
#else
  fvec n;
  const fvec p = exp_reduced(x, tail, n);
  return p * reinterpret_cast<fvec>((__builtin_convertvector(n, ivec) + 127) << 23);
#endif
}

// exp(x) - 1 without cancellation near 0: the Taylor polynomial without its constant term
// where |x| <= ln2/2, exp(x) - 1 elsewhere (where the subtraction loses under 2 ulps).
inline fvec expm1_vec(fvec x) {
  const fvec p =
      horner(x, 1.0f / 40320, 1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f);
  return abs_vec(x) < 0.34657359f ? p * x : exp_vec(x) - 1.0f;
}

// log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s) with s = (m-1)/(m+1),
// |s| <= 0.172, by the series 2 (s + s^3/3 + ... + s^11/11). Subnormals are scaled up first;
// log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
inline fvec log_vec(fvec x) {
  const auto subnormal = x < 1.17549435e-38f;
  const fvec xs = subnormal ? x * 8388608.0f : x;  // * 2^23
  const ivec bits = reinterpret_cast<ivec>(xs);
  ivec e = ((bits >> 23) & 0xff) - 127;
  e = subnormal ? e - 23 : e;
  fvec m = reinterpret_cast<fvec>((bits & 0x7fffff) | 0x3f800000);  // [1, 2)
  const auto high = m > 1.41421356f;
  m = high ? m * 0.5f : m;
  e = high ? e + 1 : e;
  const fvec s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  const fvec p = horner(s2, 2.0f / 11, 2.0f / 9, 2.0f / 7, 2.0f / 5, 2.0f / 3, 2.0f);
  const fvec ef = __builtin_convertvector(e, fvec);
  const fvec y = (s * p + ef * -2.12194440054690583e-4f) + ef * 0.693359375f;
  fvec r = x == 0.0f ? splat(-__builtin_inff()) : y;
  r = x < 0.0f ? splat(__builtin_nanf("")) : r;
  r = x == __builtin_inff() ? x : r;
  return keep_nan(x, r);
}

// -c a^2 as hi + lo without rounding error, for a >= 0 and c a power of two. With FMA, lo is
// the rounding error of hi; without, a = h + l with h the top 12 bits of a, so -c h^2 is exact
// and lo = -c l (a + h) is the rest. exp(-c a^2) from these loses nothing to the rounding of a^2
// (which exp would magnify a^2 times).
struct SplitSquare {
  fvec hi, lo;
};
inline SplitSquare neg_scaled_square(fvec a, float c) {
#if defined(__FMA__)
  const fvec na = a * -c, hi = na * a;
  return {hi, fma_vec(na, a, -hi)};
#else
  const fvec h = reinterpret_cast<fvec>(reinterpret_cast<uvec>(a) & 0xfffff000u);
  return {-c * (h * h), -c * ((a - h) * (a + h))};
#endif
}

// exp(-c z^2) for c = 1 or 1/2. Beyond |z| = 16 the result is 0 anyway.
inline fvec exp_neg_square(fvec z, float c) {
  const SplitSquare sq = neg_scaled_square(min_vec(abs_vec(z), 16.0f), c);
  return keep_nan(z, exp_vec(sq.hi, sq.lo));
}

inline fvec sigmoid_vec(fvec x) { return 1.0f / (1.0f + exp_vec(-x)); }

// tanh(|x|) = e / (e + 2) with e = expm1(2|x|), exact to float beyond |x| = 9.
inline fvec tanh_vec(fvec x) {
  const fvec e = expm1_vec(2.0f * min_vec(abs_vec(x), 9.0f));
  return keep_nan(x, copysign_vec(e / (e + 2.0f), x));
}

// erf(z) and erfc(z) of z >= 0 (or NaN), given exp(-z^2) (which callers compute from their own
// argument, see exp_neg_square). Below 1: erf(z) = z P(z^2); from 1: erfc(z) = exp(-z^2) Q(1/z).
// P and Q are least-squares fits made by tools/vec_math/fit_erf.py; erf is within 1e-7
// everywhere, erfc within 6 ulps up to z = 6 (erfc(6) = 2e-17) and 0 from z = 10.
struct ErfParts {
  fvec erf, erfc;
};
inline ErfParts erf_parts(fvec z, fvec exp_neg_z2) {
  const fvec p = horner(z * z, 7.898209878e-05f, -8.024353883e-04f, 5.190053489e-03f,
                        -2.685480937e-02f, 1.128361225e-01f, -3.761262894e-01f, 1.128379226e+00f);
  const fvec small_erf = z * p;
  const fvec t = 1.0f / min_vec(z, 10.0f);
  const fvec q = horner(t, 5.726822838e-02f, -3.240049481e-01f, 7.777915001e-01f, -9.902784824e-01f,
                        6.160570383e-01f, 2.704717405e-02f, -3.052333295e-01f, 5.289123394e-03f,
                        5.636232495e-01f, 2.410332672e-05f);
  const fvec large_erfc = z < 10.0f ? exp_neg_z2 * q : fvec{};
  const auto small = z < 1.0f;
  return {small ? small_erf : 1.0f - large_erfc, small ? 1.0f - small_erf : large_erfc};
}
inline fvec erf_vec(fvec x) {
  const fvec z = abs_vec(x);
  return keep_nan(x, copysign_vec(erf_parts(z, exp_neg_square(z, 1.0f)).erf, x));
}

// The standard normal distribution at x: Phi(x) = erfc(-x / sqrt(2)) / 2 and exp(-x^2 / 2) (the
// density without its 1 / sqrt(2 pi)). One formula for every z = |x| / sqrt(2): erfc(z) / 2 =
// t exp(-z^2) S(t) with t = 1 / (1 + z/2) and S a fit by tools/vec_math/fit_erf.py on the t of
// |x| <= 13 (within 3e-7). exp(-z^2) comes from x itself, not from the rounded z, so the far
// negative tail keeps its relative accuracy. Beyond |x| = 13, Phi is 0 or 1 to float precision
// (and exp(-x^2 / 2) is taken as 0); below it exp(-x^2 / 2) >= exp(-84.5) is a normal float,
// which spares the general exp its clamps. NaN comes out of t.
struct NormalAt {
  fvec cdf, exp_neg_half_square;
};
inline NormalAt normal_at(fvec x) {
  const fvec a = abs_vec(x);
  const SplitSquare sq = neg_scaled_square(min_vec(a, 13.0f), 0.5f);
  const fvec e = a < 13.0f ? exp_normal_range(sq.hi, sq.lo) : fvec{};
  const fvec t = 1.0f / fma_vec(a, splat(0.35355339059327376f), splat(1.0f));
  const fvec s = horner(t, -2.989803441e-02f, 1.439747959e-01f, -2.468977273e-01f, 1.425617337e-01f,
                        -1.556046400e-02f, 1.022112668e-01f, 1.213548258e-01f, 1.412115544e-01f,
                        1.410420239e-01f);
  const fvec half_erfc = t * e * s;
  return {x >= 0.0f ? 1.0f - half_erfc : half_erfc, e};
}
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
// gelu(x) = x Phi(x) and its derivative Phi(x) + x phi(x).
inline fvec gelu_vec(fvec x) { return x * normal_at(x).cdf; }
inline fvec gelu_grad_vec(fvec x) {
  const NormalAt n = normal_at(x);
  return fma_vec(x * kInvSqrt2Pi, n.exp_neg_half_square, n.cdf);
}
// The tanh approximation: 0.5 x (1 + tanh(y)) = x sigmoid(2y), y = sqrt(2/pi) (x + 0.044715 x^3).
constexpr float kGeluBeta = 0.79788456080286536f, kGeluKappa = 0.044715f;
inline fvec gelu_tanh_vec(fvec x) {
  return x * sigmoid_vec(2.0f * kGeluBeta * (x + kGeluKappa * x * x * x));
}
inline fvec gelu_tanh_grad_vec(fvec x) {
  const fvec s = sigmoid_vec(2.0f * kGeluBeta * (x + kGeluKappa * x * x * x));
  return s + x * s * (1.0f - s) * (2.0f * kGeluBeta) * (1.0f + 3.0f * kGeluKappa * x * x);
}

inline float exp_scalar(float x) { return exp_vec(splat(x))[0]; }

// Loads and stores of kVec consecutive elements as floats.
inline fvec load_vec(const float* p) {
  fvec v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline fvec load_vec(const BFloat16* p) {
#if defined(__AVX2__)
  // One widening load; GCC lowers the generic conversion below to two halves and an insert.
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return reinterpret_cast<fvec>(_mm256_slli_epi32(w, 16));
#else
  u16vec h;
  std::memcpy(&h, p, sizeof(h));
  return reinterpret_cast<fvec>(__builtin_convertvector(h, uvec) << 16);
#endif
}
inline fvec load_vec(const Half* p) {
  fvec v;
  for (int k = 0; k < kVec; ++k) v[k] = static_cast<float>(p[k]);
  return v;
}
inline void store_vec(float* p, fvec v) { std::memcpy(p, &v, sizeof(v)); }
// BFloat16(float) on every lane (round to nearest even, NaN to the canonical NaN), in the low
// 16 bits of each lane.
inline uvec bfloat16_bits(fvec v) {
  const uvec u = reinterpret_cast<uvec>(v);
  const uvec rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return v != v ? uvec{} + 0x7fc0u : rounded;
}
inline void store_vec(BFloat16* p, fvec v) {
  const u16vec h = __builtin_convertvector(bfloat16_bits(v), u16vec);
  std::memcpy(static_cast<void*>(p), &h, sizeof(h));
}
template <class T>
inline void store_vec(T* p, fvec v) {
  for (int k = 0; k < kVec; ++k) p[k] = T(v[k]);
}
// 2 kVec consecutive elements as two float vectors for the vector loops, and the inverse store.
// Which element lands in which lane is the pair's business: elementwise code between load_pair
// and store_pair does not see it. With AVX2, 16 bfloat16 values are widened by two in-lane
// unpacks (a: elements 0-3 and 8-11, b: 4-7 and 12-15) and narrowed by one in-lane pack, which
// puts them back in order: a load and a shift per vector and a permute per store fewer than
// converting each vector in order.
template <class T>
inline void load_pair(const T* p, fvec& a, fvec& b) {
  a = load_vec(p);
  b = load_vec(p + kVec);
}
template <class T>
inline void store_pair(T* p, fvec a, fvec b) {
  store_vec(p, a);
  store_vec(p + kVec, b);
}
#if defined(__AVX2__)
inline void load_pair(const BFloat16* p, fvec& a, fvec& b) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i zero = _mm256_setzero_si256();
  a = reinterpret_cast<fvec>(_mm256_unpacklo_epi16(zero, v));
  b = reinterpret_cast<fvec>(_mm256_unpackhi_epi16(zero, v));
}
inline void store_pair(BFloat16* p, fvec a, fvec b) {
  const __m256i packed = _mm256_packus_epi32(reinterpret_cast<__m256i>(bfloat16_bits(a)),
                                             reinterpret_cast<__m256i>(bfloat16_bits(b)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), packed);
}
#endif

}  // namespace kiln::cpu
