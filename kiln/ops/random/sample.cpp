// Sampling indices: randperm and multinomial.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kiln/core/dispatch.h"
#include "kiln/ops/random/cpu.h"
#include "kiln/ops/random/util.h"

namespace kiln {
namespace {

using random_cpu::for_each_block;

// 64 random bits per index; the permutation sorts the indices by (bits, index).
void randperm_kernel(const Tensor& out, int64_t n, Generator* gen) {
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  const PhiloxStream s = random_cpu::reserve(gen, out.device(), n, 2);
  for_each_block(n, 2, s, [&](int64_t first, int64_t count, const philox::Words& w) {
    for (int64_t k = 0; k < count; ++k)
      keys[first + k] = philox::bits64(w.w[2 * k], w.w[2 * k + 1]);
  });
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::sort(perm.begin(), perm.end(),
            [&](int64_t a, int64_t b) { return keys[a] != keys[b] ? keys[a] < keys[b] : a < b; });
  cpu::visit_numeric(out.dtype(), "randperm", [&](auto tag) {
    using T = decltype(tag);
    T* data = static_cast<T*>(out.data_ptr());
    for (int64_t i = 0; i < n; ++i)
      data[i] = static_cast<T>(static_cast<cpu::compute_t<T>>(perm[i]));
  });
}

void check_randperm(int64_t n, ScalarType dtype) {
  KILN_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  KILN_CHECK(dtype != kBool, "randperm: not supported for dtype bool");
  KILN_CHECK(n == 0 || static_cast<double>(n - 1) <= random_util::exact_integers(dtype).hi,
             "randperm: n=", n, " is too large for result tensor type ", dtype);
}

// Probabilities as rows of doubles, checked as torch checks them.
struct ProbRows {
  int64_t rows, cats;
  std::vector<double> p;
};
ProbRows read_probs(const Tensor& probs) {
  Tensor pd = probs.to(kFloat64).contiguous();
  ProbRows r{
      probs.dim() == 2 ? probs.sym_size(0).guard_int() : 1, probs.sym_size(-1).guard_int(), {}};
  const double* d = pd.data_ptr<double>();
  r.p.assign(d, d + r.rows * r.cats);
  for (int64_t i = 0; i < r.rows; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < r.cats; ++j) {
      const double v = r.p[i * r.cats + j];
      KILN_CHECK(std::isfinite(v) && v >= 0,
                 "multinomial: probability tensor contains either `inf`, `nan` or element < 0 "
                 "(got ",
                 v, " in row ", i, ")");
      sum += v;
    }
    KILN_CHECK(sum > 0, "multinomial: invalid multinomial distribution (sum of probabilities <= 0 ",
               "in row ", i, ")");
  }
  return r;
}

// With replacement: inverse CDF of a 53-bit uniform per sample (element row * S + s).
void multinomial_with_replacement(int64_t* out, const ProbRows& pr, int64_t samples, Generator* gen,
                                  Device device) {
  const int64_t K = pr.cats;
  std::vector<double> cdf(pr.p.size());
  std::vector<int64_t> last_nonzero(pr.rows, 0);
  for (int64_t i = 0; i < pr.rows; ++i) {
    double acc = 0;
    for (int64_t j = 0; j < K; ++j) {
      acc += pr.p[i * K + j];
      cdf[i * K + j] = acc;
      if (pr.p[i * K + j] > 0) last_nonzero[i] = j;
    }
  }
  const int64_t n = pr.rows * samples;
  const PhiloxStream s = random_cpu::reserve(gen, device, n, 2);
  for_each_block(n, 2, s, [&](int64_t first, int64_t count, const philox::Words& w) {
    for (int64_t k = 0; k < count; ++k) {
      const int64_t row = (first + k) / samples;
      const double* c = cdf.data() + row * K;
      const double target = philox::uniform_double(w.w[2 * k], w.w[2 * k + 1]) * c[K - 1];
      int64_t idx = std::upper_bound(c, c + K, target) - c;
      out[first + k] = std::min(idx, last_nonzero[row]);  // u * total rounded up to total
    }
  });
}

// Without replacement: the categories with the smallest exponential race times E_j / p_j
// (element row * K + j), in increasing order, which samples sequentially without replacement.
void multinomial_without_replacement(int64_t* out, const ProbRows& pr, int64_t samples,
                                     Generator* gen, Device device) {
  const int64_t K = pr.cats;
  for (int64_t i = 0; i < pr.rows; ++i) {
    int64_t nonzero = 0;
    for (int64_t j = 0; j < K; ++j) nonzero += pr.p[i * K + j] > 0;
    KILN_CHECK(nonzero >= samples,
               "multinomial: invalid multinomial distribution (with replacement=False, not "
               "enough non-negative category to sample: ",
               nonzero, " in row ", i, " for ", samples, " samples)");
  }
  const int64_t n = pr.rows * K;
  std::vector<double> key(static_cast<size_t>(n));
  const PhiloxStream s = random_cpu::reserve(gen, device, n, 2);
  for_each_block(n, 2, s, [&](int64_t first, int64_t count, const philox::Words& w) {
    for (int64_t k = 0; k < count; ++k) {
      const double e = -std::log1p(-philox::uniform_double(w.w[2 * k], w.w[2 * k + 1]));
      const double p = pr.p[first + k];
      key[first + k] = p > 0 ? e / p : std::numeric_limits<double>::infinity();
    }
  });
  const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(K, 1));
  cpu::parallel_for(0, pr.rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(static_cast<size_t>(K));
    for (int64_t r = r0; r < r1; ++r) {
      const double* kr = key.data() + r * K;
      std::iota(idx.begin(), idx.end(), int64_t{0});
      std::partial_sort(idx.begin(), idx.begin() + samples, idx.end(), [&](int64_t a, int64_t b) {
        return kr[a] != kr[b] ? kr[a] < kr[b] : a < b;
      });
      std::copy(idx.begin(), idx.begin() + samples, out + r * samples);
    }
  });
}

}  // namespace

