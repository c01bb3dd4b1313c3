// ctc_loss: the registry entry `ctc_loss` (per-sample negative log-likelihood by the alpha
// recursion in log space) and `ctc_loss_backward` (PyTorch's gradient w.r.t. log_probs from the
// alpha and beta recursions). Both accumulate in float64. The reduction is applied on top with
// Kiln ops. The gradient formula is not differentiable again (as in PyTorch).
#include "kiln/ops/ctc.h"

#include <cmath>
#include <limits>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

// The inputs of one call, checked, with each sample's target as its own list.
struct Batch {
  int64_t T = 0, N = 0, C = 0, blank = 0;
  std::vector<double> lp;  // (T, N, C) row-major, float64
  std::vector<int64_t> input_length;
  std::vector<std::vector<int64_t>> target;

  double at(int64_t t, int64_t n, int64_t c) const { return lp[(t * N + n) * C + c]; }
  // The label of position s of sample n's extended target (blank, l1, blank, l2, ..., blank).
  int64_t label(int64_t n, int64_t s) const {
    return s % 2 == 0 ? blank : target[n][static_cast<size_t>(s / 2)];
  }
  int64_t extended_length(int64_t n) const {
    return 2 * static_cast<int64_t>(target[n].size()) + 1;
  }
};

// The inputs' shapes and dtypes and the blank label; `op`: ctc_loss or ctc_loss_backward.
void check_shapes(const char* op, const std::vector<Tensor>& in, int64_t blank) {
  const Tensor &lp = in[0], &tg = in[1], &il = in[2], &tl = in[3];
  KILN_CHECK(lp.dim() == 3, op, ": expected log_probs of shape (T, N, C), got ", lp.sym_sizes());
  KILN_CHECK(lp.is_floating_point(), op, ": expected floating point log_probs, got ", lp.dtype());
  for (const Tensor* t : {&tg, &il, &tl}) {
    KILN_CHECK(!is_floating_point(t->dtype()) && t->dtype() != kBool, op,
               ": expected integer targets and lengths, got ", t->dtype());
  }
  const SymInt n = lp.sym_size(1), classes = lp.sym_size(2);
  KILN_CHECK(blank >= 0 && blank < classes, op, ": blank must be in label range [0, ", classes,
             "), got ", blank);
  KILN_CHECK(il.dim() == 1 && il.sym_size(0) == n, op,
             ": input_lengths must be of size batch_size ", n, ", got ", il.sym_sizes());
  KILN_CHECK(tl.dim() == 1 && tl.sym_size(0) == n, op,
             ": target_lengths must be of size batch_size ", n, ", got ", tl.sym_sizes());
  KILN_CHECK(tg.dim() == 1 || (tg.dim() == 2 && tg.sym_size(0) == n), op,
             ": expected targets of shape (N, S) or 1-D concatenated targets, got ", tg.sym_sizes(),
             " for batch size ", n);
}

