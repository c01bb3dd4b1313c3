#pragma once
// The safetensors header (internal): the 8-byte length, the JSON header and the layout of the data
// section, parsed and validated without reading any tensor data. The reader builds tensors from
// what this returns; the fuzzer (fuzz/safetensors_fuzz.cpp) drives it directly.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/io/reporter.h"

namespace kiln::io::detail {

struct TensorEntry {
  std::string name;
  ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;  // byte range within the data section
};

struct Header {
  std::vector<TensorEntry> entries;             // sorted by name, names unique
  std::map<std::string, std::string> metadata;  // the optional "__metadata__" table
  uint64_t data_start = 0;                      // where the data section starts in the source
};

// The header length `declared` by the first 8 bytes of a source of `total` bytes, checked against
// kMaxHeaderSize and against the bytes that follow it.
uint64_t checked_header_length(uint64_t declared, uint64_t total, const Reporter& r);

// Parses the JSON header text and checks that the tensors' byte ranges tile a data section of
// `data_size` bytes exactly. Time linear in the text (plus sorting the tensors), memory a small
// multiple of it; every limit of safetensors_format.h is checked before what it bounds is stored.
Header parse_header(std::string_view text, uint64_t data_size, const Reporter& r);

// Both steps for a whole safetensors file held in memory.
Header parse_header_bytes(const uint8_t* data, size_t size, const Reporter& r);

}  // namespace kiln::io::detail
