#pragma once
// Printing tensors the way PyTorch's Python repr does (`std::cout << x`): the same number
// formats (fixed with 4 decimals, integer-valued floats as "1.", scientific when the magnitudes
// call for it), summarisation of large tensors with "...", and the dtype / device /
// requires_grad / grad_fn suffixes. operator<< itself is declared in tensor.h.
#include <cstdint>
#include <optional>
#include <string>

#include "kiln/core/tensor.h"

namespace kiln {

// torch.set_printoptions.
struct PrintOptions {
  int precision = 4;             // digits after the decimal point
  int64_t threshold = 1000;      // more elements than this are summarised
  int64_t edgeitems = 3;         // items shown at each end of a summarised dimension
  int linewidth = 80;            // characters per line before wrapping
  std::optional<bool> sci_mode;  // force scientific notation on or off; unset: automatic
};
void set_printoptions(const PrintOptions& options);
PrintOptions get_printoptions();

// What operator<< writes, as a string.
std::string repr(const Tensor& t);

}  // namespace kiln
