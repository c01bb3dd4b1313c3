#pragma once
// Printing tensors.
// - `std::cout << t` (operator<<, declared in tensor.h) and kiln::print write libtorch's C++
//   format (at::print): bare columns, one number format for the whole block, a closing
//   "[ CPUFloatType{2,3} ]" line, no suffixes and no summarisation (print_libtorch.cpp).
// - kiln::repr(t) gives PyTorch's Python repr: the same number formats as Python (fixed with 4
//   decimals, integer-valued floats as "1.", scientific when the magnitudes call for it),
//   summarisation of large tensors with "...", and the dtype / device / requires_grad / grad_fn
//   suffixes; set_printoptions controls it (print.cpp).
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "kiln/core/tensor.h"

namespace kiln {

// torch.set_printoptions (for kiln::repr).
struct PrintOptions {
  int precision = 4;             // digits after the decimal point
  int64_t threshold = 1000;      // more elements than this are summarised
  int64_t edgeitems = 3;         // items shown at each end of a summarised dimension
  int linewidth = 80;            // characters per line before wrapping
  std::optional<bool> sci_mode;  // force scientific notation on or off; unset: automatic
};
void set_printoptions(const PrintOptions& options);
PrintOptions get_printoptions();

// PyTorch's Python repr: "tensor([1.5000, 2.0000], requires_grad=True)".
std::string repr(const Tensor& t);

namespace detail {
// Both printers refuse a traced tensor (kiln::compile's capture has no values) with this error.
[[noreturn]] void throw_traced_print();
}  // namespace detail

// libtorch's C++ format, what operator<< writes; values wider than `linesize` characters per
// row are split into "Columns a to b" blocks.
std::ostream& print(std::ostream& os, const Tensor& t, int64_t linesize = 80);

}  // namespace kiln
