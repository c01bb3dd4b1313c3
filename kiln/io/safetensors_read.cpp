// Reading safetensors. Note [Hostile files]: every number in the file is checked against the
// file's real size before anything is allocated: the header length against the bytes that
// follow it, each shape's element count (with overflow checks) against its data_offsets, and
// the offsets must tile the data section exactly (no gaps, overlaps or trailing bytes, as the
// Python package requires). So tensor allocations sum to at most the file's size.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "kiln/core/error.h"
#include "kiln/io/safetensors.h"
#include "kiln/io/safetensors_format.h"
#include "kiln/ops/creation.h"

namespace kiln::io {
namespace {

using json = nlohmann::json;

struct TensorEntry {
  std::string name;
  ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;  // byte range within the data section
};

struct Header {
  std::vector<TensorEntry> entries;
  std::map<std::string, std::string> metadata;
};

// Throws kiln::Error "load_safetensors: '<source>': <problem>".
class Reporter {
 public:
  explicit Reporter(std::string source) : source_(std::move(source)) {}
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    KILN_FAIL("load_safetensors: '", source_, "': ", args...);
  }
  template <class... Args>
  void check(bool cond, const Args&... args) const {
    if (!cond) [[unlikely]]
      fail(args...);
  }

 private:
  std::string source_;
};

// Parses the JSON text, rejecting duplicate keys and nesting deeper than the format uses
// (nlohmann would silently keep the last duplicate).
json parse_json(const std::string& text, const Reporter& r) {
  r.check(!text.empty() && text[0] == '{',
          "the header is not a JSON object (it must start with '{')");
  std::vector<std::set<std::string>> open;  // keys seen in each open container
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        open.emplace_back();
        r.check(open.size() <= 3, "the header JSON is nested deeper than the format allows");
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        open.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        r.check(open.back().insert(key).second, "duplicate key '", key, "' in the header");
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text, callback);
  } catch (const json::exception& e) {
    r.fail("the header is not valid JSON: ", e.what());
  }
}

uint64_t unsigned_field(const json& v, const std::string& what, const Reporter& r) {
  r.check(!v.is_number_integer() || v.is_number_unsigned(), what, " is negative (", v.dump(), ")");
  r.check(v.is_number_unsigned(), what, " must be a non-negative integer, got ", v.dump());
  return v.get<uint64_t>();
}

TensorEntry parse_entry(const std::string& name, const json& info, const Reporter& r) {
  r.check(info.is_object(), "tensor '", name, "': expected an object with dtype, shape and ",
          "data_offsets, got ", info.dump());
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    r.check(info.contains(field), "tensor '", name, "': missing field '", field, "'");
  }
  TensorEntry e;
  e.name = name;
  const json& dtype = info["dtype"];
  r.check(dtype.is_string(), "tensor '", name, "': dtype must be a string, got ", dtype.dump());
  auto t = detail::dtype_from_safetensors_name(dtype.get<std::string>());
  r.check(t.has_value(), "tensor '", name, "': unsupported dtype ", dtype.dump(),
          " (Kiln reads F64, F32, F16, BF16, I64, I32, I16, I8, U8 and BOOL)");
  e.dtype = *t;

  const json& shape = info["shape"];
  r.check(shape.is_array(), "tensor '", name, "': shape must be a list, got ", shape.dump());
  uint64_t numel = 1;
  uint64_t nonzero_numel = 1;  // bounds the strides too, when a zero dimension hides a huge one
  bool overflow = false;
  for (const json& d : shape) {
    uint64_t size =
        unsigned_field(d, "tensor '" + name + "': a dimension of shape " + shape.dump(), r);
    r.check(size <= static_cast<uint64_t>(INT64_MAX), "tensor '", name, "': dimension ", size,
            " of shape ", shape.dump(), " is too large");
    overflow = overflow || __builtin_mul_overflow(numel, size, &numel) ||
               __builtin_mul_overflow(nonzero_numel, std::max<uint64_t>(size, 1), &nonzero_numel);
    e.shape.push_back(static_cast<int64_t>(size));
  }
  uint64_t nbytes = 0;
  overflow = overflow || __builtin_mul_overflow(numel, element_size(e.dtype), &nbytes) ||
             nonzero_numel > static_cast<uint64_t>(INT64_MAX);
  r.check(!overflow, "tensor '", name, "': shape ", shape.dump(),
          " has more elements than can be addressed");

  const json& offsets = info["data_offsets"];
  r.check(offsets.is_array() && offsets.size() == 2, "tensor '", name,
          "': data_offsets must be a list [begin, end], got ", offsets.dump());
  e.begin = unsigned_field(offsets[0], "tensor '" + name + "': data_offsets begin", r);
  e.end = unsigned_field(offsets[1], "tensor '" + name + "': data_offsets end", r);
  r.check(e.begin <= e.end, "tensor '", name, "': data_offsets ", offsets.dump(),
          " are out of order (begin > end)");
  r.check(e.end - e.begin == nbytes, "tensor '", name, "': data_offsets ", offsets.dump(), " hold ",
          e.end - e.begin, " bytes but dtype ", dtype.get<std::string>(), " and shape ",
          shape.dump(), " need ", nbytes);
  return e;
}

