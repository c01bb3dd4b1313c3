// libFuzzer harness for the safetensors reader: the framing, header JSON and layout checks
// (kiln/io/safetensors_header.cpp), which see every byte of a file before any tensor exists.
// Every input must either throw a kiln::Error with a short message or give entries that tile the
// data section exactly, as load_safetensors relies on. Built and run by fuzz/run.sh (make fuzz).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kiln/core/error.h"
#include "kiln/io/safetensors_format.h"
#include "kiln/io/safetensors_header.h"

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "safetensors_fuzz: invariant broken: %s\n", what);
  std::abort();
}

void check_entries(const kiln::io::detail::Header& h, const uint8_t* data, size_t size) {
  using namespace kiln::io::detail;
  const uint64_t data_size = size - h.data_start;
  uint64_t covered = 0;
  for (size_t i = 0; i < h.entries.size(); ++i) {
    const TensorEntry& e = h.entries[i];
    if (i > 0 && !(h.entries[i - 1].name < e.name)) broken("names not sorted and unique");
    if (e.begin > e.end || e.end > data_size) broken("range outside the data section");
    if (e.shape.size() > kMaxDims) broken("too many dimensions");
    uint64_t bytes = kiln::element_size(e.dtype);
    for (int64_t d : e.shape) {
      if (d < 0) broken("negative dimension");
      bytes *= static_cast<uint64_t>(d);  // cannot wrap: the parser checked the product
    }
    if (bytes != e.end - e.begin) broken("range does not match dtype and shape");
    covered += e.end - e.begin;
    // Read the range as load_safetensors copies it (AddressSanitizer checks the bounds).
    if (e.end > e.begin) {
      volatile uint8_t sink = data[h.data_start + e.begin];
      sink = data[h.data_start + e.end - 1];
      (void)sink;
    }
  }
  if (covered != data_size) broken("tensors do not cover the data section");
  if (h.entries.size() > kMaxTensors || h.metadata.size() > kMaxMetadataEntries) {
    broken("limit exceeded");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kiln::io::detail::Reporter r("load_safetensors: 'fuzz': ");
  try {
    kiln::io::detail::Header h = kiln::io::detail::parse_header_bytes(data, size, r);
    check_entries(h, data, size);
  } catch (const kiln::Error& e) {
    if (std::strlen(e.what()) > 1024) broken("error message longer than 1024 bytes");
  }
  return 0;
}
