// nll_loss (a registry entry: kernel + backward written with Kiln ops) and cross_entropy (class
// indices through log_softmax + nll_loss, with label smoothing; or class probabilities).
#include <cmath>

#include "kiln/backend/cpu/copy.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/norm_util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using nn_util::reduction_of;

// inputs: input (C) / (N, C) / (N, C, d1, ...), target, weight?; attrs: reduction, ignore_index.
// outputs: loss, total_weight (sum of the weights of the non-ignored targets).

std::vector<TensorSpec> nll_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor &x = in[0], &t = in[1], &w = in[2];
  KILN_CHECK(x.is_floating_point(), "nll_loss: expected a floating point input, got ", x.dtype());
  KILN_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32 || t.dtype() == kUInt8,
             "nll_loss: expected an integer target (class indices), got ", t.dtype());
  KILN_CHECK(x.dim() >= 1, "nll_loss: input must have at least 1 dim (C), got shape ",
             x.sym_sizes());
  SymShape expected = x.sym_sizes();
  if (x.dim() == 1) {
    expected.clear();
  } else {
    expected.erase(expected.begin() + 1);
  }
  KILN_CHECK(t.sym_sizes() == SymIntArrayRef(expected), "nll_loss: expected target of shape ",
             SymIntArrayRef(expected), " for input of shape ", x.sym_sizes(), ", got ",
             t.sym_sizes());
  const SymInt c = x.sym_size(x.dim() == 1 ? 0 : 1);
  KILN_CHECK(!w.defined() || (w.dim() == 1 && w.sym_size(0) == c),
             "nll_loss: weight tensor should be defined either for all ", c,
             " classes or no classes but got weight tensor of shape: ",
             w.defined() ? w.sym_sizes() : SymIntArrayRef());
  const Reduction r = reduction_of("nll_loss", a.i(0));
  SymShape out = r == Reduction::None ? t.sym_sizes().sym_vec() : SymShape{};
  return {meta::spec(out, x.dtype(), x.device()), meta::spec({}, x.dtype(), x.device())};
}

void nll_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor x = nn_util::as_compute(in[0]);
  const std::vector<int64_t> target = nn_util::to_ints(in[1]);
  const int64_t c = x.sym_size(x.dim() == 1 ? 0 : 1).guard_int();
  const int64_t n = x.dim() == 1 ? 1 : x.sym_size(0).guard_int();
  const int64_t inner = n * c == 0 ? 0 : x.sym_numel().guard_int() / (n * c);
  const std::vector<double> w =
      in[2].defined() ? nn_util::to_doubles(in[2]) : std::vector<double>(c, 1.0);
  const Reduction r = reduction_of("nll_loss", a.i(0));
  const int64_t ignore = a.i(1);
  std::vector<double> per(target.size(), 0.0);
  double total = 0, weight_sum = 0;
  nn_util::visit_compute(x.dtype(), "nll_loss", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t s = 0; s < inner; ++s) {
        const int64_t k = i * inner + s;
        const int64_t t = target[k];
        nn_util::check_class_index(t, c, ignore);
        if (t == ignore) continue;
        per[k] = -w[t] * static_cast<double>(px[(i * c + t) * inner + s]);
        total += per[k];
        weight_sum += w[t];
      }
    }
  });
  if (r == Reduction::None) {
    cpu::copy(out[0], nn_util::from_doubles(per, nn_util::concrete_sizes(in[1])));
  } else {
    const double v = r == Reduction::Sum ? total : total / weight_sum;
    cpu::fill(out[0], v);
  }
  cpu::fill(out[1], weight_sum);
}

// 1 at each non-ignored target's class, in x's shape and dtype.
Tensor target_one_hot(const Tensor& x, const Tensor& target, int64_t ignore) {
  const int64_t class_dim = x.dim() == 1 ? 0 : 1;
  const int64_t c = x.sym_size(class_dim).guard_int();
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[class_dim] = c;
  Tensor classes = arange(c, TensorOptions(kInt64).device(x.device())).view(SymIntList(shape));
  Tensor t = x.dim() == 1 ? target : target.unsqueeze(1);
  return ((t == classes) & (t != ignore)).to(x.dtype());
}

// The per-class weight broadcast against x's class dim (undefined stays undefined).
Tensor class_weight(const Tensor& w, const Tensor& x) {
  if (!w.defined() || x.dim() == 1) return w;
  return w.view(SymIntList(nn_util::channel_shape(w.sym_size(0).guard_int(), x.dim())));
}

