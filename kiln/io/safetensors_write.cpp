// Writing safetensors: the header JSON as the Python package lays it out, then each tensor's bytes.
// The header is written here rather than by a JSON library, so that a name or a metadata string
// that is not UTF-8 gives a kiln::Error naming the file and the string, and so that writing takes
// time linear in the number of tensors.
#include <algorithm>
#include <cstring>
#include <functional>

#include "kiln/core/error.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/reporter.h"
#include "kiln/io/safetensors.h"
#include "kiln/io/safetensors_format.h"
#include "kiln/io/safetensors_quantized.h"
#include "kiln/io/utf8.h"
#include "kiln/ops/creation.h"

namespace kiln::io {
namespace {

using detail::quoted;
using detail::Reporter;

struct Entry {
  const std::string* name;
  Tensor data;  // contiguous CPU tensor holding exactly the bytes to write
};

void check_utf8(std::string_view s, const char* what, std::string_view owner, const Reporter& r) {
  if (auto bad = detail::find_invalid_utf8(s)) {
    r.fail(what, " ", quoted(owner), " is not valid UTF-8 (byte ", *bad,
           "), which safetensors headers require");
  }
}

// Validates everything and orders tensors as the Python package does (largest element size
// first, then by name), which keeps every tensor's data aligned to its element size since the
// header is padded to 8.
std::vector<Entry> prepare(const std::map<std::string, Tensor>& tensors, const Reporter& r) {
  KILN_IO_CHECK(r, tensors.size() <= detail::kMaxTensors, tensors.size(),
                " tensors exceed the limit of ", detail::kMaxTensors, " per file");
  std::vector<Entry> entries;
  entries.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    KILN_IO_CHECK(r, name != detail::kMetadataKey, "the tensor name '", detail::kMetadataKey,
                  "' is reserved for metadata");
    check_utf8(name, "tensor name", name, r);
    KILN_IO_CHECK(r, t.defined(), "tensor ", quoted(name), " is undefined");
    KILN_IO_CHECK(r, !t.is_meta(), "tensor ", quoted(name), " is a meta tensor (no data)");
    const Tensor stored = detail::stored_values(t);
    KILN_IO_CHECK(r, detail::safetensors_name_of(stored.dtype()) != nullptr, "tensor ",
                  quoted(name), ": dtype ", t.dtype(), " has no safetensors name");
    KILN_IO_CHECK(r, static_cast<size_t>(t.dim()) <= detail::kMaxDims, "tensor ", quoted(name),
                  " has ", t.dim(), " dimensions, over the limit of ", detail::kMaxDims);
    Tensor cpu = stored.detach();
    if (!cpu.is_cpu()) cpu = cpu.to(Device(kCPU));
    entries.push_back({&name, cpu.contiguous()});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.data.element_size() > b.data.element_size();
  });
  return entries;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += ch;
    }
  }
  out += '"';
}

void append_metadata(std::string& out, const std::map<std::string, std::string>& metadata,
                     const Reporter& r) {
  KILN_IO_CHECK(r, metadata.size() <= detail::kMaxMetadataEntries, metadata.size(),
                " metadata entries exceed the limit of ", detail::kMaxMetadataEntries);
  append_json_string(out, detail::kMetadataKey);
  out += ":{";
  bool first = true;
  for (const auto& [key, value] : metadata) {
    check_utf8(key, "metadata key", key, r);
    check_utf8(value, "the value of metadata key", key, r);
    if (!first) out += ',';
    first = false;
    append_json_string(out, key);
    out += ':';
    append_json_string(out, value);
  }
  out += '}';
}

// {"__metadata__":{...},"name":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},...} padded
// with spaces to a multiple of 8.
std::string make_header(const std::vector<Entry>& entries,
                        const std::map<std::string, std::string>& metadata, const Reporter& r) {
  std::string out = "{";
  if (!metadata.empty()) append_metadata(out, metadata, r);
  uint64_t offset = 0;
  for (const Entry& e : entries) {
    if (out.size() > 1) out += ',';
    append_json_string(out, *e.name);
    out += ":{\"dtype\":\"";
    out += detail::safetensors_name_of(e.data.dtype());
    out += "\",\"shape\":[";
    bool first_dim = true;
    for (int64_t d : e.data.sizes()) {
      if (!first_dim) out += ',';
      first_dim = false;
      out += std::to_string(d);
    }
    const uint64_t nbytes = e.data.nbytes();
    out += "],\"data_offsets\":[";
    out += std::to_string(offset);
    out += ',';
    out += std::to_string(offset + nbytes);
    out += "]}";
    offset += nbytes;
  }
  out += '}';
  out.append((8 - out.size() % 8) % 8, ' ');
  KILN_IO_CHECK(r, out.size() <= detail::kMaxHeaderSize, "the header would be ", out.size(),
                " bytes, over the format's limit of ", detail::kMaxHeaderSize,
                " (too many tensors, or too much metadata)");
  return out;
}

using Sink = std::function<void(const void*, size_t)>;

void serialize(const std::vector<Entry>& entries, const std::string& header, const Sink& sink) {
  uint64_t n = header.size();
  sink(&n, sizeof(n));  // little-endian host (see safetensors_format.h)
  sink(header.data(), header.size());
  for (const Entry& e : entries) {
    if (e.data.nbytes() > 0) sink(e.data.data_ptr(), e.data.nbytes());
  }
}

}  // namespace

std::string safetensors_dtype_name(ScalarType dtype) {
  const char* name = detail::safetensors_name_of(dtype);
  KILN_CHECK(name != nullptr, "safetensors: dtype ", dtype, " has no safetensors name");
  return name;
}

ScalarType safetensors_dtype_from_name(const std::string& name) {
  auto t = detail::dtype_from_safetensors_name(name);
  KILN_CHECK(t.has_value(), "safetensors: unknown dtype '", detail::excerpt(name, 16),
             "' (Kiln reads F64, F32, F16, BF16, I64, I32, I16, I8, U8 and BOOL)");
  return *t;
}

std::vector<uint8_t> to_safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                                          const std::map<std::string, std::string>& metadata) {
  const Reporter r("to_safetensors_bytes: ");
  return r.run([&] {
    std::vector<Entry> entries = prepare(tensors, r);
    std::string header = make_header(entries, detail::with_quantizers(tensors, metadata, r), r);
    std::vector<uint8_t> out;
    size_t total = 8 + header.size();
    for (const Entry& e : entries) total += e.data.nbytes();
    out.reserve(total);
    serialize(entries, header, [&](const void* p, size_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      out.insert(out.end(), b, b + n);
    });
    return out;
  });
}

void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata) {
  const Reporter r("save_safetensors: '" + path + "': ");
  r.run([&] {
    // Everything is validated and converted before the temporary file exists.
    std::vector<Entry> entries = prepare(tensors, r);
    std::string header = make_header(entries, detail::with_quantizers(tensors, metadata, r), r);
    AtomicFileWriter file(path);
    serialize(entries, header, [&](const void* p, size_t n) { file.write(p, n); });
    file.commit();
  });
}

}  // namespace kiln::io