Batch read_batch(const char* op, const std::vector<Tensor>& in, int64_t blank) {
  check_shapes(op, in, blank);
  Batch b;
  b.T = in[0].sym_size(0).guard_int();
  b.N = in[0].sym_size(1).guard_int();
  b.C = in[0].sym_size(2).guard_int();
  b.blank = blank;
  b.lp = nn_util::to_doubles(in[0]);
  const std::vector<int64_t> targets = nn_util::to_ints(in[1]);
  b.input_length = nn_util::to_ints(in[2]);
  const std::vector<int64_t> target_length = nn_util::to_ints(in[3]);
  const bool padded = in[1].dim() == 2;
  const int64_t row = padded ? in[1].sym_size(1).guard_int() : 0;
  int64_t offset = 0;
  for (int64_t n = 0; n < b.N; ++n) {
    const int64_t il = b.input_length[n], tl = target_length[n];
    KILN_CHECK(il >= 0 && il <= b.T, op, ": Expected input_lengths to have value at most ", b.T,
               ", but got value ", il, " (while checking arguments for ctc_loss_cpu)");
    KILN_CHECK(tl >= 0, op, ": target_lengths must be non-negative, got ", tl);
    if (padded) {
      KILN_CHECK(tl <= row, op, ": Expected tensor to have size at least ", tl,
                 " at dimension 1, but got size ", row,
                 " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
      offset = n * row;
    } else {
      KILN_CHECK(offset + tl <= static_cast<int64_t>(targets.size()), op, ": the ",
                 "target_lengths add up to more than the ", targets.size(),
                 " concatenated targets");
    }
    std::vector<int64_t> t(targets.begin() + offset, targets.begin() + offset + tl);
    for (int64_t label : t) {
      KILN_CHECK(label >= 0 && label < b.C, op, ": target ", label, " is out of bounds for ", b.C,
                 " classes");
    }
    b.target.push_back(std::move(t));
    if (!padded) offset += tl;
  }
  return b;
}

// log alpha of sample n: (input_length, 2L+1) row-major, -inf where no path reaches.
std::vector<double> alpha(const Batch& b, int64_t n) {
  const int64_t T = b.input_length[n], S = b.extended_length(n);
  std::vector<double> a(static_cast<size_t>(T * S), kNegInf);
  if (T == 0) return a;
  a[0] = b.at(0, n, b.blank);
  if (S > 1) a[1] = b.at(0, n, b.label(n, 1));
  for (int64_t t = 1; t < T; ++t) {
    const double* prev = &a[(t - 1) * S];
    double* cur = &a[t * S];
    for (int64_t s = 0; s < S; ++s) {
      const int64_t l = b.label(n, s);
      double v = prev[s];
      if (s > 0) v = log_add(v, prev[s - 1]);
      if (s > 1 && l != b.blank && l != b.label(n, s - 2)) v = log_add(v, prev[s - 2]);
      cur[s] = v == kNegInf ? kNegInf : v + b.at(t, n, l);
    }
  }
  return a;
}

// log beta of sample n (each entry includes the emission at its own time step, as PyTorch's).
std::vector<double> beta(const Batch& b, int64_t n) {
  const int64_t T = b.input_length[n], S = b.extended_length(n);
  std::vector<double> be(static_cast<size_t>(T * S), kNegInf);
  if (T == 0) return be;
  double* last = &be[(T - 1) * S];
  last[S - 1] = b.at(T - 1, n, b.blank);
  if (S > 1) last[S - 2] = b.at(T - 1, n, b.label(n, S - 2));
  for (int64_t t = T - 2; t >= 0; --t) {
    const double* next = &be[(t + 1) * S];
    double* cur = &be[t * S];
    for (int64_t s = 0; s < S; ++s) {
      const int64_t l = b.label(n, s);
      double v = next[s];
      if (s + 1 < S) v = log_add(v, next[s + 1]);
      if (s + 2 < S && l != b.label(n, s + 2)) v = log_add(v, next[s + 2]);
      cur[s] = v == kNegInf ? kNegInf : v + b.at(t, n, l);
    }
  }
  return be;
}

// -log p(target | input) of sample n from its alphas (inf when no alignment exists).
double negative_log_likelihood(const Batch& b, int64_t n, const std::vector<double>& a) {
  const int64_t T = b.input_length[n], S = b.extended_length(n);
  if (T == 0) return S == 1 ? 0.0 : std::numeric_limits<double>::infinity();
  const double* last = &a[(T - 1) * S];
  return -(S > 1 ? log_add(last[S - 1], last[S - 2]) : last[0]);
}

void ctc_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Batch b = read_batch("ctc_loss", in, a.i(0));
  const bool zero_infinity = a.b(1);
  std::vector<double> nll(static_cast<size_t>(b.N));
  cpu::parallel_for(0, b.N, 1, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const double v = negative_log_likelihood(b, n, alpha(b, n));
      nll[n] = zero_infinity && std::isinf(v) ? 0.0 : v;
    }
  });
  nn_util::store(out[0], nn_util::from_doubles(nll, {b.N}));
}