std::vector<Tensor> nll_backward(const BackwardContext& c) {
  const Tensor &x = c.input(0), &w = c.input(2);
  const Reduction r = reduction_of("nll_loss", c.attrs.i(0));
  const int64_t class_dim = x.dim() == 1 ? 0 : 1;
  const Tensor onehot = target_one_hot(x, c.input(1), c.attrs.i(1));
  const Tensor w_b = class_weight(w, x);
  const Tensor& tw = c.output(1);
  std::vector<Tensor> grads(3);
  if (c.grad(0).defined()) {
    Tensor g = c.grad(0);
    if (r == Reduction::None && x.dim() > 1) g = g.unsqueeze(1);
    if (r == Reduction::Mean) g = g / tw;
    const Tensor picked = w.defined() ? onehot * w_b : onehot;
    if (c.needs_grad(0)) grads[0] = -picked * g;
    if (c.needs_grad(2)) {
      Tensor per = -x * onehot;
      if (r == Reduction::Mean) per = per - c.output(0) * onehot;
      grads[2] = nn_util::sum_except(per * g, class_dim);
    }
  }
  if (c.needs_grad(2) && c.grad(1).defined()) {
    Tensor from_total = nn_util::sum_except(onehot, class_dim) * c.grad(1);
    grads[2] = grads[2].defined() ? grads[2] + from_total : from_total;
  }
  return grads;
}

std::vector<OpSample> nll_samples(ScalarType dt) {
  auto mk = [&](std::vector<int64_t> s, double lo = -3, double hi = 0) {
    return samples::make(s, dt, lo, hi);
  };
  auto t = [](std::vector<int64_t> v, std::vector<int64_t> shape) {
    return tensor(v).view(SymIntList(shape));
  };
  const int64_t none = 0, mean = 1, sum = 2, ign = -100;
  Tensor w = mk({4}, 0.5, 2);
  return {
      {{mk({3, 4}), t({0, 3, 1}, {3}), Tensor()}, {mean, ign}, "mean"},
      {{mk({3, 4}), t({2, -100, 1}, {3}), w}, {mean, ign}, "weighted mean, ignored"},
      {{mk({3, 4}), t({2, 1, 1}, {3}), w}, {none, int64_t{1}}, "none, ignore_index 1"},
      {{mk({2, 4, 3}), t({0, 1, 3, 2, 2, 0}, {2, 3}), w}, {sum, ign}, "sum, spatial"},
      {{mk({2, 4, 2, 2}), t({0, 1, 3, 2, 2, 0, 1, 1}, {2, 2, 2}), Tensor()},
       {mean, ign},
       "mean, 2 spatial dims"},
      {{mk({4}), t({2}, {}), w}, {none, ign}, "1-d input"},
      {{mk({0, 4}), t({}, {0}), Tensor()}, {sum, ign}, "empty batch"},
      {{samples::make({4, 3}, dt, -3, 0, true).t(), t({1, 0, 2}, {3}), w},
       {mean, ign},
       "non-contiguous"},
  };
}

std::vector<Tensor> nll_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor& x = in[0];
  const std::vector<double> xd = nn_util::to_doubles(x);
  const std::vector<int64_t> target = nn_util::to_ints(in[1]);
  const int64_t c = x.sym_size(x.dim() == 1 ? 0 : 1).guard_int();
  const int64_t inner =
      x.dim() <= 2 ? 1 : x.sym_numel().guard_int() / (x.sym_size(0).guard_int() * c);
  std::vector<double> per(target.size(), 0.0);
  double total = 0, wsum = 0;
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k] == a.i(1)) continue;
    const double w = in[2].defined() ? nn_util::to_doubles(in[2])[target[k]] : 1.0;
    const size_t i = k / inner, s = k % inner;
    per[k] = -w * xd[(i * c + target[k]) * inner + s];
    total += per[k];
    wsum += w;
  }
  const Reduction r = reduction_of("nll_loss", a.i(0));
  Tensor loss = r == Reduction::None
                    ? nn_util::from_doubles(per, nn_util::concrete_sizes(in[1]))
                    : nn_util::from_doubles({r == Reduction::Sum ? total : total / wsum}, {});
  return {loss, nn_util::from_doubles({wsum}, {})};
}

// vmap's rule: the batch joins the samples (one unreduced nll_loss of B*N rows), then each
// element's losses are reduced on their own. A batched weight takes the loop.
std::optional<BatchResult> nll_batch_rule(const BatchCall& c) {
  if (c.values.size() > 2 && c.bdims[2]) return std::nullopt;
  const int64_t batch = c.batch_size;
  const Tensor x = c.batched(0), target = c.batched(1);
  const Tensor& weight = c.values.size() > 2 ? c.values[2] : Tensor();
  const int64_t ignore = c.attrs.i(1);
  // A logical (C) input has one sample: the batch is the samples.
  const bool one_sample = x.dim() == 2;
  const Tensor rows = one_sample ? x : x.flatten(0, 1);
  const Tensor rows_target = one_sample ? target : target.flatten(0, 1);
  static const OpDef& op = get_op("nll_loss");
  Tensor losses = call_op(op, {rows, rows_target, weight},
                          {nn_util::reduction_attr(Reduction::None), ignore})[0];
  if (!one_sample) losses = losses.unflatten(0, {SymInt(batch), x.sym_size(1)});
  // Each element's total weight: the weights of its targets that are not ignored.
  const Tensor kept = target.ne(ignore);
  Tensor per_target = kept.to(x.dtype());
  if (weight.defined())
    per_target =
        per_target * weight.index_select(0, target.masked_fill(kept.logical_not(), 0).flatten())
                         .view(target.sym_sizes());
  const std::vector<int64_t> inner = [&] {
    std::vector<int64_t> d;
    for (int64_t k = 1; k < target.dim(); ++k) d.push_back(k);
    return d;
  }();
  const Tensor total_weight = inner.empty() ? per_target : per_target.sum(inner);
  Tensor loss;
  switch (reduction_of("nll_loss", c.attrs.i(0))) {
    case Reduction::None:
      loss = losses;
      break;
    case Reduction::Sum:
      loss = inner.empty() ? losses : losses.sum(inner);
      break;
    case Reduction::Mean:
      loss = (inner.empty() ? losses : losses.sum(inner)) / total_weight;
      break;
  }
  return BatchResult{{loss, total_weight}, {int64_t{0}, int64_t{0}}};
}

