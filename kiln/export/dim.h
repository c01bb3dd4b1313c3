#pragma once
// Dim: a named dynamic dim of export_program's inputs (torch.export.Dim). Dims with the same name
// are one symbol: the sizes they mark must be equal in every call.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct Dim {
  // `name` is an identifier (letters, digits, '_'; not "min" or "max"); sizes 0 and 1
  // specialise in a trace, so a range that reaches below 2 usually fails the export's
  // constraint check.
  Dim(std::string name, int64_t min = 2, int64_t max = std::numeric_limits<int64_t>::max());

  std::string name;
  int64_t min;
  int64_t max;
};

// One map per input, from dim index (negative counts from the end) to its Dim:
// `{{{0, batch}, {1, seq}}, {}}`. Inputs without an entry, and dims without one, are static.
using DynamicShapes = std::vector<std::map<int64_t, Dim>>;

}  // namespace kiln
