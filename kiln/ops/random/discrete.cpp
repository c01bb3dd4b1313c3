// Discrete distributions: random_ / randint (integers on [from, to)) and bernoulli.
#include "kiln/core/dispatch.h"
#include "kiln/ops/random/cpu.h"
#include "kiln/ops/random/util.h"

namespace kiln {
namespace {

using random_cpu::for_each_block;
using random_cpu::uniform_at;
using random_cpu::words_per_value;

void check_range(const char* op, int64_t from, int64_t to, ScalarType dtype) {
  KILN_CHECK(from < to, op, ": expects 'from' to be less than 'to', but got from=", from,
             " >= to=", to);
  const random_util::IntRange r = random_util::exact_integers(dtype);
  KILN_CHECK(static_cast<double>(from) >= r.lo && static_cast<double>(to - 1) <= r.hi, op,
             ": the range [", from, ", ", to, ") is out of bounds for dtype ", dtype);
}

// from + (bits mod (to - from)), with 32 bits per element when the range fits, else 64.
void random_kernel(const Tensor& out, int64_t from, int64_t to, Generator* gen) {
  const int64_t n = out.sym_numel().guard_int();
  const uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  const int w = range <= (uint64_t{1} << 32) ? 1 : 2;
  cpu::visit_all(out.dtype(), "random_", [&](auto tag) {
    using T = decltype(tag);
    const PhiloxStream s = random_cpu::reserve(gen, out.device(), n, w);
    random_cpu::fill_row_major<T>(out, [&](T* data) {
      for_each_block(n, w, s, [&](int64_t first, int64_t count, const philox::Words& words) {
        for (int64_t k = 0; k < count; ++k) {
          const uint64_t bits =
              w == 1 ? words.w[k] : philox::bits64(words.w[2 * k], words.w[2 * k + 1]);
          const auto v = static_cast<int64_t>(static_cast<uint64_t>(from) + bits % range);
          if constexpr (std::is_same_v<T, bool>)
            data[first + k] = v != 0;
          else
            data[first + k] = static_cast<T>(static_cast<cpu::compute_t<T>>(v));
        }
      });
    });
  });
}

// 1 where u < p. Scalar p: the uniforms have self's precision (53 bits for float64, else 24).
void bernoulli_scalar_kernel(const Tensor& out, double p, Generator* gen) {
  const int64_t n = out.sym_numel().guard_int();
  const bool wide = out.dtype() == kFloat64;
  const int w = wide ? 2 : 1;
  const PhiloxStream s = random_cpu::reserve(gen, out.device(), n, w);
  cpu::visit_all(out.dtype(), "bernoulli_", [&](auto tag) {
    using T = decltype(tag);
    random_cpu::fill_row_major<T>(out, [&](T* data) {
      for_each_block(n, w, s, [&](int64_t first, int64_t count, const philox::Words& words) {
        for (int64_t k = 0; k < count; ++k) {
          const double u = wide ? uniform_at<double>(words, k) : uniform_at<float>(words, k);
          data[first + k] = static_cast<T>(u < p ? 1 : 0);
        }
      });
    });
  });
}

// Tensor p: the uniforms have p's precision.
void bernoulli_tensor_kernel(const Tensor& out, const Tensor& probs, Generator* gen) {
  const int64_t n = out.sym_numel().guard_int();
  Tensor p = probs.contiguous();
  cpu::visit_floating(p.dtype(), "bernoulli", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    constexpr int w = words_per_value<T>;
    const T* pd = static_cast<const T*>(p.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      const C pi = static_cast<C>(pd[i]);
      KILN_CHECK(pi >= 0 && pi <= 1, "bernoulli: expected all probabilities in [0, 1], but found ",
                 pi);
    }
    const PhiloxStream s = random_cpu::reserve(gen, out.device(), n, w);
    T* data = static_cast<T*>(out.data_ptr());  // a fresh contiguous output
    for_each_block(n, w, s, [&](int64_t first, int64_t count, const philox::Words& words) {
      for (int64_t k = 0; k < count; ++k)
        data[first + k] =
            static_cast<T>(uniform_at<T>(words, k) < static_cast<C>(pd[first + k]) ? 1 : 0);
    });
  });
}

const std::vector<ScalarType> kAllDtypes{kFloat64, kFloat32, kBFloat16, kInt64,
                                         kInt32,   kUInt8,   kBool};

}  // namespace

KILN_REGISTER_OP(random_)
    .schema("random_(Tensor(a!) self, int from, int to, Generator? generator=None) -> Tensor(a!)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      check_range("random_", a.i(0), a.i(1), in[0].dtype());
      return random_util::inplace_spec(in[0]);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
      random_kernel(in[0], a.i(0), a.i(1), a.generator(2));
    })
    .inplace()
    .random()
    .samples([](ScalarType dt) {
      return random_util::inplace_samples(dt, {int64_t{0}, int64_t{2}, std::monostate{}});
    })
    .error_samples([] {
      const Tensor x = samples::make({3}, kInt32);
      return std::vector<OpErrorSample>{
          {{x},
           {int64_t{2}, int64_t{2}, std::monostate{}},
           "expects 'from' to be less than 'to', but got from=2 >= to=2",
           "empty range"},
          {{x.to(kUInt8)},
           {int64_t{-1}, int64_t{3}, std::monostate{}},
           "the range [-1, 3) is out of bounds for dtype uint8",
           "range outside the dtype"},
      };
    })
    .dtypes(kAllDtypes);

