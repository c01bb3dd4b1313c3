#include "kiln/quantization/quantize.h"

#include "kiln/core/error.h"

namespace kiln::quantization {
namespace {

bool is_quantizable(const nn::Module& m) {
  return dynamic_cast<const nn::LinearImpl*>(&m) || dynamic_cast<const nn::Conv2dImpl*>(&m);
}

template <class M, class... Args>
std::shared_ptr<nn::Module> install(nn::Module& layer, Args&&... args) {
  auto q = std::make_shared<M>(std::forward<Args>(args)...);
  layer.set_call_override<Tensor(const Tensor&)>([q](const Tensor& x) { return q->forward(x); });
  return q;
}

}  // namespace

QConfig get_default_qconfig(const std::string& backend) {
  KILN_CHECK(backend == "x86" || backend == "fbgemm" || backend == "onednn",
             "get_default_qconfig: unknown backend '", backend,
             "'; Kiln's int8 layers run on oneDNN: 'x86', 'fbgemm' or 'onednn'");
  return {[] {
            return std::make_unique<HistogramObserver>(
                ObserverOptions().dtype(kQUInt8).reduce_range(true));
          },
          [] { return std::make_unique<PerChannelMinMaxObserver>(); }};
}

QConfig default_dynamic_qconfig() {
  return {nullptr, [] { return std::make_unique<PerChannelMinMaxObserver>(); }};
}

Prepared prepare(nn::Module& model, const QConfig& qconfig) {
  KILN_CHECK(qconfig.activation && qconfig.weight,
             "prepare: the qconfig needs an activation and a weight observer");
  Prepared prepared{{}, qconfig};
  for (const auto& item : model.named_modules()) {
    const std::string& name = item.key();
    const std::shared_ptr<nn::Module>& module = item.value();
    if (!is_quantizable(*module)) continue;
    std::shared_ptr<Observer> observer = qconfig.activation();
    const int64_t hook =
        module->register_forward_pre_hook([observer](const Tensor& x) { (*observer)(x); });
    prepared.layers.push_back({name, module, std::move(observer), hook});
  }
  KILN_CHECK(!prepared.layers.empty(), "prepare: ", model.name(),
             " has no Linear or Conv2d layer to quantize");
  return prepared;
}

std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> convert(const Prepared& prepared) {
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> out;
  for (const Prepared::Layer& layer : prepared.layers) {
    KILN_CHECK(layer.activation->min_val().defined(), "convert: layer '", layer.name,
               "' saw no input during calibration; run the prepared model on calibration data "
               "first");
    const QParams input = layer.activation->calculate_qparams();
    std::unique_ptr<Observer> weight = prepared.qconfig.weight();
    nn::Module& m = *layer.module;
    m.remove_forward_pre_hook(layer.hook);
    if (auto* linear = dynamic_cast<nn::LinearImpl*>(&m))
      out.emplace_back(layer.name, install<QuantizedLinearImpl>(m, *linear, input, *weight));
    else if (auto* conv = dynamic_cast<nn::Conv2dImpl*>(&m))
      out.emplace_back(layer.name, install<QuantizedConv2dImpl>(m, *conv, input, *weight));
  }
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> quantize_dynamic(
    nn::Module& model, const QConfig& qconfig) {
  KILN_CHECK(static_cast<bool>(qconfig.weight),
             "quantize_dynamic: the qconfig needs a weight observer");
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> out;
  for (const auto& item : model.named_modules()) {
    const std::string& name = item.key();
    const std::shared_ptr<nn::Module>& module = item.value();
    if (auto* linear = dynamic_cast<nn::LinearImpl*>(module.get())) {
      std::unique_ptr<Observer> weight = qconfig.weight();
      out.emplace_back(name, install<DynamicQuantizedLinearImpl>(*linear, *linear, *weight));
    } else if (auto* lstm = dynamic_cast<nn::LSTMImpl*>(module.get())) {
      using State = DynamicQuantizedLSTMImpl::State;
      using Result = std::tuple<Tensor, State>;
      auto q = std::make_shared<DynamicQuantizedLSTMImpl>(*lstm, qconfig.weight);
      lstm->set_call_override<Result(const Tensor&, const std::optional<State>&)>(
          [q](const Tensor& x, const std::optional<State>& hx) { return q->forward(x, hx); });
      out.emplace_back(name, q);
    }
  }
  KILN_CHECK(!out.empty(), "quantize_dynamic: ", model.name(),
             " has no Linear or LSTM layer to quantize");
  return out;
}

}  // namespace kiln::quantization