// grad[t, n, c] = (exp(lp) - exp(log sum_{s: l'(s) = c} alpha beta + nll - lp)) * grad_out[n]
// for t < input_length, 0 beyond (PyTorch's formula: it folds in the log_softmax that produces
// log_probs). Inputs: grad_out, then ctc_loss's inputs.
void ctc_backward_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Batch b = read_batch("ctc_loss_backward", {in[1], in[2], in[3], in[4]}, a.i(0));
  const bool zero_infinity = a.b(1);
  const std::vector<double> grad_out = nn_util::to_doubles(in[0]);
  std::vector<double> g(b.lp.size(), 0.0);
  cpu::parallel_for(0, b.N, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> lcab(static_cast<size_t>(b.C));
    for (int64_t n = begin; n < end; ++n) {
      const std::vector<double> al = alpha(b, n), be = beta(b, n);
      const double nll = negative_log_likelihood(b, n, al);
      if (zero_infinity && std::isinf(nll)) continue;
      const int64_t S = b.extended_length(n);
      for (int64_t t = 0; t < b.input_length[n]; ++t) {
        std::fill(lcab.begin(), lcab.end(), kNegInf);
        for (int64_t s = 0; s < S; ++s) {
          double& acc = lcab[static_cast<size_t>(b.label(n, s))];
          acc = log_add(acc, al[t * S + s] + be[t * S + s]);
        }
        for (int64_t c = 0; c < b.C; ++c) {
          const double lp = b.at(t, n, c);
          g[(t * b.N + n) * b.C + c] =
              (std::exp(lp) - std::exp(lcab[static_cast<size_t>(c)] + nll - lp)) * grad_out[n];
        }
      }
    }
  });
  nn_util::store(out[0], nn_util::from_doubles(g, {b.T, b.N, b.C}));
}

// ---- references: every alignment path enumerated (small samples only) ----

// For sample n: the total probability of the target and, per (t, c), the probability of the
// paths through c at time t.
struct Enumerated {
  double total = 0;
  std::vector<double> through;  // (input_length, C)
};

Enumerated enumerate_paths(const Batch& b, int64_t n) {
  const int64_t T = b.input_length[n];
  Enumerated e;
  e.through.assign(static_cast<size_t>(T * b.C), 0.0);
  std::vector<int64_t> path(static_cast<size_t>(T), 0);
  while (true) {
    std::vector<int64_t> collapsed;
    double logp = 0;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t c = path[t];
      logp += b.at(t, n, c);
      if (c != b.blank && (t == 0 || path[t - 1] != c)) collapsed.push_back(c);
    }
    if (collapsed == b.target[n]) {
      const double p = std::exp(logp);
      e.total += p;
      for (int64_t t = 0; t < T; ++t) e.through[t * b.C + path[t]] += p;
    }
    int64_t t = T - 1;
    while (t >= 0 && ++path[t] == b.C) path[t--] = 0;
    if (t < 0) break;
  }
  return e;
}

std::vector<Tensor> ctc_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const Batch b = read_batch("ctc_loss", in, a.i(0));
  std::vector<double> nll;
  for (int64_t n = 0; n < b.N; ++n) {
    const double v = -std::log(enumerate_paths(b, n).total);
    nll.push_back(a.b(1) && std::isinf(v) ? 0.0 : v);
  }
  return {nn_util::from_doubles(nll, {b.N})};
}

std::vector<Tensor> ctc_backward_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const Batch b = read_batch("ctc_loss_backward", {in[1], in[2], in[3], in[4]}, a.i(0));
  const std::vector<double> grad_out = nn_util::to_doubles(in[0]);
  std::vector<double> g(b.lp.size(), 0.0);
  for (int64_t n = 0; n < b.N; ++n) {
    const Enumerated e = enumerate_paths(b, n);
    if (a.b(1) && e.total == 0) continue;
    for (int64_t t = 0; t < b.input_length[n]; ++t)
      for (int64_t c = 0; c < b.C; ++c)
        g[(t * b.N + n) * b.C + c] =
            (std::exp(b.at(t, n, c)) - e.through[t * b.C + c] / e.total) * grad_out[n];
  }
  return {nn_util::from_doubles(g, {b.T, b.N, b.C})};
}

