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
    std::shared_ptr<const Quantizer> q;
    try {
      const nlohmann::json j = nlohmann::json::parse(it->second);
      const ScalarType dtype = qdtype_from_name(j.at("dtype").get<std::string>());
      if (dtype == ScalarType::Undefined || underlying_int_type(dtype) != t->second.dtype())
        r.fail("tensor '", name, "' is stored as ", t->second.dtype(),
               ", which its quantization entry's dtype ", j.at("dtype").dump(), " does not store");
      auto scales = j.at("scales").get<std::vector<double>>();
      auto zero_points = j.at("zero_points").get<std::vector<int64_t>>();
      const int64_t axis = j.at("axis").get<int64_t>();
      if (axis < 0) {
        if (scales.size() != 1 || zero_points.size() != 1)
          r.fail("tensor '", name, "': a per-tensor entry needs one scale and one zero point");
        q = std::make_shared<const Quantizer>(dtype, scales[0], zero_points[0]);
      } else {
        q = std::make_shared<const Quantizer>(dtype, std::move(scales), std::move(zero_points),
                                              axis);
      }
    } catch (const nlohmann::json::exception& e) {
      r.fail("the quantization entry of tensor '", name, "' is malformed: ", e.what());
    } catch (const Error& e) {
      r.fail("the quantization entry of tensor '", name, "' is invalid: ", e.what());
    }
    t->second = make_quantized(t->second, std::move(q));
    it = file.metadata.erase(it);
  }
}

}  // namespace kiln::io::detail
