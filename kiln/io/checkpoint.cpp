#include "kiln/io/checkpoint.h"

#include "kiln/core/error.h"
#include "kiln/io/safetensors.h"

namespace kiln {
namespace {

constexpr const char* kFormatKey = "format";

std::map<std::string, Tensor> prefixed(const OrderedDict<std::string, Tensor>& dict,
                                       const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& item : dict) out.emplace(prefix + item.key(), item.value());
  return out;
}

// The entries of `file` under `prefix`, with the prefix removed.
OrderedDict<std::string, Tensor> unprefixed(const io::SafetensorsFile& file,
                                            const std::string& prefix) {
  OrderedDict<std::string, Tensor> out;
  for (const auto& [key, value] : file.tensors)
    if (key.starts_with(prefix)) out.insert(key.substr(prefix.size()), value);
  return out;
}

void check_format(const io::SafetensorsFile& file, const std::string& path,
                  const std::string& expected) {
  auto it = file.metadata.find(kFormatKey);
  KILN_CHECK(it != file.metadata.end() && it->second == expected, "load: '", path,
             "' is not a Kiln ", expected, " file (its __metadata__ format is '",
             it == file.metadata.end() ? std::string("<none>") : it->second, "')");
}

}  // namespace

void save(const nn::Module& module, const std::string& path) {
  io::save_safetensors(prefixed(module.state_dict(), ""), path, {{kFormatKey, "module"}});
}

nn::LoadStateDictResult load(nn::Module& module, const std::string& path, bool strict) {
  io::SafetensorsFile file = io::load_safetensors(path);
  return module.load_state_dict(unprefixed(file, ""), strict);
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  io::save_safetensors(prefixed(optimizer.state_dict(), ""), path, {{kFormatKey, "optimizer"}});
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  io::SafetensorsFile file = io::load_safetensors(path);
  check_format(file, path, "optimizer");
  optimizer.load_state_dict(unprefixed(file, ""));
}

// A tensor list is stored under the keys "0", "1", ..., as libtorch's archives name the elements.
void save(const std::vector<Tensor>& tensors, const std::string& path) {
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < tensors.size(); ++i) named.emplace(std::to_string(i), tensors[i]);
  io::save_safetensors(named, path, {{kFormatKey, "tensors"}});
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  io::SafetensorsFile file = io::load_safetensors(path);
  check_format(file, path, "tensors");
  std::vector<Tensor> out(file.tensors.size());
  for (auto& [key, value] : file.tensors) {
    size_t i = 0;
    bool is_index = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
    if (is_index) i = std::stoul(key);
    KILN_CHECK(is_index && i < out.size() && !out[i].defined(), "load: '", path,
               "' holds a tensor named '", key, "'; a tensor list is stored as '0' .. '",
               out.size() - 1, "'");
    out[i] = std::move(value);
  }
  tensors = std::move(out);
}

void save(const Tensor& tensor, const std::string& path) {
  save(std::vector<Tensor>{tensor}, path);
}

void load(Tensor& tensor, const std::string& path) {
  std::vector<Tensor> tensors;
  load(tensors, path);
  KILN_CHECK(tensors.size() == 1, "load(Tensor&): '", path, "' holds ", tensors.size(),
             " tensors, expected one (load it into a std::vector<Tensor>)");
  tensor = std::move(tensors[0]);
}

namespace io {

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer,
                     const std::map<std::string, std::string>& metadata) {
  std::map<std::string, Tensor> tensors = prefixed(model.state_dict(), "model.");
  if (optimizer) tensors.merge(prefixed(optimizer->state_dict(), "optimizer."));
  std::map<std::string, std::string> meta = metadata;
  meta[kFormatKey] = "checkpoint";
  save_safetensors(tensors, path, meta);
}

std::map<std::string, std::string> load_checkpoint(const std::string& path, nn::Module& model,
                                                   optim::Optimizer* optimizer) {
  SafetensorsFile file = load_safetensors(path);
  check_format(file, path, "checkpoint");
  model.load_state_dict(unprefixed(file, "model."), /*strict=*/true);
  if (optimizer) optimizer->load_state_dict(unprefixed(file, "optimizer."));
  file.metadata.erase(kFormatKey);
  return file.metadata;
}

}  // namespace io
}  // namespace kiln
