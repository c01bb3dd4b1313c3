#pragma once
// Pieces of the safetensors format shared by the reader and the writer (internal), among them the
// limits that bound what reading a file may cost (docs/security.md lists them for users).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/core/dtype.h"

namespace kiln::io::detail {

static_assert(
    std::endian::native == std::endian::little,
    "safetensors data is little-endian; Kiln's reader/writer assume a little-endian host");

// The header JSON may be at most this long: the limit of the Rust/Python package (MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeaderSize = 100'000'000;
// Dimensions of one tensor: NumPy's limit (NPY_MAXDIMS), so any file Kiln reads or writes also
// fits NumPy. The reference implementation has no limit of its own.
constexpr size_t kMaxDims = 64;
// Tensors in one file, and entries in its __metadata__ table. Together with the header size these
// bound the memory that reading the header takes, before any tensor data is read.
constexpr size_t kMaxTensors = 1'000'000;
constexpr size_t kMaxMetadataEntries = 1'000'000;
// How deeply JSON may nest (in unknown fields, which are skipped): the reference implementation
// parses with serde_json, whose recursion limit of 128 rejects the 128th nested container.
constexpr int kMaxJsonDepth = 127;

constexpr const char* kMetadataKey = "__metadata__";

// The format's name of a dtype ("F32", "BF16", ...), or nullptr when the format has none.
const char* safetensors_name_of(ScalarType dtype);
std::optional<ScalarType> dtype_from_safetensors_name(std::string_view name);

}  // namespace kiln::io::detail