// Samples: (inputs of ctc_loss, attrs). Kept small: the references enumerate C^T paths.
std::vector<OpSample> ctc_samples(ScalarType dt) {
  // Non-contiguous: a (N, T, C) tensor seen as (T, N, C).
  auto lp = [dt](int64_t T, int64_t N, int64_t C, bool noncontiguous = false) {
    if (noncontiguous) return samples::make({N, T, C}, dt, -2, 2).log_softmax(2).transpose(0, 1);
    return samples::make({T, N, C}, dt, -2, 2).log_softmax(2);
  };
  auto ints = [](std::vector<int64_t> v, std::vector<int64_t> shape) {
    return tensor(v).view(SymIntList(shape));
  };
  const int64_t blank0 = 0;
  std::vector<OpSample> s = {
      {{lp(5, 2, 4), ints({1, 2, 2, 3, 1, 0}, {2, 3}), ints({5, 4}, {2}), ints({3, 2}, {2})},
       {blank0, false},
       "padded targets"},
      {{lp(5, 2, 4), ints({1, 2, 2, 3, 1}, {5}), ints({5, 4}, {2}), ints({3, 2}, {2})},
       {blank0, false},
       "concatenated targets"},
      {{lp(4, 2, 3), ints({0, 1, 1, 1}, {2, 2}), ints({4, 3}, {2}), ints({2, 2}, {2})},
       {int64_t{2}, false},
       "last class blank, repeats"},
      // [1, 1, 1] needs 5 steps and has 3 (infinite loss, zeroed); the last target is empty.
      {{lp(3, 3, 3), ints({1, 1, 1, 2, 0, 0, 0, 0, 0}, {3, 3}), ints({3, 3, 2}, {3}),
        ints({3, 1, 0}, {3})},
       {blank0, true},
       "zero_infinity, impossible and empty targets"},
      {{lp(4, 2, 3, true), ints({2, 1, 1}, {3}).to(kInt32), ints({4, 2}, {2}).to(kInt32),
        ints({2, 1}, {2}).to(kInt32)},
       {blank0, false},
       "non-contiguous log_probs, int32"},
  };
  for (OpSample& x : s) x.check_grad = false;  // PyTorch's formula, not d nll / d log_probs
  return s;
}

std::vector<OpSample> ctc_backward_samples(ScalarType dt) {
  std::vector<OpSample> s = ctc_samples(dt);
  for (OpSample& x : s) {
    const int64_t n = x.inputs[0].sym_size(1).guard_int();
    x.inputs.insert(x.inputs.begin(), samples::make({n}, dt, 0.5, 2));
  }
  return s;
}

// ctc_loss's argument errors; backward: with a gradient first, for ctc_loss_backward.
std::vector<OpErrorSample> ctc_error_samples(bool backward) {
  using V = std::vector<int64_t>;
  auto ints = [](V v, V shape) { return tensor(v).view(SymIntList(shape)); };
  const Tensor lp = samples::make({4, 2, 3}, kFloat32), tg = ints({1, 2, 1, 1}, {2, 2});
  const Tensor il = ints({4, 4}, {2}), tl = ints({2, 2}, {2});
  auto in = [&](Tensor a, Tensor b, Tensor c, Tensor d) {
    std::vector<Tensor> v{std::move(a), std::move(b), std::move(c), std::move(d)};
    if (backward) v.insert(v.begin(), samples::make({2}, kFloat32));
    return v;
  };
  const Attrs a{int64_t{0}, false};
  const bool kernel = false;  // in_meta: the kernel reads the lengths and targets
  return {
      {in(samples::make({4, 3}, kFloat32), tg, il, tl), a,
       "expected log_probs of shape (T, N, C), got [4, 3]", "log_probs of rank 2"},
      {in(lp.to(kInt64), tg, il, tl), a, "expected floating point log_probs, got int64",
       "integer log_probs"},
      {in(lp, tg.to(kFloat32), il, tl), a, "expected integer targets and lengths, got float32",
       "float targets"},
      {in(lp, tg, il, tl),
       {int64_t{3}, false},
       "blank must be in label range [0, 3), got 3",
       "blank"},
      {in(lp, tg, ints({4, 4, 4}, {3}), tl), a,
       "input_lengths must be of size batch_size 2, got [3]", "input_lengths"},
      {in(lp, tg, il, ints({2}, {1})), a, "target_lengths must be of size batch_size 2, got [1]",
       "target_lengths"},
      {in(lp, ints({1, 2, 1, 1, 1, 1}, {3, 2}), il, tl), a,
       "expected targets of shape (N, S) or 1-D concatenated targets, got [3, 2] for batch size 2",
       "targets"},
      {in(lp, tg, ints({4, 5}, {2}), tl), a,
       "Expected input_lengths to have value at most 4, but got value 5", "input length > T",
       kernel},
      {in(lp, tg, il, ints({2, -1}, {2})), a, "target_lengths must be non-negative, got -1",
       "negative target length", kernel},
      {in(lp, tg, il, ints({2, 3}, {2})), a,
       "Expected tensor to have size at least 3 at dimension 1, but got size 2",
       "target length > row", kernel},
      {in(lp, ints({1, 2, 1}, {3}), il, tl), a,
       "the target_lengths add up to more than the 3 concatenated targets",
       "concatenated targets too short", kernel},
      {in(lp, ints({1, 3, 1, 1}, {2, 2}), il, tl), a, "target 3 is out of bounds for 3 classes",
       "label out of range", kernel},
  };
}

