#include "kiln/io/archive.h"

#include <charconv>
#include <cstdio>
#include <iterator>
#include <ostream>

#include "kiln/autograd/grad_mode.h"
#include "kiln/core/error.h"
#include "kiln/io/safetensors.h"
#include "kiln/ops/ops.h"

namespace kiln::serialize {
namespace {

constexpr const char* kFormatKey = "format";
constexpr const char* kFormat = "archive";
constexpr const char* kValuePrefix = "value.";  // metadata key of a non-tensor value

// An IValue other than a tensor as "<kind>:<text>".
std::string encode(const std::string& key, const IValue& v) {
  if (v.isDouble()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v.toDouble());
    return std::string("d:") + buf;
  }
  if (v.isInt()) return "i:" + std::to_string(v.toInt());
  if (v.isBool()) return v.toBool() ? "b:1" : "b:0";
  if (v.isString()) return "s:" + v.toStringRef();
  if (v.isIntList()) {
    std::string out = "l:";
    for (int64_t x : v.toIntVector()) out += std::to_string(x) + ",";
    return out;
  }
  KILN_FAIL("OutputArchive::write: '", key,
            "' holds an IValue Kiln cannot store (none); store a tensor, double, int, bool, "
            "string or int list");
}

int64_t parse_int(const std::string& key, std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  KILN_CHECK(ec == std::errc() && end == text.data() + text.size(), "InputArchive: value '", key,
             "' is not a valid integer: '", text, "'");
  return value;
}

IValue decode(const std::string& key, const std::string& text) {
  KILN_CHECK(text.size() >= 2 && text[1] == ':', "InputArchive: value '", key, "' is malformed: '",
             text, "'");
  const std::string_view body = std::string_view(text).substr(2);
  switch (text[0]) {
    case 'd': {
      char* end = nullptr;
      const std::string s(body);
      const double d = std::strtod(s.c_str(), &end);
      KILN_CHECK(!s.empty() && end == s.c_str() + s.size(), "InputArchive: value '", key,
                 "' is not a valid double: '", s, "'");
      return d;
    }
    case 'i':
      return parse_int(key, body);
    case 'b':
      KILN_CHECK(body == "0" || body == "1", "InputArchive: value '", key,
                 "' is not a valid bool: '", body, "'");
      return body == "1";
    case 's':
      return std::string(body);
    case 'l': {
      std::vector<int64_t> list;
      size_t begin = 0;
      while (begin < body.size()) {
        const size_t comma = body.find(',', begin);
        KILN_CHECK(comma != std::string_view::npos, "InputArchive: value '", key,
                   "' is a malformed int list");
        list.push_back(parse_int(key, body.substr(begin, comma - begin)));
        begin = comma + 1;
      }
      return list;
    }
    default:
      KILN_FAIL("InputArchive: value '", key, "' has an unknown kind '", text[0], "'");
  }
}

}  // namespace

struct OutputArchive::Entries {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> values;
};

OutputArchive::OutputArchive() : entries_(std::make_shared<Entries>()) {}
OutputArchive::OutputArchive(std::shared_ptr<Entries> entries, std::string prefix)
    : entries_(std::move(entries)), prefix_(std::move(prefix)) {}

void OutputArchive::write(const std::string& key, const Tensor& tensor, bool /*is_buffer*/) {
  KILN_CHECK(tensor.defined(), "OutputArchive::write: tensor '", prefix_ + key, "' is undefined");
  entries_->tensors[prefix_ + key] = tensor.detach();
}

void OutputArchive::write(const std::string& key, const IValue& value) {
  if (value.isTensor()) return write(key, value.toTensor());
  entries_->values[prefix_ + key] = encode(prefix_ + key, value);
}

void OutputArchive::write(const std::string& key, OutputArchive& nested) {
  // Entries nested already holds move over; later writes to it land here directly.
  const std::string prefix = prefix_ + key + ".";
  for (auto& [k, t] : nested.entries_->tensors) entries_->tensors[prefix + k] = t;
  for (auto& [k, v] : nested.entries_->values) entries_->values[prefix + k] = v;
  nested = OutputArchive(entries_, prefix);
}

std::map<std::string, std::string> OutputArchive::metadata() const {
  std::map<std::string, std::string> out{{kFormatKey, kFormat}};
  for (const auto& [k, v] : entries_->values) out[kValuePrefix + k] = v;
  return out;
}

std::vector<uint8_t> OutputArchive::bytes() const {
  return io::to_safetensors_bytes(entries_->tensors, metadata());
}