KILN_REGISTER_OP(randint)
    .schema(
        "randint(int low, int high, SymInt[] size, Generator? generator, ScalarType dtype, "
        "Device device) -> Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs& a) {
      check_range("randint", a.i(0), a.i(1), a.dtype(4));
      return random_util::factory_spec("randint", a.shape(2), a.dtype(4), a.device(5));
    })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      random_kernel(out[0], a.i(0), a.i(1), a.generator(3));
    })
    .random()
    .samples([](ScalarType dt) {
      return random_util::factory_samples(dt, {int64_t{-3}, int64_t{5}});
    })
    .error_samples([] {
      auto s = random_util::factory_error_samples(ScalarType::Undefined, {int64_t{0}, int64_t{2}});
      s.push_back({{},
                   {int64_t{5}, int64_t{1}, SymShape{2}, std::monostate{}, kInt64, Device(kCPU)},
                   "but got from=5 >= to=1",
                   "empty range"});
      return s;
    })
    .dtypes({kInt64, kInt32, kFloat32, kFloat64});

KILN_REGISTER_OP(bernoulli_)
    .schema("bernoulli_(Tensor(a!) self, float p=0.5, Generator? generator=None) -> Tensor(a!)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      KILN_CHECK(a.f(0) >= 0 && a.f(0) <= 1,
                 "bernoulli_: expects p to be in [0, 1], but got p=", a.f(0));
      return random_util::inplace_spec(in[0]);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
      bernoulli_scalar_kernel(in[0], a.f(0), a.generator(1));
    })
    .inplace()
    .random()
    .samples([](ScalarType dt) {
      return random_util::inplace_samples(dt, {0.3, std::monostate{}});
    })
    .error_samples([] {
      return std::vector<OpErrorSample>{{{samples::make({3}, kFloat32)},
                                         {1.5, std::monostate{}},
                                         "expects p to be in [0, 1], but got p=1.5",
                                         "p > 1"}};
    })
    .dtypes(kAllDtypes);

KILN_REGISTER_OP(bernoulli)
    .schema("bernoulli(Tensor self, Generator? generator=None) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      random_util::check_floating("bernoulli", in[0].dtype());
      return meta::one_spec(in[0].sym_sizes(), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      bernoulli_tensor_kernel(out[0], in[0], a.generator(0));
    })
    .random()
    .samples([](ScalarType dt) {
      std::vector<OpSample> s = samples::unary(dt, 0, 1);
      for (auto& x : s) x.attrs = {std::monostate{}};
      return s;
    })
    .error_samples([] {
      return std::vector<OpErrorSample>{
          random_util::integer_self_error({std::monostate{}}),
          {{tensor({0.5, 1.5})},
           {std::monostate{}},
           "expected all probabilities in [0, 1], but found 1.5",
           "probability > 1",
           /*in_meta=*/false},
      };
    })
    .dtypes({kFloat64, kFloat32, kBFloat16});

Tensor& random_(Tensor& self, int64_t from, int64_t to, Generator* gen) {
  static const OpDef& op = get_op("random_");
  call_op(op, {self}, {from, to, gen});
  return self;
}
Tensor& bernoulli_(Tensor& self, double p, Generator* gen) {
  static const OpDef& op = get_op("bernoulli_");
  call_op(op, {self}, {p, gen});
  return self;
}
Tensor bernoulli(const Tensor& p, Generator* gen) {
  static const OpDef& op = get_op("bernoulli");
  return call_op1(op, {p}, {gen});
}
Tensor bernoulli(const Tensor& self, double p, Generator* gen) {
  Tensor t = empty_like(self);
  return bernoulli_(t, p, gen);
}

Tensor randint(int64_t low, int64_t high, SymIntList size, Generator* gen, const TensorOptions& o) {
  static const OpDef& op = get_op("randint");
  const ScalarType dtype = o.has_dtype() ? o.dtype() : kInt64;
  return random_util::finish(
      call_op1(op, {}, {low, high, std::move(size).get(), gen, dtype, o.device()}), o);
}
Tensor randint(int64_t high, SymIntList size, Generator* gen, const TensorOptions& o) {
  return randint(0, high, std::move(size), gen, o);
}
Tensor randint(int64_t low, int64_t high, SymIntList size, const TensorOptions& o) {
  return randint(low, high, std::move(size), nullptr, o);
}
Tensor randint(int64_t high, SymIntList size, const TensorOptions& o) {
  return randint(0, high, std::move(size), nullptr, o);
}
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, const TensorOptions& o) {
  return randint(low, high, t.sym_sizes(), random_util::like(t, o));
}
Tensor randint_like(const Tensor& t, int64_t high, const TensorOptions& o) {
  return randint_like(t, 0, high, o);
}

Tensor& Tensor::random_(int64_t from, int64_t to, Generator* gen) const {
  return kiln::random_(const_cast<Tensor&>(*this), from, to, gen);
}
Tensor& Tensor::bernoulli_(double p, Generator* gen) const {
  return kiln::bernoulli_(const_cast<Tensor&>(*this), p, gen);
}
Tensor Tensor::bernoulli(Generator* gen) const { return kiln::bernoulli(*this, gen); }
Tensor Tensor::multinomial(int64_t num_samples, bool replacement, Generator* gen) const {
  return kiln::multinomial(*this, num_samples, replacement, gen);
}

}  // namespace kiln
