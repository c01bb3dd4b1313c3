#pragma once
// The safetensors format (https://github.com/huggingface/safetensors), compatible with Python's
// `safetensors` package both ways: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}}) padded with spaces to a multiple of 8, then the raw
// little-endian row-major bytes of every tensor, back to back.
//
// Loading validates everything before it allocates (header length, JSON, dtypes, shapes,
// offsets that must tile the data section exactly, as the Python package requires), in time
// linear in the file and within documented limits (safetensors_format.h, docs/security.md), so a
// damaged or hostile file gives a kiln::Error naming the file and the problem and never makes
// Kiln allocate more than the file's size.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::io {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // the optional "__metadata__" table
};

// Writes `tensors` (any dtype, layout or device; non-contiguous ones are written row-major) to
// `path` atomically: a temporary file in the same directory is fsync'ed and renamed into place,
// so a crash or an error never leaves a half-written file and leaves an existing one untouched
// (see AtomicFileWriter). Names and metadata must be valid UTF-8.
void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata = {});

// Reads a whole file into CPU tensors (copies; the file is not kept open or mapped).
SafetensorsFile load_safetensors(const std::string& path);

// The same format in memory.
std::vector<uint8_t> to_safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                                          const std::map<std::string, std::string>& metadata = {});
// `source` names the buffer in error messages.
SafetensorsFile from_safetensors_bytes(const uint8_t* data, size_t size,
                                       const std::string& source = "<memory>");
SafetensorsFile from_safetensors_bytes(const std::vector<uint8_t>& bytes,
                                       const std::string& source = "<memory>");

// The format's name for a dtype ("F32", "BF16", "BOOL", ...) and back (throws for unknown names).
std::string safetensors_dtype_name(ScalarType dtype);
ScalarType safetensors_dtype_from_name(const std::string& name);

}  // namespace kiln::io