void OutputArchive::save_to(const std::string& filename) const {
  io::save_safetensors(entries_->tensors, filename, metadata());
}

void OutputArchive::save_to(std::ostream& stream) const {
  const std::vector<uint8_t> data = bytes();
  stream.write(reinterpret_cast<const char*>(data.data()),
               static_cast<std::streamsize>(data.size()));
  KILN_CHECK(stream.good(), "OutputArchive::save_to: writing ", data.size(),
             " bytes to the stream failed");
}

void OutputArchive::save_to(const std::function<size_t(const void*, size_t)>& func) const {
  const std::vector<uint8_t> data = bytes();
  const size_t taken = func(data.data(), data.size());
  KILN_CHECK(taken == data.size(), "OutputArchive::save_to: the writer took ", taken, " of ",
             data.size(), " bytes");
}

struct InputArchive::Entries {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> values;
};

InputArchive::InputArchive() : entries_(std::make_shared<Entries>()) {}

bool InputArchive::try_read(const std::string& key, Tensor& tensor, bool /*is_buffer*/) {
  auto it = entries_->tensors.find(prefix_ + key);
  if (it == entries_->tensors.end()) return false;
  const Tensor& stored = it->second;
  if (!tensor.defined()) {
    tensor = stored.clone();
    return true;
  }
  KILN_CHECK(tensor.sizes() == stored.sizes(), "InputArchive::read: '", prefix_ + key,
             "' has shape ", stored.sizes(), " in the archive, but the tensor read into has ",
             tensor.sizes());
  NoGradGuard no_grad;
  tensor.copy_(stored);
  return true;
}

void InputArchive::read(const std::string& key, Tensor& tensor, bool is_buffer) {
  KILN_CHECK(try_read(key, tensor, is_buffer), "InputArchive::read: no tensor named '",
             prefix_ + key, "' in the archive");
}

bool InputArchive::try_read(const std::string& key, IValue& value) {
  if (auto it = entries_->values.find(prefix_ + key); it != entries_->values.end()) {
    value = decode(prefix_ + key, it->second);
    return true;
  }
  if (auto it = entries_->tensors.find(prefix_ + key); it != entries_->tensors.end()) {
    value = it->second.clone();
    return true;
  }
  return false;
}

void InputArchive::read(const std::string& key, IValue& value) {
  KILN_CHECK(try_read(key, value), "InputArchive::read: no value named '", prefix_ + key,
             "' in the archive");
}

bool InputArchive::try_read(const std::string& key, InputArchive& nested) {
  const std::string prefix = prefix_ + key + ".";
  auto has_prefix = [&](const auto& map) {
    auto it = map.lower_bound(prefix);
    return it != map.end() && it->first.starts_with(prefix);
  };
  if (!has_prefix(entries_->tensors) && !has_prefix(entries_->values)) return false;
  nested.entries_ = entries_;
  nested.prefix_ = prefix;
  return true;
}

void InputArchive::read(const std::string& key, InputArchive& nested) {
  KILN_CHECK(try_read(key, nested), "InputArchive::read: no archive named '", prefix_ + key,
             "' in the archive");
}

void InputArchive::adopt(io::SafetensorsFile file, std::optional<Device> device) {
  auto entries = std::make_shared<Entries>();
  for (auto& [k, t] : file.tensors) entries->tensors[k] = device ? t.to(*device) : t;
  const std::string_view value_prefix = kValuePrefix;
  for (auto& [k, v] : file.metadata)
    if (k.starts_with(value_prefix)) entries->values[k.substr(value_prefix.size())] = v;
  entries_ = std::move(entries);
  prefix_.clear();
}

void InputArchive::load_from(const char* data, size_t size, std::optional<Device> device) {
  adopt(io::from_safetensors_bytes(reinterpret_cast<const uint8_t*>(data), size, "<archive>"),
        device);
}

void InputArchive::load_from(std::istream& stream, std::optional<Device> device) {
  const std::string data((std::istreambuf_iterator<char>(stream)),
                         std::istreambuf_iterator<char>());
  load_from(data.data(), data.size(), device);
}

void InputArchive::load_from(const std::string& filename, std::optional<Device> device) {
  adopt(io::load_safetensors(filename), device);
}

std::vector<std::string> InputArchive::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, t] : entries_->tensors)
    if (k.starts_with(prefix_)) out.push_back(k.substr(prefix_.size()));
  for (const auto& [k, v] : entries_->values)
    if (k.starts_with(prefix_)) out.push_back(k.substr(prefix_.size()));
  return out;
}

}  // namespace kiln::serialize
