#pragma once
// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3" (SC'11), and the maps from its 32-bit words to uniform and normal
// numbers. Header-only and free of host-only code so that CUDA kernels (and generated code)
// compute exactly the same words as the CPU kernels. See Note [Random streams] in generator.h.
#include <cmath>
#include <cstdint>

#include "kiln/core/half.h"

namespace kiln::philox {

struct Words {
  uint32_t w[4];
};

namespace detail {
constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

KILN_HD inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

KILN_HD inline Words round(const Words& c, uint32_t k0, uint32_t k1) {
  uint32_t hi0, lo0, hi1, lo1;
  mulhilo(kMul0, c.w[0], hi0, lo0);
  mulhilo(kMul1, c.w[2], hi1, lo1);
  return Words{{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
}
}  // namespace detail

// The Philox4x32 bijection with 10 rounds: four 32-bit words from a 128-bit counter and a 64-bit
// key. The key is bumped by the Weyl constants between rounds.
KILN_HD inline Words philox4x32_10(Words counter, uint32_t key0, uint32_t key1) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      key0 += detail::kWeyl0;
      key1 += detail::kWeyl1;
    }
    counter = detail::round(counter, key0, key1);
  }
  return counter;
}

// Block `counter` of the stream of `seed`: key = (low, high) 32 bits of the seed, counter =
// (low, high) 32 bits of the 64-bit counter, 0, 0.
KILN_HD inline Words block(uint64_t seed, uint64_t counter) {
  return philox4x32_10(
      Words{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}},
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Philox blocks (four words each) a draw of n elements with `words` 32-bit words each consumes.
KILN_HD inline uint64_t blocks_for(int64_t n, int words) {
  return (static_cast<uint64_t>(n) * static_cast<uint64_t>(words) + 3) / 4;
}

// Uniform in [0, 1) from the top `digits` bits of one word (digits <= 24: exact in float;
// 24 for float32, 11 for float16, 8 for bfloat16, so the value is exact in the target type).
template <int Digits = 24>
KILN_HD inline float uniform_float(uint32_t word) {
  static_assert(Digits > 0 && Digits <= 24, "uniform_float: at most 24 bits are exact in float");
  return static_cast<float>(word >> (32 - Digits)) * (1.0f / static_cast<float>(1u << Digits));
}
// Uniform in [0, 1) with 53 random bits from two words (`lo` is the earlier word).
KILN_HD inline double uniform_double(uint32_t lo, uint32_t hi) {
  const uint64_t x = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}
KILN_HD inline uint64_t bits64(uint32_t lo, uint32_t hi) {
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Box-Muller: two independent standard normals from two uniforms in [0, 1).
// 1 - u1 lies in (0, 1], so the logarithm is finite.
template <class T>
KILN_HD inline void box_muller(T u1, T u2, T& z0, T& z1) {
  const T kTwoPi = T(6.283185307179586476925286766559);
  const T r = std::sqrt(T(-2) * std::log(T(1) - u1));
  const T theta = kTwoPi * u2;
  z0 = r * std::cos(theta);
  z1 = r * std::sin(theta);
}

}  // namespace kiln::philox
