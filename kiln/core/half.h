#pragma once
// 16-bit floating point storage types. Arithmetic happens in float; these only convert.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define KILN_HD __host__ __device__
#else
#define KILN_HD
#endif

namespace kiln {

namespace detail {
KILN_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
KILN_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  KILN_HD BFloat16(float f) {  // round to nearest even; NaN stays NaN
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // One instruction on the GPU (the bit arithmetic below costs about a dozen).
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(x) : "f"(f));
    return;
#endif
    uint32_t u = detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      x = 0x7fc0;
    } else {
      x = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  KILN_HD operator float() const { return detail::bits_float(static_cast<uint32_t>(x) << 16); }
};

struct Half {
  uint16_t x = 0;
  Half() = default;
#if defined(__CUDA_ARCH__)
  KILN_HD Half(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(f)); }
  KILN_HD operator float() const {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
    return f;
  }
#else
  KILN_HD Half(float f) : x(from_float(f)) {}
  KILN_HD operator float() const { return to_float(x); }
#endif

  KILN_HD static uint16_t from_float(float f) {
    uint32_t u = detail::float_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)  // NaN: quiet, the payload's top bits kept (as F16C's conversion)
      return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (a < 0x38800000u) {  // subnormal or zero: let the FPU round via a magic add
      float r = detail::bits_float(a) + 0.5f;
      return static_cast<uint16_t>(sign | (detail::float_bits(r) - 0x3f000000u));
    }
    uint32_t mant_odd = (a >> 13) & 1u;
    a += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (a >> 13));
  }
  KILN_HD static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {  // subnormal: value = mant * 2^-24
      float m = static_cast<float>(mant) * 5.9604644775390625e-8f;
      return sign ? -m : m;
    }
    return detail::bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

}  // namespace kiln
