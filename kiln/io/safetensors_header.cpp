// Note [Hostile files]: a safetensors file may come from anywhere, so reading one must cost time
// linear in its size and memory bounded by its size, and must reject what the format's reference
// implementation (huggingface/safetensors, Rust: SafeTensors::read_metadata and
// Metadata::validate) rejects:
//  - the header length is at most kMaxHeaderSize and at most the bytes that follow it;
//  - the header is one JSON object, optionally surrounded by JSON whitespace (the format pads it
//    with spaces; a NUL or any other byte after the object is an error); strings are well-formed
//    UTF-8; nesting is at most 127 levels deep (serde_json's recursion limit);
//  - keys are tensor names and "__metadata__" (null or an object of strings); a tensor is an
//    object with "dtype", "shape" and "data_offsets" (other fields are skipped, as serde does);
//    a key or a field given twice is an error (serde rejects a repeated field; we reject every
//    repetition rather than keep one silently);
//  - shapes and offsets are non-negative integers; a shape's element count times the element size
//    must not overflow and must equal end - begin; sorted by offset, the tensors must tile the
//    data section from 0 to its end with no gap, overlap or trailing byte.
// The JSON is read once, front to back, by JsonCursor, keeping only the entries; each limit
// (dimensions, tensors, metadata entries) is checked before the thing it bounds is stored, and no
// error message quotes more than a few dozen bytes of the input. Finding duplicates and checking
// the layout sort the entries: O(n log n) in the number of tensors.
#include "kiln/io/safetensors_header.h"

#include <algorithm>
#include <cstring>

#include "kiln/io/json_cursor.h"
#include "kiln/io/safetensors_format.h"
#include "kiln/io/utf8.h"

namespace kiln::io::detail {
namespace {

// Messages are built by appending: GCC 12 warns (-Wrestrict, a false positive) on
// "literal" + std::string&&.
std::string tensor_label(std::string_view name) {
  std::string s = "tensor ";
  s += quoted(name);
  return s;
}

// "[2, 3]"; long shapes show their first dimensions and their rank.
std::string shape_text(const std::vector<int64_t>& shape) {
  constexpr size_t kShown = 8;
  std::string s = "[";
  for (size_t i = 0; i < shape.size() && i < kShown; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() > kShown) {
    s += ", ... (";
    s += std::to_string(shape.size());
    s += " dimensions)";
  }
  s += ']';
  return s;
}

std::string range_text(uint64_t begin, uint64_t end) {
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += ']';
  return s;
}

bool starts_number(int c) { return c == '-' || (c >= '0' && c <= '9'); }

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const Reporter& r) : json_(text, r, kMaxJsonDepth), r_(r) {}

  Header parse() {
    KILN_IO_CHECK(r_, json_.peek() == '{',
                  "the header is not a JSON object (it must start with '{')");
    json_.expect('{', "");
    if (!json_.consume('}')) {
      do {
        std::string key = json_.string(" as a tensor name");
        json_.expect(':', " after a tensor name");
        if (key == kMetadataKey) {
          metadata();
        } else {
          KILN_IO_CHECK(r_, header_.entries.size() < kMaxTensors, "the header lists more than ",
                        kMaxTensors, " tensors (the limit)");
          header_.entries.push_back(tensor(std::move(key)));
        }
      } while (json_.consume(','));
      json_.expect('}', " or ',' after a header entry");
    }
    json_.expect_end();
    return std::move(header_);
  }

 private:
  void metadata() {
    KILN_IO_CHECK(r_, !seen_metadata_, "duplicate key '", kMetadataKey, "' in the header");
    seen_metadata_ = true;
    if (json_.peek() == 'n') {  // null: no table, as the reference's Option allows
      json_.skip_value(1);
      return;
    }
    KILN_IO_CHECK(r_, json_.peek() == '{', kMetadataKey, " must be an object of strings, found ",
                  json_.found());
    json_.expect('{', "");
    if (json_.consume('}')) return;
    do {
      std::string key = json_.string(" as a __metadata__ key");
      json_.expect(':', " after a __metadata__ key");
      KILN_IO_CHECK(r_, json_.peek() == '"', kMetadataKey, " value of ", quoted(key),
                    " must be a string, found ", json_.found());
      std::string value = json_.string(" as a __metadata__ value");
      KILN_IO_CHECK(r_, header_.metadata.size() < kMaxMetadataEntries, kMetadataKey,
                    " has more than ", kMaxMetadataEntries, " entries (the limit)");
      auto [it, inserted] = header_.metadata.try_emplace(std::move(key), std::move(value));
      KILN_IO_CHECK(r_, inserted, "duplicate key ", quoted(it->first), " in ", kMetadataKey);
    } while (json_.consume(','));
    json_.expect('}', " or ',' after a __metadata__ entry");
  }

