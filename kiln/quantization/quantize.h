#pragma once
// Post-training int8 quantization, PyTorch's eager x86 flow (torch.ao.quantization):
//
//   auto prepared = kiln::quantization::prepare(*model);   // observers on Linear/Conv2d inputs
//   for (auto& batch : calibration) model->forward(batch);    // or (*model)(batch)
//   kiln::quantization::convert(prepared);                    // the layers now run in int8
//
// prepare and convert change the model in place: its Linear and Conv2d layers first observe
// their inputs (a forward pre-hook), then run as int8 layers (kiln/quantization/modules.h;
// Module::set_call_override), however forward is reached (`fc(x)`, `fc->forward(x)`, a
// Sequential). Their float parameters stay, unused.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/nn/module.h"
#include "kiln/quantization/modules.h"
#include "kiln/quantization/observer.h"

namespace kiln::quantization {

// Which observers watch a layer's input activations and its weight.
struct QConfig {
  ObserverFactory activation, weight;
};

// "x86" (also "fbgemm", "onednn"): HistogramObserver activations (quint8, reduce_range) and
// per-channel symmetric qint8 weights, as torch's get_default_qconfig("x86").
QConfig get_default_qconfig(const std::string& backend = "x86");
// Dynamic quantization's: activations are observed per call; per-channel qint8 weights.
QConfig default_dynamic_qconfig();

// What prepare attached: each observed layer, by its name in the model.
struct Prepared {
  struct Layer {
    std::string name;
    std::shared_ptr<nn::Module> module;
    std::shared_ptr<Observer> activation;
    int64_t hook;  // the observer's forward pre-hook
  };
  std::vector<Layer> layers;
  QConfig qconfig;
};

Prepared prepare(nn::Module& model, const QConfig& qconfig = get_default_qconfig());
// Replaces each observed layer by its int8 form; returns them by name. A layer that saw no data
// during calibration is an error naming it.
std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> convert(const Prepared& prepared);

// torch.ao.quantization.quantize_dynamic: the model's Linear and LSTM layers run as
// DynamicQuantizedLinear and DynamicQuantizedLSTM (int8 weights; each input quantized with its
// own range). Returns the int8 layers by name.
std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> quantize_dynamic(
    nn::Module& model, const QConfig& qconfig = default_dynamic_qconfig());

}  // namespace kiln::quantization