std::tuple<Tensor, Tensor> nll_loss_with_total(const Tensor& input, const Tensor& target,
                                               const Tensor& weight, Reduction reduction,
                                               int64_t ignore_index) {
  static const OpDef& op = get_op("nll_loss");
  std::vector<Tensor> out =
      call_op(op, {input, target, weight}, {nn_util::reduction_attr(reduction), ignore_index});
  return {out[0], out[1]};
}

}  // namespace

KILN_REGISTER_OP(nll_loss)
    .schema(
        "nll_loss(Tensor input, Tensor target, Tensor? weight, int reduction=Mean, int "
        "ignore_index=-100) -> (Tensor loss, Tensor total_weight)")
    .meta(nll_meta)
    .cpu(nll_kernel)
    .save_outputs(true)
    .backward(nll_backward)
    .batch_rule(nll_batch_rule)
    .materialize_grads(false)
    .samples(nll_samples)
    .error_samples([] {
      const Tensor x = samples::make({3, 4}, kFloat32), t = tensor({0, 3, 1}, kInt64);
      const Attrs a{int64_t{1}, int64_t{-100}};
      return std::vector<OpErrorSample>{
          {{x.to(kInt64), t, Tensor()},
           a,
           "expected a floating point input, got int64",
           "integer input"},
          {{x, t.to(kFloat32), Tensor()},
           a,
           "expected an integer target (class indices), got "
           "float32",
           "float target"},
          {{samples::make({}, kFloat32), tensor(0, kInt64), Tensor()},
           a,
           "input must have at least 1 dim (C), got shape []",
           "0-dim input"},
          {{x, tensor({0, 1}, kInt64), Tensor()},
           a,
           "expected target of shape [3] for input of shape [3, 4], got [2]",
           "target's shape"},
          {{x, t, samples::make({3}, kFloat32)},
           a,
           "defined either for all 4 classes or no classes but got weight tensor of shape: [3]",
           "weight's shape"},
          {{x, t, Tensor()},
           {int64_t{5}, int64_t{-100}},
           "reduction 5 is not one of none (0), mean (1), sum (2)",
           "reduction"},
          {{x, tensor({0, 4, 1}, kInt64), Tensor()},
           a,
           "Target 4 is out of bounds for 4 classes",
           "target out of range",
           /*in_meta=*/false},
      };
    })
    .reference(nll_reference)
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:nll_loss");

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                Reduction reduction, int64_t ignore_index) {
  return std::get<0>(nll_loss_with_total(input, target, weight, reduction, ignore_index));
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     Reduction reduction, int64_t ignore_index, double label_smoothing) {
  KILN_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
             "cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  KILN_CHECK(input.dim() >= 1, "cross_entropy: input must have at least 1 dim (C), got shape ",
             input.sym_sizes());
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t c = input.sym_size(class_dim).guard_int();
  const Tensor logp = input.log_softmax(class_dim);
  const Tensor w_b = class_weight(weight, input);
  if (target.is_floating_point()) {  // class probabilities
    KILN_CHECK(target.sym_sizes() == input.sym_sizes(),
               "cross_entropy: expected target of the input's shape ", input.sym_sizes(),
               " for class probabilities, got ", target.sym_sizes());
    Tensor t = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / c : target;
    Tensor prod = logp * t;
    if (w_b.defined()) prod = prod * w_b;
    Tensor per = -prod.sum(IntArrayRef(class_dim));
    if (reduction == Reduction::Mean)
      return per.sum() /
             static_cast<double>(input.sym_numel().guard_int() / std::max<int64_t>(c, 1));
    return nn_util::apply_reduction(per, reduction);
  }
  auto [nll, total_weight] = nll_loss_with_total(logp, target, weight, reduction, ignore_index);
  if (label_smoothing == 0) return nll;
  Tensor smooth = -(w_b.defined() ? logp * w_b : logp).sum(IntArrayRef(class_dim));
  smooth = smooth.masked_fill(target == ignore_index, 0.0);
  Tensor reduced = reduction == Reduction::Mean  ? smooth.sum() / total_weight
                   : reduction == Reduction::Sum ? smooth.sum()
                                                 : smooth;
  return nll * (1 - label_smoothing) + reduced * (label_smoothing / c);
}

}  // namespace kiln
