// Writing safetensors: header JSON as the Python package lays it out, then each tensor's bytes.
#include <algorithm>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "kiln/core/error.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/safetensors.h"
#include "kiln/io/safetensors_format.h"
#include "kiln/ops/creation.h"

namespace kiln::io {
namespace {

struct Entry {
  std::string name;
  Tensor data;  // contiguous CPU tensor holding exactly the bytes to write
};

// Orders tensors as the Python package does (largest element size first, then by name), which
// keeps every tensor's data aligned to its element size since the header is padded to 8.
std::vector<Entry> prepare(const std::map<std::string, Tensor>& tensors) {
  std::vector<Entry> entries;
  entries.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    KILN_CHECK(name != detail::kMetadataKey, "save_safetensors: the tensor name '",
               detail::kMetadataKey, "' is reserved for metadata");
    KILN_CHECK(t.defined(), "save_safetensors: tensor '", name, "' is undefined");
    KILN_CHECK(!t.is_meta(), "save_safetensors: tensor '", name, "' is a meta tensor (no data)");
    Tensor cpu = t.detach();
    if (!cpu.is_cpu()) cpu = cpu.to(Device(kCPU));
    entries.push_back({name, cpu.contiguous()});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.data.element_size() > b.data.element_size();
  });
  return entries;
}

std::string make_header(const std::vector<Entry>& entries,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[detail::kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const Entry& e : entries) {
    std::vector<int64_t> shape;
    for (const SymInt& s : e.data.sizes()) shape.push_back(s.guard_int());
    uint64_t nbytes = e.data.nbytes();
    header[e.name] = {{"dtype", safetensors_dtype_name(e.data.dtype())},
                      {"shape", shape},
                      {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

using Sink = std::function<void(const void*, size_t)>;

void serialize(const std::map<std::string, Tensor>& tensors,
               const std::map<std::string, std::string>& metadata, const Sink& sink) {
  std::vector<Entry> entries = prepare(tensors);
  std::string header = make_header(entries, metadata);
  uint64_t n = header.size();
  sink(&n, sizeof(n));  // little-endian host (see safetensors_format.h)
  sink(header.data(), header.size());
  for (const Entry& e : entries) {
    if (e.data.nbytes() > 0) sink(e.data.data_ptr(), e.data.nbytes());
  }
}

}  // namespace

std::string safetensors_dtype_name(ScalarType dtype) {
  switch (dtype) {
    case kFloat64:
      return "F64";
    case kFloat32:
      return "F32";
    case kFloat16:
      return "F16";
    case kBFloat16:
      return "BF16";
    case kInt64:
      return "I64";
    case kInt32:
      return "I32";
    case kInt16:
      return "I16";
    case kInt8:
      return "I8";
    case kUInt8:
      return "U8";
    case kBool:
      return "BOOL";
    default:
      break;
  }
  KILN_FAIL("safetensors: dtype ", dtype, " has no safetensors name");
}

std::optional<ScalarType> detail::dtype_from_safetensors_name(const std::string& name) {
  for (ScalarType t :
       {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    if (safetensors_dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

ScalarType safetensors_dtype_from_name(const std::string& name) {
  auto t = detail::dtype_from_safetensors_name(name);
  KILN_CHECK(t.has_value(), "safetensors: unknown dtype '", name,
             "' (Kiln reads F64, F32, F16, BF16, I64, I32, I16, I8, U8 and BOOL)");
  return *t;
}

std::vector<uint8_t> to_safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                                          const std::map<std::string, std::string>& metadata) {
  std::vector<uint8_t> out;
  serialize(tensors, metadata, [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  });
  return out;
}

void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata) {
  // Validate and convert everything before the temporary file exists.
  std::vector<Entry> entries = prepare(tensors);
  std::map<std::string, Tensor> ready;
  for (Entry& e : entries) ready.emplace(e.name, std::move(e.data));
  AtomicFileWriter file(path);
  serialize(ready, metadata, [&](const void* p, size_t n) { file.write(p, n); });
  file.commit();
}

}  // namespace kiln::io
