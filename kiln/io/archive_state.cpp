// Module and Optimizer through serialize archives: their state_dict() entries by name.
#include "kiln/io/archive.h"
#include "kiln/nn/module.h"
#include "kiln/optim/optimizer.h"

namespace kiln {

void nn::Module::save(serialize::OutputArchive& archive) const {
  for (const auto& item : state_dict()) archive.write(item.key(), item.value());
}

void nn::Module::load(serialize::InputArchive& archive) {
  for (auto& item : state_dict()) {
    Tensor target = item.value();  // shares the module's storage
    archive.read(item.key(), target);
  }
}

void optim::Optimizer::save(serialize::OutputArchive& archive) const {
  for (const auto& item : state_dict()) archive.write(item.key(), item.value());
}

void optim::Optimizer::load(serialize::InputArchive& archive) {
  OrderedDict<std::string, Tensor> state;
  for (const std::string& key : archive.keys()) {
    Tensor value;
    if (archive.try_read(key, value)) state.insert(key, value);
  }
  load_state_dict(state);
}

}  // namespace kiln
