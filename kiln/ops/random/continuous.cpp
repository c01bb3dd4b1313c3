// Continuous distributions: uniform_, normal_, exponential_ and the rand/randn factories.
#include <cmath>

#include "kiln/core/dispatch.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/pointwise.h"
#include "kiln/ops/random/cpu.h"
#include "kiln/ops/random/util.h"
#include "kiln/ops/reduce.h"

namespace kiln {
namespace {

using random_cpu::for_each_block;
using random_cpu::uniform_at;
using random_cpu::words_per_value;

// Significand bits of T: uniform_ draws exactly that many so the value is exact in T.
template <class T>
constexpr int uniform_digits() {
  if constexpr (std::is_same_v<T, Half>)
    return 11;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return 8;
  else
    return 24;  // float (double uses 53 bits from two words)
}

// Uniform on [from, to). Rounding u * (to - from) + from to T can reach `to`; that value
// becomes `from`, as PyTorch's CUDA kernel does.
void uniform_kernel(const Tensor& out, double from, double to, Generator* gen) {
  const int64_t n = out.sym_numel().guard_int();
  cpu::visit_floating(out.dtype(), "uniform_", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    constexpr int w = words_per_value<T>;
    const PhiloxStream s = random_cpu::reserve(gen, out.device(), n, w);
    const C lo = static_cast<C>(from), range = static_cast<C>(to - from);
    random_cpu::fill_row_major<T>(out, [&](T* data) {
      for_each_block(n, w, s, [&](int64_t first, int64_t count, const philox::Words& words) {
        for (int64_t k = 0; k < count; ++k) {
          const C u = uniform_at<T, uniform_digits<T>()>(words, k);
          T v = static_cast<T>(u * range + lo);
          if (static_cast<double>(static_cast<C>(v)) >= to) v = static_cast<T>(lo);
          data[first + k] = v;
        }
      });
    });
  });
}

// Box-Muller on element pairs: see Note [Random streams].
void normal_kernel(const Tensor& out, double mean, double std, Generator* gen) {
  const int64_t n = out.sym_numel().guard_int();
  cpu::visit_floating(out.dtype(), "normal_", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    constexpr int w = words_per_value<T>;
    const PhiloxStream s = random_cpu::reserve(gen, out.device(), n, w);
    const C mu = static_cast<C>(mean), sigma = static_cast<C>(std);
    random_cpu::fill_row_major<T>(out, [&](T* data) {
      for_each_block(n, w, s, [&](int64_t first, int64_t count, const philox::Words& words) {
        C z[4] = {};
        for (int k = 0; k < 4 / w; k += 2)
          philox::box_muller<C>(uniform_at<T>(words, k), uniform_at<T>(words, k + 1), z[k],
                                z[k + 1]);
        for (int64_t k = 0; k < count; ++k) data[first + k] = static_cast<T>(mu + sigma * z[k]);
      });
    });
  });
}

void exponential_kernel(const Tensor& out, double lambd, Generator* gen) {
  const int64_t n = out.sym_numel().guard_int();
  cpu::visit_floating(out.dtype(), "exponential_", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    constexpr int w = words_per_value<T>;
    const PhiloxStream s = random_cpu::reserve(gen, out.device(), n, w);
    const C scale = static_cast<C>(1.0 / lambd);
    random_cpu::fill_row_major<T>(out, [&](T* data) {
      for_each_block(n, w, s, [&](int64_t first, int64_t count, const philox::Words& words) {
        for (int64_t k = 0; k < count; ++k)
          data[first + k] = static_cast<T>(-std::log1p(-uniform_at<T>(words, k)) * scale);
      });
    });
  });
}

std::vector<TensorSpec> random_factory_meta(const char* op, const Attrs& a) {
  random_util::check_floating(op, a.dtype(2));
  return random_util::factory_spec(op, a.shape(0), a.dtype(2), a.device(3));
}

const std::vector<ScalarType> kFloatDtypes{kFloat64, kFloat32, kBFloat16, kFloat16};

}  // namespace