  TensorEntry tensor(std::string name) {
    KILN_IO_CHECK(r_, json_.peek() == '{', tensor_label(name),
                  ": expected an object with dtype, shape and data_offsets, found ", json_.found());
    json_.expect('{', "");
    TensorEntry e{std::move(name), ScalarType::Undefined, {}, 0, 0};
    bool has_dtype = false, has_shape = false, has_offsets = false;
    if (!json_.consume('}')) {
      do {
        std::string field = json_.string(" as a field name");
        json_.expect(':', " after a field name");
        if (field == "dtype") {
          once(has_dtype, e.name, field);
          e.dtype = dtype(e.name);
        } else if (field == "shape") {
          once(has_shape, e.name, field);
          e.shape = shape(e.name);
        } else if (field == "data_offsets") {
          once(has_offsets, e.name, field);
          offsets(e);
        } else {
          json_.skip_value(2);
        }
      } while (json_.consume(','));
      json_.expect('}', " or ',' after a field of a tensor");
    }
    const char* missing = !has_dtype     ? "dtype"
                          : !has_shape   ? "shape"
                          : !has_offsets ? "data_offsets"
                                         : nullptr;
    KILN_IO_CHECK(r_, !missing, tensor_label(e.name), ": missing field '", missing, "'");
    check_size(e);
    return e;
  }

  void once(bool& seen, const std::string& name, const std::string& field) {
    KILN_IO_CHECK(r_, !seen, tensor_label(name), ": duplicate field '", field, "'");
    seen = true;
  }

  ScalarType dtype(const std::string& name) {
    KILN_IO_CHECK(r_, json_.peek() == '"', tensor_label(name), ": dtype must be a string, found ",
                  json_.found());
    std::string s = json_.string(" as a dtype");
    auto t = dtype_from_safetensors_name(s);
    KILN_IO_CHECK(r_, t.has_value(), tensor_label(name), ": unsupported dtype \"", excerpt(s, 16),
                  "\" (Kiln reads F64, F32, F16, BF16, I64, I32, I16, I8, U8 and BOOL)");
    return *t;
  }

  std::vector<int64_t> shape(const std::string& name) {
    KILN_IO_CHECK(r_, json_.peek() == '[', tensor_label(name), ": shape must be a list, found ",
                  json_.found());
    json_.expect('[', "");
    std::vector<int64_t> dims;
    if (json_.consume(']')) return dims;
    do {
      KILN_IO_CHECK(r_, dims.size() < kMaxDims, tensor_label(name), ": shape has more than ",
                    kMaxDims, " dimensions (the limit)");
      uint64_t d = unsigned_int(name, "a dimension of the shape");
      KILN_IO_CHECK(r_, d <= static_cast<uint64_t>(INT64_MAX), tensor_label(name), ": dimension ",
                    d, " of the shape is too large");
      dims.push_back(static_cast<int64_t>(d));
    } while (json_.consume(','));
    json_.expect(']', " or ',' in a shape");
    return dims;
  }

  void offsets(TensorEntry& e) {
    const auto fail = [&] {
      r_.fail(tensor_label(e.name), ": data_offsets must be a list [begin, end], found ",
              json_.found());
    };
    if (!json_.consume('[') || json_.peek() == ']') fail();
    e.begin = unsigned_int(e.name, "data_offsets begin");
    if (!json_.consume(',') || json_.peek() == ']') fail();
    e.end = unsigned_int(e.name, "data_offsets end");
    if (!json_.consume(']')) fail();
  }

  uint64_t unsigned_int(const std::string& name, const char* what) {
    KILN_IO_CHECK(r_, starts_number(json_.peek()), tensor_label(name), ": ", what,
                  " must be a non-negative integer, found ", json_.found());
    JsonNumber n = json_.number("");
    if (n.kind == JsonNumber::kUnsigned) return n.value;
    const std::string text = excerpt(n.text, 24);
    if (n.kind == JsonNumber::kNegative) {
      r_.fail(tensor_label(name), ": ", what, " is negative (", text, ")");
    }
    if (n.kind == JsonNumber::kTooLarge) {
      r_.fail(tensor_label(name), ": ", what, " is too large (", text, ")");
    }
    r_.fail(tensor_label(name), ": ", what, " must be a non-negative integer, got ", text);
  }

