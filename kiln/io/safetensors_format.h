#pragma once
// Pieces of the safetensors format shared by the reader and the writer (internal).
#include <bit>
#include <cstdint>
#include <optional>
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::io::detail {

static_assert(
    std::endian::native == std::endian::little,
    "safetensors data is little-endian; Kiln's reader/writer assume a little-endian host");

// The header JSON may be at most this long (the limit of the Python/Rust package).
constexpr uint64_t kMaxHeaderSize = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

std::optional<ScalarType> dtype_from_safetensors_name(const std::string& name);

}  // namespace kiln::io::detail