KILN_REGISTER_OP(uniform_)
    .schema(
        "uniform_(Tensor(a!) self, float from=0, float to=1, Generator? generator=None) -> "
        "Tensor(a!)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      random_util::check_floating("uniform_", in[0].dtype());
      KILN_CHECK(a.f(0) <= a.f(1),
                 "uniform_: expects to return a [from, to) range, but found from=", a.f(0),
                 " > to=", a.f(1));
      KILN_CHECK(std::isfinite(a.f(0)) && std::isfinite(a.f(1)),
                 "uniform_: from and to must be finite, got from=", a.f(0), " to=", a.f(1));
      return random_util::inplace_spec(in[0]);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
      uniform_kernel(in[0], a.f(0), a.f(1), a.generator(2));
    })
    .inplace()
    .random()
    .samples([](ScalarType dt) {
      return random_util::inplace_samples(dt, {-2.0, 5.0, std::monostate{}});
    })
    .error_samples([] {
      const Tensor x = samples::make({3}, kFloat32);
      auto at = [](double from, double to) { return Attrs{from, to, std::monostate{}}; };
      return std::vector<OpErrorSample>{
          random_util::integer_self_error(at(0, 1)),
          {{x}, at(2, 1), "but found from=2 > to=1", "from > to"},
          {{x}, at(0, INFINITY), "from and to must be finite, got from=0 to=inf", "infinite to"},
      };
    })
    .dtypes(kFloatDtypes);

KILN_REGISTER_OP(normal_)
    .schema(
        "normal_(Tensor(a!) self, float mean=0, float std=1, Generator? generator=None) -> "
        "Tensor(a!)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      random_util::check_floating("normal_", in[0].dtype());
      KILN_CHECK(a.f(1) >= 0, "normal_: expects std >= 0.0, but found std ", a.f(1));
      return random_util::inplace_spec(in[0]);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
      normal_kernel(in[0], a.f(0), a.f(1), a.generator(2));
    })
    .inplace()
    .random()
    .samples([](ScalarType dt) {
      return random_util::inplace_samples(dt, {1.0, 2.0, std::monostate{}});
    })
    .error_samples([] {
      return std::vector<OpErrorSample>{
          random_util::integer_self_error({0.0, 1.0, std::monostate{}}),
          {{samples::make({3}, kFloat32)},
           {0.0, -1.0, std::monostate{}},
           "expects std >= 0.0, but found std -1",
           "negative std"},
      };
    })
    .dtypes(kFloatDtypes);

KILN_REGISTER_OP(exponential_)
    .schema(
        "exponential_(Tensor(a!) self, float lambd=1, Generator? generator=None) -> "
        "Tensor(a!)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      random_util::check_floating("exponential_", in[0].dtype());
      KILN_CHECK(a.f(0) > 0, "exponential_: expects lambda > 0.0, but found lambda=", a.f(0));
      return random_util::inplace_spec(in[0]);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
      exponential_kernel(in[0], a.f(0), a.generator(1));
    })
    .inplace()
    .random()
    .samples([](ScalarType dt) {
      return random_util::inplace_samples(dt, {2.0, std::monostate{}});
    })
    .error_samples([] {
      return std::vector<OpErrorSample>{
          random_util::integer_self_error({1.0, std::monostate{}}),
          {{samples::make({3}, kFloat32)},
           {0.0, std::monostate{}},
           "expects lambda > 0.0, but found lambda=0",
           "lambda 0"},
      };
    })
    .dtypes(kFloatDtypes);

KILN_REGISTER_OP(rand)
    .schema("rand(SymInt[] size, Generator? generator, ScalarType dtype, Device device) -> Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs& a) { return random_factory_meta("rand", a); })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      uniform_kernel(out[0], 0, 1, a.generator(1));
    })
    .random()
    .samples([](ScalarType dt) { return random_util::factory_samples(dt); })
    .error_samples([] { return random_util::factory_error_samples(kInt64); })
    .dtypes(kFloatDtypes);

