#pragma once
// CUDA kernels of the random ops: uniform_, normal_, exponential_, random_, bernoulli_,
// bernoulli, rand, randn, randint and native_dropout. They draw from the output device's
// generator and compute every element from the same Philox block and word as the CPU kernels
// (Note [Random streams] in kiln/core/generator.h), so a seed gives the same numbers on both
// devices: integers, masks and uniforms bit for bit, values that go through log, sin or cos to
// the last ulps of each math library. multinomial and randperm run through the CPU fallback.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

enum class RandomKernel {
  Uniform,          // (double from, double to): uniform_ and rand
  Normal,           // (double mean, double std): normal_ and randn
  Exponential,      // (double lambd)
  Integers,         // (int64_t from, uint64_t range): random_ and randint, from + bits % range
  Bernoulli,        // (double p): 1 where u < p
  BernoulliTensor,  // (const T* probs): 1 where u < probs[i], probs contiguous
  DropoutNoise,     // (double p, double keep_scale): keep_scale where u >= p, else 0
};

// The kernel `name` that fills `dtype` elements from a draw with `words` (1 or 2) 32-bit words per
// element:
//   (T* out, int64_t n, uint64_t seed, uint64_t offset, <kind's arguments above>)
// out is contiguous and element i takes its words from block offset + i * words / 4 of seed's
// stream. Two words make a 53-bit uniform (or a 64-bit integer); one word a uniform with 24 bits
// (uniform_: dtype's significand bits). DropoutNoise takes one word per element whatever dtype.
std::string random_source(RandomKernel kind, ScalarType dtype, int words, const std::string& name);

// The kernel `name` that makes native_dropout's output from contiguous x and its noise:
//   (const T* x, const T* noise, T* out, int64_t n, int64_t inner, double alpha, double offset)
// out[i] = x[i] * m, or (x[i] + alpha) * m + offset with `alpha_dropout`, where
// m = noise[i / inner] (inner > 1 for the feature variants: one noise value per channel).
std::string dropout_apply_source(ScalarType dtype, bool alpha_dropout, const std::string& name);

// Sets the CUDA kernels of the ops above.
void register_random_kernels();

}  // namespace kiln::cuda
