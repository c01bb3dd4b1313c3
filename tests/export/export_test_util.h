#pragma once
// Helpers of the export tests.
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

// The program after a trip through its file's bytes.
inline ExportedProgram round_trip(const ExportedProgram& p) {
  const std::vector<uint8_t> bytes = p.to_bytes();
  return load_program_from_bytes(bytes.data(), bytes.size());
}

// What f throws as a kiln::Error, or "(no error)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace kiln::testing