KILN_REGISTER_OP(randn)
    .schema("randn(SymInt[] size, Generator? generator, ScalarType dtype, Device device) -> Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs& a) {
      return random_factory_meta("randn", a);
    })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      normal_kernel(out[0], 0, 1, a.generator(1));
    })
    .random()
    .samples([](ScalarType dt) { return random_util::factory_samples(dt); })
    .error_samples([] { return random_util::factory_error_samples(kInt64); })
    .dtypes(kFloatDtypes);

Tensor& uniform_(Tensor& self, double from, double to, Generator* gen) {
  static const OpDef& op = get_op("uniform_");
  call_op(op, {self}, {from, to, gen});
  return self;
}
Tensor& normal_(Tensor& self, double mean, double std, Generator* gen) {
  static const OpDef& op = get_op("normal_");
  call_op(op, {self}, {mean, std, gen});
  return self;
}
Tensor& exponential_(Tensor& self, double lambd, Generator* gen) {
  static const OpDef& op = get_op("exponential_");
  call_op(op, {self}, {lambd, gen});
  return self;
}

Tensor rand(SymIntList size, Generator* gen, const TensorOptions& o) {
  static const OpDef& op = get_op("rand");
  return random_util::finish(call_op1(op, {}, {std::move(size).get(), gen, o.dtype(), o.device()}),
                             o);
}
Tensor rand(SymIntList size, const TensorOptions& o) { return rand(std::move(size), nullptr, o); }
Tensor randn(SymIntList size, Generator* gen, const TensorOptions& o) {
  static const OpDef& op = get_op("randn");
  return random_util::finish(call_op1(op, {}, {std::move(size).get(), gen, o.dtype(), o.device()}),
                             o);
}
Tensor randn(SymIntList size, const TensorOptions& o) { return randn(std::move(size), nullptr, o); }

Tensor normal(double mean, double std, SymIntList size, Generator* gen, const TensorOptions& o) {
  Tensor t = empty(std::move(size), o.requires_grad(false));
  normal_(t, mean, std, gen);
  return random_util::finish(t, o);
}

Tensor rand_like(const Tensor& t, const TensorOptions& o) {
  return rand(t.sym_sizes(), random_util::like(t, o));
}
Tensor randn_like(const Tensor& t, const TensorOptions& o) {
  return randn(t.sym_sizes(), random_util::like(t, o));
}

Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen) {
  KILN_CHECK(mean.is_floating_point() && std.is_floating_point(),
             "normal: expected floating-point mean and std, got ", mean.dtype(), " and ",
             std.dtype());
  KILN_CHECK(!(std < 0).any().item<bool>(), "normal: expects all elements of std >= 0.0");
  const SymShape shape =
      meta::broadcast_shapes("normal", {mean.sym_sizes().sym_vec(), std.sym_sizes().sym_vec()});
  const Tensor eps = randn(
      shape, gen, TensorOptions(promote_types(mean.dtype(), std.dtype())).device(mean.device()));
  return mean + std * eps;
}
Tensor normal(const Tensor& mean, double std, Generator* gen) {
  KILN_CHECK(std >= 0, "normal: expects std >= 0.0, but found std ", std);
  return normal(mean, scalar_tensor(std, TensorOptions(mean.dtype()).device(mean.device())), gen);
}
Tensor normal(double mean, const Tensor& std, Generator* gen) {
  return normal(scalar_tensor(mean, TensorOptions(std.dtype()).device(std.device())), std, gen);
}

Tensor& Tensor::uniform_(double from, double to, Generator* gen) const {
  return kiln::uniform_(const_cast<Tensor&>(*this), from, to, gen);
}
Tensor& Tensor::normal_(double mean, double std, Generator* gen) const {
  return kiln::normal_(const_cast<Tensor&>(*this), mean, std, gen);
}
Tensor& Tensor::exponential_(double lambd, Generator* gen) const {
  return kiln::exponential_(const_cast<Tensor&>(*this), lambd, gen);
}

}  // namespace kiln
