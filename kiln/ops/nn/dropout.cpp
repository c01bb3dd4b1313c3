// Dropout variants as one random entry, native_dropout(input, p, mode, generator) -> (out, noise):
// the noise holds the kept elements' multiplier (0 for dropped ones), so every variant's backward
// is grad * noise. Feature modes draw one value per (sample, channel).
#include <cmath>

#include "kiln/ops/meta.h"
#include "kiln/ops/nn/dropout.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/random/cpu.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using namespace dropout_util;  // NOLINT: the modes and scalars of this entry

SymShape noise_shape(const Tensor& x, int64_t mode) {
  SymShape s = x.sym_sizes();
  if (is_feature(mode))
    for (size_t d = 2; d < s.size(); ++d) s[d] = 1;
  return s;
}

std::vector<TensorSpec> dropout_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor& x = in[0];
  const double p = a.f(0);
  const char* op = "native_dropout";
  KILN_CHECK(p >= 0 && p <= 1, op, ": dropout probability has to be between 0 and 1, but got ", p);
  KILN_CHECK(x.is_floating_point(), op, ": expected a floating point input, got ", x.dtype());
  KILN_CHECK(!is_feature(a.i(1)) || x.dim() >= 2, op,
             ": feature dropout expects an input with at least 2 dims (N, C, *), got ",
             x.sym_sizes());
  return {meta::spec(x.sym_sizes(), x.dtype(), x.device()),
          meta::spec(noise_shape(x, a.i(1)), x.dtype(), x.device())};
}

void dropout_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const double p = a.f(0);
  const int64_t mode = a.i(1);
  const Tensor& noise = out[1];
  const int64_t n = noise.sym_numel().guard_int();
  const double scale = keep_scale(p, mode);
  const PhiloxStream s = random_cpu::reserve(a.generator(2), noise.device(), n, 1);
  cpu::visit_floating(noise.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    T* data = noise.data_ptr<T>();  // a fresh contiguous output
    random_cpu::for_each_block(n, 1, s, [&](int64_t first, int64_t count, const philox::Words& w) {
      for (int64_t k = 0; k < count; ++k) {
        const bool keep = random_cpu::uniform_at<float>(w, k) >= p;
        data[first + k] = static_cast<T>(keep ? scale : 0.0);
      }
    });
    if (!is_alpha(mode)) {
      cpu::binary_loop<T, T, T>(out[0], in[0], noise, [](C x, C m) { return x * m; });
      return;
    }
    // out = x * noise + alpha' * a * (p + mask - 1) = (x + alpha') * noise + alpha' * a * (p - 1)
    const C alpha = static_cast<C>(kAlphaPrime);
    const C offset = static_cast<C>(alpha_shift(p, mode));
    cpu::binary_loop<T, T, T>(out[0], in[0], noise,
                              [=](C x, C m) { return (x + alpha) * m + offset; });
  });
}

std::vector<OpSample> dropout_samples(ScalarType dt) {
  const std::monostate none;
  auto mk = [&](std::vector<int64_t> s, bool nc = false) {
    return samples::make(s, dt, -2, 2, nc);
  };
  return {
      {{mk({4, 5})}, {0.5, int64_t{kPlain}, none}, "plain", false},
      {{mk({3, 4}, true)}, {0.2, int64_t{kPlain}, none}, "non-contiguous", false},
      {{mk({2, 3, 2, 2})}, {0.5, int64_t{kFeature}, none}, "feature", false},
      {{mk({4, 5})}, {0.3, int64_t{kAlpha}, none}, "alpha", false},
      {{mk({2, 3, 4})}, {0.3, int64_t{kFeatureAlpha}, none}, "feature alpha", false},
      {{mk({0, 3})}, {0.5, int64_t{kPlain}, none}, "zero-size", false},
      {{mk({3, 3})}, {1.0, int64_t{kPlain}, none}, "p = 1", false},
  };
}

Tensor run_dropout(const Tensor& input, double p, bool train, Mode mode, Generator* gen) {
  static const OpDef& op = get_op("native_dropout");
  static const char* const names[] = {"dropout", "feature_dropout", "alpha_dropout",
                                      "feature_alpha_dropout"};
  const char* name = names[mode];
  KILN_CHECK(p >= 0 && p <= 1, name, ": dropout probability has to be between 0 and 1, but got ",
             p);
  if (!train || p == 0) return input;
  return call_op(op, {input}, {p, int64_t{mode}, gen})[0];
}

}  // namespace

KILN_REGISTER_OP(native_dropout)
    .schema(
        "native_dropout(Tensor input, float p, int mode, Generator? generator=None) "
        "-> (Tensor out, Tensor noise)")
    .meta(dropout_meta)
    .cpu(dropout_kernel)
    .random()
    .save_inputs({})
    .save_outputs({1})  // the noise
    .backward([](const BackwardContext& c) {
      if (!c.grad(0).defined()) return std::vector<Tensor>{Tensor()};
      return std::vector<Tensor>{c.grad(0) * c.output(1)};
    })
    .samples(dropout_samples)
    .error_samples([] {
      const Tensor x = samples::make({3, 4}, kFloat32);
      const std::monostate none;
      return std::vector<OpErrorSample>{
          {{x}, {1.5, int64_t{kPlain}, none}, "between 0 and 1, but got 1.5", "p > 1"},
          {{x.to(kInt64)},
           {0.5, int64_t{kPlain}, none},
           "floating point input, got int64",
           "integers"},
          {{samples::make({3}, kFloat32)},
           {0.5, int64_t{kFeature}, none},
           "at least 2 dims (N, C, *), got [3]",
           "feature dropout of a vector"},
      };
    })
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:native_dropout");

Tensor dropout(const Tensor& input, double p, bool train, Generator* generator) {
  return run_dropout(input, p, train, kPlain, generator);
}
Tensor feature_dropout(const Tensor& input, double p, bool train, Generator* generator) {
  return run_dropout(input, p, train, kFeature, generator);
}
Tensor alpha_dropout(const Tensor& input, double p, bool train, Generator* generator) {
  return run_dropout(input, p, train, kAlpha, generator);
}
Tensor feature_alpha_dropout(const Tensor& input, double p, bool train, Generator* generator) {
  return run_dropout(input, p, train, kFeatureAlpha, generator);
}

}  // namespace kiln
