#pragma once
// Checkpoints as safetensors files, with libtorch's spellings:
//   kiln::save(model, "model.safetensors");   kiln::load(model, "model.safetensors");
//   kiln::save(optimizer, "opt.safetensors"); kiln::load(optimizer, "opt.safetensors");
//   kiln::save(tensor, "t.pt");               kiln::load(tensor, "t.pt");   (also vector<Tensor>)
// The file is always safetensors, whatever its name: libtorch's .pt (zip + pickle) files are not
// read or written (docs/compat.md).
// and one-file training checkpoints holding a model, an optimizer and string metadata (the step,
// the schedule, ...). Every write is atomic (temporary file + rename).
#include <concepts>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/optim/optimizer.h"

namespace kiln {

void save(const nn::Module& module, const std::string& path);
// strict: every parameter and buffer must be in the file with its shape, and nothing else.
nn::LoadStateDictResult load(nn::Module& module, const std::string& path, bool strict = true);
void save(const optim::Optimizer& optimizer, const std::string& path);
void load(optim::Optimizer& optimizer, const std::string& path);
template <class M>
void save(const nn::ModuleHolder<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module), path);
}
template <class M>
nn::LoadStateDictResult load(nn::ModuleHolder<M>& module, const std::string& path,
                             bool strict = true) {
  return load(static_cast<nn::Module&>(*module), path, strict);
}

// A module owned by a plain std::shared_ptr (`auto net = std::make_shared<Net>()`).
template <std::derived_from<nn::Module> M>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module), path);
}
template <std::derived_from<nn::Module> M>
nn::LoadStateDictResult load(std::shared_ptr<M>& module, const std::string& path,
                             bool strict = true) {
  return load(static_cast<nn::Module&>(*module), path, strict);
}

// One tensor, or a list of tensors, as libtorch's torch::save/torch::load of a Tensor and of a
// std::vector<Tensor>; load replaces the value with what the file holds.
void save(const Tensor& tensor, const std::string& path);
void load(Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);

namespace io {

// Model tensors under "model.", optimizer state under "optimizer.", plus metadata.
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer = nullptr,
                     const std::map<std::string, std::string>& metadata = {});
// Loads what save_checkpoint wrote (strictly) and returns its metadata.
std::map<std::string, std::string> load_checkpoint(const std::string& path, nn::Module& model,
                                                   optim::Optimizer* optimizer = nullptr);

}  // namespace io
}  // namespace kiln