KILN_REGISTER_OP(randperm)
    .schema("randperm(int n, Generator? generator, ScalarType dtype, Device device) -> Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs& a) {
      check_randperm(a.i(0), a.dtype(2));
      return random_util::factory_spec("randperm", {a.i(0)}, a.dtype(2), a.device(3));
    })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      randperm_kernel(out[0], a.i(0), a.generator(1));
    })
    .random()
    .samples([](ScalarType dt) {
      std::vector<OpSample> s;
      for (int64_t n : {0, 1, 10})
        s.push_back({{}, {n, std::monostate{}, dt, Device(kCPU)}, "n=" + std::to_string(n), false});
      return s;
    })
    .dtypes({kInt64, kInt32, kFloat32})
    .error_samples([] {
      auto at = [](int64_t n, ScalarType dt) {
        return Attrs{n, std::monostate{}, dt, Device(kCPU)};
      };
      return std::vector<OpErrorSample>{
          {{}, at(-1, kInt64), "n must be non-negative, got -1", "negative n"},
          {{}, at(2, kBool), "not supported for dtype bool", "bool"},
          {{}, at(300, kUInt8), "n=300 is too large for result tensor type uint8", "n too large"},
      };
    });

KILN_REGISTER_OP(multinomial)
    .schema(
        "multinomial(Tensor self, int num_samples, bool replacement=False, Generator? "
        "generator=None) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& p = in[0];
      const int64_t samples = a.i(0);
      KILN_CHECK(is_floating_point(p.dtype()),
                 "multinomial: only supports floating-point dtypes for input, got: ", p.dtype());
      KILN_CHECK(p.dim() == 1 || p.dim() == 2, "multinomial: prob_dist must be 1 or 2 dim, got ",
                 p.dim(), " dims (shape ", p.sym_sizes(), ")");
      KILN_CHECK(samples > 0, "multinomial: cannot sample n_sample <= 0 samples (got ", samples,
                 ")");
      KILN_CHECK(a.b(1) || samples <= p.sym_size(-1),
                 "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
                 "replacement (got ",
                 samples, " > ", p.sym_size(-1), ")");
      SymShape size = p.dim() == 2 ? SymShape{p.sym_size(0), samples} : SymShape{samples};
      return meta::one_spec(size, kInt64, p.device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const ProbRows pr = read_probs(in[0]);
      int64_t* data = out[0].data_ptr<int64_t>();
      if (a.b(1)) {
        multinomial_with_replacement(data, pr, a.i(0), a.generator(2), out[0].device());
      } else {
        multinomial_without_replacement(data, pr, a.i(0), a.generator(2), out[0].device());
      }
    })
    .random()
    .samples([](ScalarType dt) {
      Tensor w1 = samples::make({5}, dt, 0.1, 1);
      Tensor w2 = samples::make({3, 6}, dt, 0.1, 1);
      return std::vector<OpSample>{
          {{w1}, {int64_t{3}, false, std::monostate{}}, "1-d without replacement", false},
          {{w1}, {int64_t{8}, true, std::monostate{}}, "1-d with replacement", false},
          {{w2}, {int64_t{6}, false, std::monostate{}}, "2-d all categories", false},
          {{samples::make({3, 6}, dt, 0.1, 1, true)},
           {int64_t{4}, true, std::monostate{}},
           "strided",
           false}};
    })
    .error_samples([] {
      auto at = [](int64_t n, bool replacement) { return Attrs{n, replacement, std::monostate{}}; };
      const Tensor p = tensor({0.2, 0.0, 0.8});
      const bool kernel = false;  // in_meta: the kernel reads the probabilities
      return std::vector<OpErrorSample>{
          {{p.to(kInt64)},
           at(1, true),
           "only supports floating-point dtypes for input, got: int64",
           "integers"},
          {{samples::make({2, 2, 2}, kFloat32)},
           at(1, true),
           "prob_dist must be 1 or 2 dim, got 3 dims (shape [2, 2, 2])",
           "3-D"},
          {{p}, at(0, true), "cannot sample n_sample <= 0 samples (got 0)", "no samples"},
          {{p}, at(4, false), "without replacement (got 4 > 3)", "too many samples"},
          {{tensor({0.2, -0.1})},
           at(1, true),
           "or element < 0 (got -0.1 in row 0)",
           "negative probability",
           kernel},
          {{tensor({{0.5, 0.5}, {0.0, 0.0}})},
           at(1, true),
           "sum of probabilities <= 0 in row 1",
           "zero row",
           kernel},
          {{p},
           at(3, false),
           "not enough non-negative category to sample: 2 in row 0 for 3 samples",
           "too few categories",
           kernel},
      };
    });

Tensor randperm(int64_t n, Generator* gen, const TensorOptions& o) {
  static const OpDef& op = get_op("randperm");
  const ScalarType dtype = o.has_dtype() ? o.dtype() : kInt64;
  return random_util::finish(call_op1(op, {}, {n, gen, dtype, o.device()}), o);
}
Tensor randperm(int64_t n, const TensorOptions& o) { return randperm(n, nullptr, o); }

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  static const OpDef& op = get_op("multinomial");
  return call_op1(op, {probs}, {num_samples, replacement, gen});
}

}  // namespace kiln
