#include "kiln/io/checkpoint.h"

#include <istream>
#include <iterator>
#include <ostream>

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

// Where a file goes or comes from: a path (atomic write) or a stream (the same bytes).
void write_file(const std::map<std::string, Tensor>& tensors, const std::string& format,
                const std::string& path) {
  io::save_safetensors(tensors, path, {{kFormatKey, format}});
}
void write_file(const std::map<std::string, Tensor>& tensors, const std::string& format,
                std::ostream& stream) {
  const std::vector<uint8_t> bytes = io::to_safetensors_bytes(tensors, {{kFormatKey, format}});
  stream.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  KILN_CHECK(stream.good(), "save: writing ", bytes.size(), " bytes to the stream failed");
}
io::SafetensorsFile read_file(const std::string& path) { return io::load_safetensors(path); }
io::SafetensorsFile read_file(std::istream& stream) {
  const std::string bytes((std::istreambuf_iterator<char>(stream)),
                          std::istreambuf_iterator<char>());
  return io::from_safetensors_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                    "<stream>");
}
std::string name_of(const std::string& path) { return path; }
std::string name_of(const std::istream&) { return "<stream>"; }

template <class To>
void save_module(const nn::Module& module, To& to) {
  write_file(prefixed(module.state_dict(), ""), "module", to);
}
template <class From>
nn::LoadStateDictResult load_module(nn::Module& module, From& from, bool strict) {
  return module.load_state_dict(unprefixed(read_file(from), ""), strict);
}
template <class To>
void save_optimizer(const optim::Optimizer& optimizer, To& to) {
  write_file(prefixed(optimizer.state_dict(), ""), "optimizer", to);
}
template <class From>
void load_optimizer(optim::Optimizer& optimizer, From& from) {
  io::SafetensorsFile file = read_file(from);
  check_format(file, name_of(from), "optimizer");
  optimizer.load_state_dict(unprefixed(file, ""));
}

// A tensor list is stored under the keys "0", "1", ..., as libtorch's archives name the elements.
template <class To>
void save_tensors(const std::vector<Tensor>& tensors, To& to) {
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < tensors.size(); ++i) named.emplace(std::to_string(i), tensors[i]);
  write_file(named, "tensors", to);
}
template <class From>
std::vector<Tensor> load_tensors(From& from) {
  io::SafetensorsFile file = read_file(from);
  const std::string name = name_of(from);
  check_format(file, name, "tensors");
  std::vector<Tensor> out(file.tensors.size());
  for (auto& [key, value] : file.tensors) {
    size_t i = 0;
    bool is_index = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
    if (is_index) i = std::stoul(key);
    KILN_CHECK(is_index && i < out.size() && !out[i].defined(), "load: '", name,
               "' holds a tensor named '", key, "'; a tensor list is stored as '0' .. '",
               out.size() - 1, "'");
    out[i] = std::move(value);
  }
  return out;
}
template <class From>
Tensor load_tensor(From& from) {
  std::vector<Tensor> tensors = load_tensors(from);
  KILN_CHECK(tensors.size() == 1, "load(Tensor&): '", name_of(from), "' holds ", tensors.size(),
             " tensors, expected one (load it into a std::vector<Tensor>)");
  return std::move(tensors[0]);
}

}  // namespace

void save(const nn::Module& module, const std::string& path) { save_module(module, path); }
void save(const nn::Module& module, std::ostream& stream) { save_module(module, stream); }
nn::LoadStateDictResult load(nn::Module& module, const std::string& path, bool strict) {
  return load_module(module, path, strict);
}
nn::LoadStateDictResult load(nn::Module& module, std::istream& stream, bool strict) {
  return load_module(module, stream, strict);
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  save_optimizer(optimizer, path);
}
void save(const optim::Optimizer& optimizer, std::ostream& stream) {
  save_optimizer(optimizer, stream);
}
void load(optim::Optimizer& optimizer, const std::string& path) { load_optimizer(optimizer, path); }
void load(optim::Optimizer& optimizer, std::istream& stream) { load_optimizer(optimizer, stream); }

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  save_tensors(tensors, path);
}
void save(const std::vector<Tensor>& tensors, std::ostream& stream) {
  save_tensors(tensors, stream);
}
void load(std::vector<Tensor>& tensors, const std::string& path) { tensors = load_tensors(path); }
void load(std::vector<Tensor>& tensors, std::istream& stream) { tensors = load_tensors(stream); }

void save(const Tensor& tensor, const std::string& path) { save_tensors({tensor}, path); }
void save(const Tensor& tensor, std::ostream& stream) { save_tensors({tensor}, stream); }
void load(Tensor& tensor, const std::string& path) { tensor = load_tensor(path); }
void load(Tensor& tensor, std::istream& stream) { tensor = load_tensor(stream); }

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
