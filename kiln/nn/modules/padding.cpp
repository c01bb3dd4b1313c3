#include "kiln/nn/modules/padding.h"

#include <ostream>

#include "kiln/ops/shape.h"

namespace kiln::nn::detail {

Tensor pad_forward(const Tensor& input, IntArrayRef padding, const char* mode,
                   std::optional<double> value) {
  return kiln::pad(input, padding, mode, value);
}

void print_pad(std::ostream& stream, const char* name, IntArrayRef padding, const double* value) {
  stream << name << "(padding=" << padding;
  if (value) stream << ", value=" << *value;
  stream << ")";
}

}  // namespace kiln::nn::detail
