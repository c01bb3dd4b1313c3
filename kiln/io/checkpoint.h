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
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <utility>
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
// One tensor, or a list of tensors, as libtorch's torch::save/torch::load of a Tensor and of a
// std::vector<Tensor>; load replaces the value with what the file holds.
void save(const Tensor& tensor, const std::string& path);
void load(Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);

// Each of the above to and from a stream (the same bytes as the file).
void save(const nn::Module& module, std::ostream& stream);
nn::LoadStateDictResult load(nn::Module& module, std::istream& stream, bool strict = true);
void save(const optim::Optimizer& optimizer, std::ostream& stream);
void load(optim::Optimizer& optimizer, std::istream& stream);
void save(const Tensor& tensor, std::ostream& stream);
void load(Tensor& tensor, std::istream& stream);
void save(const std::vector<Tensor>& tensors, std::ostream& stream);
void load(std::vector<Tensor>& tensors, std::istream& stream);

// A module holder, or a module owned by a plain std::shared_ptr (`auto net =
// std::make_shared<Net>()`), to a path or a stream.
template <class M, class To>
void save(const nn::ModuleHolder<M>& module, To&& to) {
  save(static_cast<const nn::Module&>(*module), std::forward<To>(to));
}
template <class M, class From>
nn::LoadStateDictResult load(nn::ModuleHolder<M>& module, From&& from, bool strict = true) {
  return load(static_cast<nn::Module&>(*module), std::forward<From>(from), strict);
}
template <std::derived_from<nn::Module> M, class To>
void save(const std::shared_ptr<M>& module, To&& to) {
  save(static_cast<const nn::Module&>(*module), std::forward<To>(to));
}
template <std::derived_from<nn::Module> M, class From>
nn::LoadStateDictResult load(std::shared_ptr<M>& module, From&& from, bool strict = true) {
  return load(static_cast<nn::Module&>(*module), std::forward<From>(from), strict);
}

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
