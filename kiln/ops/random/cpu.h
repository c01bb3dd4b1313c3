#pragma once
// CPU loops over one op's Philox draw (Note [Random streams] in kiln/core/generator.h). Blocks
// are computed independently, so the result does not depend on the thread count.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/loops.h"
#include "kiln/core/generator.h"
#include "kiln/core/philox.h"
#include "kiln/ops/creation.h"

namespace kiln::random_cpu {

// Reserves the draw of n elements x `words` words from `gen` (the default generator of
// `device` when null).
inline PhiloxStream reserve(Generator* gen, Device device, int64_t n, int words) {
  return generator_or_default(gen, device).reserve(philox::blocks_for(n, words));
}

// Calls body(first, count, words) for each block of the draw: elements first .. first+count-1
// own the block's words (4 / words_per_element of them per block).
template <class Body>
void for_each_block(int64_t n, int words_per_element, PhiloxStream s, const Body& body) {
  const int64_t per_block = 4 / words_per_element;
  const int64_t blocks = (n + per_block - 1) / per_block;
  cpu::parallel_for(0, blocks, 4096, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const philox::Words w = philox::block(s.seed, s.offset + static_cast<uint64_t>(b));
      const int64_t first = b * per_block;
      body(first, std::min(per_block, n - first), w);
    }
  });
}

// Words per value of type T: 2 for float64 (53-bit uniforms), 1 otherwise.
template <class T>
constexpr int words_per_value = std::is_same_v<T, double> ? 2 : 1;

// The uniform [0, 1) of element slot k of a block, in T's compute type: 53 bits from words
// (2k, 2k+1) for double, else the top Digits bits of word k.
template <class T, int Digits = 24>
inline cpu::compute_t<T> uniform_at(const philox::Words& w, int64_t k) {
  if constexpr (std::is_same_v<T, double>) {
    return philox::uniform_double(w.w[2 * k], w.w[2 * k + 1]);
  } else {
    return philox::uniform_float<Digits>(w.w[k]);
  }
}

// Runs fill(T* data) on `out`'s elements in row-major order: directly when contiguous, else
// into a contiguous temporary copied back.
template <class T, class Fill>
void fill_row_major(const Tensor& out, const Fill& fill) {
  if (out.is_contiguous()) {
    fill(static_cast<T*>(out.data_ptr()));
    return;
  }
  Tensor tmp = empty(out.sym_sizes(), out.options());
  fill(static_cast<T*>(tmp.data_ptr()));
  cpu::copy(out, tmp);
}

}  // namespace kiln::random_cpu
