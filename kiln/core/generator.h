#pragma once
// Random number generators: kiln::Generator (seed + offset into a Philox stream), the default
// generator of each device, and kiln::manual_seed.
#include <cstdint>
#include <memory>

#include "kiln/core/device.h"

namespace kiln {

// Note [Random streams]
// ~~~~~~~~~~~~~~~~~~~~~
// Every random op draws from a counter-based Philox4x32-10 stream (kiln/core/philox.h), so a
// value depends only on (seed, offset, element index), never on the device, the thread count or
// the order in which threads run. A CUDA kernel computing block b of the same stream produces
// the same 32-bit words as the CPU.
//
//  * Key and counter. A generator holds a 64-bit seed and a 64-bit offset. Block b of the
//    stream is philox4x32_10(counter = {lo32(b), hi32(b), 0, 0}, key = {lo32(seed),
//    hi32(seed)}): four 32-bit words.
//  * One op's draw. An op on n elements that needs w words per element (w = 1, or 2 for
//    float64 values and ranges wider than 2^32) reserves B = ceil(n * w / 4) blocks: it reads
//    blocks offset .. offset + B - 1, and the generator's offset advances by B. Word j of the
//    op's draw is word j % 4 of block offset + j / 4; element i (in row-major order of the
//    output, whatever its strides) owns words i*w .. i*w + w - 1. With w = 1, element i uses
//    word i % 4 of block offset + i / 4. Two words make a 64-bit value as lo | hi << 32, the
//    earlier word being lo.
//  * Words to values. Uniform [0, 1): the top 24 bits of a word times 2^-24 (float32; float16
//    and bfloat16 uniform_ use their 11 and 8 significand bits so that the value is exact), or
//    the top 53 bits of a 64-bit value times 2^-53 (float64). Normal: Box-Muller on element
//    pairs (2k, 2k+1): u1 from element 2k's words, u2 from element 2k+1's words,
//    z_2k = r cos(2 pi u2), z_2k+1 = r sin(2 pi u2), r = sqrt(-2 log(1 - u1)); a pair never
//    straddles two blocks, and an odd last element still uses the words its partner would have
//    had. Integers in [from, to): from + (bits mod (to - from)). Bernoulli: u < p. Exponential:
//    -log(1 - u) / lambda. randperm sorts the indices by a 64-bit key per index (ties by
//    index); multinomial inverts the CDF (with replacement) or takes the smallest exponential
//    race times E_j / p_j (without), both from 53-bit uniforms.
//  * The words are bit-identical on every device; values that go through log/sin/cos agree to
//    the last few ulps of each device's math library.
//  * An op reserves its blocks only when its kernel runs, after its arguments were checked: a
//    failing call or a meta-mode call leaves the generator untouched.

// Everything that determines a generator's future output.
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
  bool operator==(const GeneratorState& o) const { return seed == o.seed && offset == o.offset; }
};

// Where one op's draw starts: block `offset` of the stream of `seed`.
struct PhiloxStream {
  uint64_t seed;
  uint64_t offset;
};

// The seed of the default generators until kiln::manual_seed is called (PyTorch's value).
constexpr uint64_t kDefaultRngSeed = 67280421310721ull;

// A handle to generator state, as libtorch's at::Generator: copies share the state (and are
// safe to use from several threads); clone() makes an independent copy.
class Generator {
 public:
  explicit Generator(uint64_t seed = kDefaultRngSeed);

  Generator clone() const;
  // Sets the seed and rewinds the offset to 0 (the stream restarts).
  void manual_seed(uint64_t seed);
  void set_current_seed(uint64_t seed) { manual_seed(seed); }
  uint64_t current_seed() const;
  uint64_t initial_seed() const { return current_seed(); }
  // As libtorch: re-seeds from a nondeterministic source and returns the new seed.
  uint64_t seed();
  // The next block the generator hands out.
  uint64_t get_offset() const;
  void set_offset(uint64_t offset);
  GeneratorState get_state() const;
  void set_state(const GeneratorState& state);

  // Reserves `blocks` Philox blocks for one op: returns where they start and advances the
  // offset past them, atomically.
  PhiloxStream reserve(uint64_t blocks);

  bool is_same(const Generator& other) const { return impl_ == other.impl_; }

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The generator ops use when given none (nullptr), one per device (a CUDA index of -1 means 0).
Generator& default_generator(Device device = Device(kCPU));
// `gen` itself, or the default generator of `device` when gen is null.
Generator& generator_or_default(Generator* gen, Device device);

// Seeds the default generator of every device (torch::manual_seed).
void manual_seed(uint64_t seed);

}  // namespace kiln