  // The bytes that dtype and shape need must be what data_offsets hold. A zero dimension makes
  // the element count 0, but the strides of a tensor with that shape still multiply the other
  // dimensions, so their product must be addressable too.
  void check_size(const TensorEntry& e) {
    uint64_t numel = 1, nonzero_numel = 1, nbytes = 0;
    bool overflow = false;
    for (int64_t d : e.shape) {
      const auto size = static_cast<uint64_t>(d);
      overflow = overflow || __builtin_mul_overflow(numel, size, &numel) ||
                 __builtin_mul_overflow(nonzero_numel, std::max<uint64_t>(size, 1), &nonzero_numel);
    }
    overflow = overflow || __builtin_mul_overflow(numel, element_size(e.dtype), &nbytes) ||
               nonzero_numel > static_cast<uint64_t>(INT64_MAX);
    KILN_IO_CHECK(r_, !overflow, tensor_label(e.name), ": shape ", shape_text(e.shape),
                  " has more elements than can be addressed");
    KILN_IO_CHECK(r_, e.begin <= e.end, tensor_label(e.name), ": data_offsets ",
                  range_text(e.begin, e.end), " are out of order (begin > end)");
    KILN_IO_CHECK(r_, e.end - e.begin == nbytes, tensor_label(e.name), ": data_offsets ",
                  range_text(e.begin, e.end), " hold ", e.end - e.begin, " bytes but dtype ",
                  safetensors_name_of(e.dtype), " and shape ", shape_text(e.shape), " need ",
                  nbytes);
  }

  JsonCursor json_;
  const Reporter& r_;
  Header header_;
  bool seen_metadata_ = false;
};

void check_unique_names(std::vector<TensorEntry>& entries, const Reporter& r) {
  std::sort(entries.begin(), entries.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.name < b.name; });
  auto dup = std::adjacent_find(
      entries.begin(), entries.end(),
      [](const TensorEntry& a, const TensorEntry& b) { return a.name == b.name; });
  KILN_IO_CHECK(r, dup == entries.end(), "duplicate key ",
                dup == entries.end() ? "" : quoted(dup->name), " in the header");
}

// Sorted by (begin, end), the tensors must cover [0, data_size) exactly.
void check_layout(const std::vector<TensorEntry>& entries, uint64_t data_size, const Reporter& r) {
  for (const TensorEntry& e : entries) {
    KILN_IO_CHECK(r, e.end <= data_size, tensor_label(e.name), ": data_offsets ",
                  range_text(e.begin, e.end), " extend past the end of the data (", data_size,
                  " bytes; is the file truncated?)");
  }
  std::vector<const TensorEntry*> order;
  order.reserve(entries.size());
  for (const TensorEntry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const TensorEntry* prev = nullptr;
  for (const TensorEntry* e : order) {
    KILN_IO_CHECK(r, e->begin >= covered, tensor_label(e->name), ": data_offsets ",
                  range_text(e->begin, e->end), " overlap ", prev ? tensor_label(prev->name) : "",
                  " ", range_text(prev ? prev->begin : 0, covered));
    KILN_IO_CHECK(r, e->begin == covered, tensor_label(e->name), ": data_offsets ",
                  range_text(e->begin, e->end), " leave a gap of ", e->begin - covered,
                  " bytes after byte ", covered);
    covered = e->end;
    prev = e;
  }
  KILN_IO_CHECK(r, covered == data_size, data_size - covered,
                " bytes of trailing data after the last ", "tensor (the tensors cover ", covered,
                " of ", data_size, " data bytes)");
}

}  // namespace

uint64_t checked_header_length(uint64_t declared, uint64_t total, const Reporter& r) {
  KILN_IO_CHECK(r, total >= 8, "file is too small to hold a safetensors header (", total,
                " bytes)");
  KILN_IO_CHECK(r, declared <= kMaxHeaderSize, "header length ", declared, " exceeds the limit of ",
                kMaxHeaderSize, " bytes");
  KILN_IO_CHECK(r, declared <= total - 8, "header length ", declared, " exceeds the ", total - 8,
                " bytes that follow it (is the file truncated?)");
  return declared;
}

Header parse_header(std::string_view text, uint64_t data_size, const Reporter& r) {
  Header h = HeaderParser(text, r).parse();
  check_unique_names(h.entries, r);
  check_layout(h.entries, data_size, r);
  return h;
}

Header parse_header_bytes(const uint8_t* data, size_t size, const Reporter& r) {
  uint64_t declared = 0;
  if (size >= 8) std::memcpy(&declared, data, 8);  // little-endian host (safetensors_format.h)
  const uint64_t n = checked_header_length(declared, size, r);
  Header h =
      parse_header(std::string_view(reinterpret_cast<const char*>(data) + 8, n), size - 8 - n, r);
  h.data_start = 8 + n;
  return h;
}

}  // namespace kiln::io::detail