// The offsets must cover [0, data_size) exactly, in some order of the tensors.
void check_layout(std::vector<TensorEntry>& entries, uint64_t data_size, const Reporter& r) {
  for (const TensorEntry& e : entries) {
    r.check(e.end <= data_size, "tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
            "] extend past the end of the data (", data_size, " bytes; is the file truncated?)");
  }
  std::vector<const TensorEntry*> order;
  for (const TensorEntry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const TensorEntry* prev = nullptr;
  for (const TensorEntry* e : order) {
    r.check(e->begin >= covered, "tensor '", e->name, "': data_offsets [", e->begin, ", ", e->end,
            "] overlap tensor '", prev ? prev->name : "", "' [", prev ? prev->begin : 0, ", ",
            covered, "]");
    r.check(e->begin == covered, "tensor '", e->name, "': data_offsets [", e->begin, ", ", e->end,
            "] leave a gap of ", e->begin - covered, " bytes after byte ", covered);
    covered = e->end;
    prev = e;
  }
  r.check(covered == data_size, data_size - covered, " bytes of trailing data after the last ",
          "tensor (the tensors cover ", covered, " of ", data_size, " data bytes)");
}

Header parse_header(const std::string& text, uint64_t data_size, const Reporter& r) {
  json root = parse_json(text, r);
  Header h;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == detail::kMetadataKey) {
      r.check(it->is_object(), "__metadata__ must be an object of strings, got ", it->dump());
      for (auto m = it->begin(); m != it->end(); ++m) {
        r.check(m->is_string(), "__metadata__ value of '", m.key(), "' must be a string, got ",
                m->dump());
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    h.entries.push_back(parse_entry(it.key(), *it, r));
  }
  check_layout(h.entries, data_size, r);
  return h;
}

// Reads `size` bytes at `offset` of the source into `dst`.
using ReadAt = std::function<void(uint64_t offset, void* dst, size_t size)>;

// Validates the framing of a source of `total` bytes and reads the tensors out of it.
SafetensorsFile read_safetensors(uint64_t total, const ReadAt& read_at, const Reporter& r) {
  r.check(total >= 8, "file is too small to hold a safetensors header (", total, " bytes)");
  uint64_t n = 0;
  read_at(0, &n, sizeof(n));
  r.check(n <= detail::kMaxHeaderSize, "header length ", n, " exceeds the limit of ",
          detail::kMaxHeaderSize, " bytes");
  r.check(n <= total - 8, "header length ", n, " exceeds the ", total - 8,
          " bytes that follow it (is the file truncated?)");
  std::string text(n, '\0');
  read_at(8, text.data(), n);
  const uint64_t data_start = 8 + n;
  Header h = parse_header(text, total - data_start, r);

  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  for (const TensorEntry& e : h.entries) {
    Tensor t = kiln::empty(e.shape, TensorOptions(e.dtype));
    if (e.end > e.begin) read_at(data_start + e.begin, t.data_ptr(), e.end - e.begin);
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

class FileHandle {
 public:
  FileHandle(const std::string& path, const Reporter& r)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    r.check(fd_ >= 0, "cannot open: ", std::strerror(errno));
  }
  ~FileHandle() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

SafetensorsFile from_safetensors_bytes(const uint8_t* data, size_t size,
                                       const std::string& source) {
  Reporter r(source);
  return read_safetensors(
      size, [&](uint64_t offset, void* dst, size_t n) { std::memcpy(dst, data + offset, n); }, r);
}

SafetensorsFile from_safetensors_bytes(const std::vector<uint8_t>& bytes,
                                       const std::string& source) {
  return from_safetensors_bytes(bytes.data(), bytes.size(), source);
}

SafetensorsFile load_safetensors(const std::string& path) {
  Reporter r(path);
  FileHandle file(path, r);
  struct stat st;
  r.check(::fstat(file.fd(), &st) == 0, "cannot stat: ", std::strerror(errno));
  r.check(S_ISREG(st.st_mode), "not a regular file");
  auto read_at = [&](uint64_t offset, void* dst, size_t n) {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t got = ::pread(file.fd(), p, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      r.check(got >= 0, "read failed: ", std::strerror(errno));
      r.check(got > 0, "the file shrank while it was being read");
      p += got;
      n -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
  };
  return read_safetensors(static_cast<uint64_t>(st.st_size), read_at, r);
}

}  // namespace kiln::io