std::vector<TensorSpec> ctc_meta(const std::vector<Tensor>& in, const Attrs& a) {
  check_shapes("ctc_loss", in, a.i(0));
  return {meta::spec({in[0].sym_size(1)}, in[0].dtype(), in[0].device())};
}

}  // namespace

KILN_REGISTER_OP(ctc_loss)
    .schema(
        "ctc_loss(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, "
        "int blank=0, bool zero_infinity=False) -> Tensor")
    .meta(ctc_meta)
    .cpu(ctc_kernel)
    .backward([](const BackwardContext& c) {
      static const OpDef& op = get_op("ctc_loss_backward");
      std::vector<Tensor> g(4);
      if (c.needs_grad(0)) {
        g[0] = call_op1(op, {c.grad(), c.input(0), c.input(1), c.input(2), c.input(3)}, c.attrs);
      }
      return g;
    })
    .samples(ctc_samples)
    .error_samples([] { return ctc_error_samples(false); })
    .reference(ctc_reference)
    .dtypes({kFloat64, kFloat32})
    .lowering("extern:ctc_loss");

KILN_REGISTER_OP(ctc_loss_backward)
    .schema(
        "ctc_loss_backward(Tensor grad, Tensor log_probs, Tensor targets, Tensor input_lengths, "
        "Tensor target_lengths, int blank, bool zero_infinity) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      check_shapes("ctc_loss_backward", {in[1], in[2], in[3], in[4]}, a.i(0));
      KILN_CHECK(in[0].dim() == 1 && in[0].sym_size(0) == in[1].sym_size(1),
                 "ctc_loss_backward: expected a gradient of shape (N), got ", in[0].sym_sizes());
      return meta::one_spec(in[1].sym_sizes(), in[1].dtype(), in[1].device());
    })
    .cpu(ctc_backward_kernel)
    .samples(ctc_backward_samples)
    .error_samples([] {
      auto s = ctc_error_samples(true);
      s.push_back({{samples::make({3}, kFloat32), samples::make({4, 2, 3}, kFloat32),
                    tensor({1, 2}), tensor({4, 4}), tensor({1, 1})},
                   {int64_t{0}, false},
                   "expected a gradient of shape (N), got [3]",
                   "gradient"});
      return s;
    })
    .reference(ctc_backward_reference)
    .dtypes({kFloat64, kFloat32})
    .lowering("extern:ctc_loss_backward");

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction reduction,
                bool zero_infinity) {
  static const OpDef& op = get_op("ctc_loss");
  const bool unbatched = log_probs.dim() == 2;
  Tensor lp = unbatched ? log_probs.unsqueeze(1) : log_probs;
  Tensor tg = unbatched ? targets.unsqueeze(0) : targets;
  Tensor il = unbatched ? input_lengths.reshape({1}) : input_lengths;
  Tensor tl = unbatched ? target_lengths.reshape({1}) : target_lengths;
  Tensor nll = call_op1(op, {lp, tg, il, tl}, {blank, zero_infinity});
  switch (reduction) {
    case Reduction::Mean:
      return (nll / tl.to(nll.dtype()).clamp_min(1)).mean();
    case Reduction::Sum:
      return nll.sum();
    case Reduction::None:
      break;
  }
  return unbatched ? nll.squeeze(0) : nll;
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                IntArrayRef target_lengths, int64_t blank, Reduction reduction,
                bool zero_infinity) {
  return ctc_loss(log_probs, targets, tensor(input_lengths.vec()), tensor(target_lengths.vec()),
                  blank, reduction, zero_infinity);
}

}  // namespace kiln
