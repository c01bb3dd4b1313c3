#include "kiln/io/safetensors_quantized.h"

#include <nlohmann/json.hpp>

#include "kiln/core/quantizer.h"

namespace kiln::io::detail {
namespace {

constexpr std::string_view kPrefix = "kiln.quantized.";

ScalarType qdtype_from_name(const std::string& name) {
  for (ScalarType t : {kQInt8, kQUInt8, kQInt32})
    if (name == dtype_name(t)) return t;
  return ScalarType::Undefined;
}

}  // namespace

std::map<std::string, std::string> with_quantizers(
    const std::map<std::string, Tensor>& tensors,
    const std::map<std::string, std::string>& metadata, const Reporter& r) {
  std::map<std::string, std::string> out = metadata;
  for (const auto& [name, t] : tensors) {
    const Quantizer* q = quantizer_of(t);
    if (!q) continue;
    const std::string key = std::string(kPrefix) + name;
    if (metadata.count(key)) r.fail("metadata key '", key, "' is reserved for tensor '", name, "'");
    nlohmann::json j;
    j["dtype"] = std::string(dtype_name(q->dtype()));
    j["scales"] = q->scales();
    j["zero_points"] = q->zero_points();
    j["axis"] = q->axis();
    out[key] = j.dump();
  }
  return out;
}

Tensor stored_values(const Tensor& t) { return quantizer_of(t) ? quantized_values(t) : t; }

namespace {

// The quantizer an entry describes for a tensor stored as `stored`; a kiln::Error saying what is
// wrong with it otherwise. Every field's JSON type is checked before it is read, so that no
// number converts out of its range.
std::shared_ptr<const Quantizer> quantizer_from(const std::string& text, ScalarType stored) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  KILN_CHECK(!j.is_discarded() && j.is_object(), "it is not a JSON object");
  auto field = [&](const char* key) -> const nlohmann::json& {
    auto it = j.find(key);
    KILN_CHECK(it != j.end(), "it has no \"", key, "\"");
    return *it;
  };
  const nlohmann::json& d = field("dtype");
  const ScalarType dtype =
      d.is_string() ? qdtype_from_name(d.get<std::string>()) : ScalarType::Undefined;
  KILN_CHECK(dtype != ScalarType::Undefined && underlying_int_type(dtype) == stored, "its dtype ",
             d.dump(), " is not a quantized dtype stored as ", stored);
  const nlohmann::json &s = field("scales"), &z = field("zero_points"), &a = field("axis");
  KILN_CHECK(s.is_array() && z.is_array() && s.size() == z.size(),
             "\"scales\" and \"zero_points\" are not arrays of one length");
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
  for (const nlohmann::json& e : s) {
    KILN_CHECK(e.is_number(), "a scale is not a number: ", e.dump());
    scales.push_back(e.get<double>());
  }
  for (const nlohmann::json& e : z) {
    KILN_CHECK(e.is_number_integer(), "a zero point is not an integer: ", e.dump());
    zero_points.push_back(e.get<int64_t>());
  }
  KILN_CHECK(a.is_number_integer(), "\"axis\" is not an integer: ", a.dump());
  const int64_t axis = a.get<int64_t>();
  if (axis >= 0)
    return std::make_shared<const Quantizer>(dtype, std::move(scales), std::move(zero_points),
                                             axis);
  KILN_CHECK(scales.size() == 1, "a per-tensor entry (axis -1) needs one scale and zero point");
  return std::make_shared<const Quantizer>(dtype, scales[0], zero_points[0]);
}

}  // namespace

void attach_quantizers(SafetensorsFile& file, const Reporter& r) {
  for (auto it = file.metadata.begin(); it != file.metadata.end();) {
    if (!std::string_view(it->first).starts_with(kPrefix)) {
      ++it;
      continue;
    }
    const std::string name = it->first.substr(kPrefix.size());
    auto t = file.tensors.find(name);
    if (t == file.tensors.end())
      r.fail("metadata entry '", it->first, "' names no tensor in the file");
    Tensor quantized;
    try {
      quantized = make_quantized(t->second, quantizer_from(it->second, t->second.dtype()));
    } catch (const Error& e) {
      r.fail("the quantization entry of tensor '", name, "' is invalid: ", e.what());
    }
    t->second = std::move(quantized);
    it = file.metadata.erase(it);
  }
}

}  // namespace kiln::io::detail
