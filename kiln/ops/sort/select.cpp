// topk, kthvalue, median (of all elements, and along a dim with indices) and mode.
#include <cmath>
#include <map>
#include <vector>

#include "kiln/backend/cpu/sort_algorithms.h"
#include "kiln/backend/cpu/sort_rows.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/sort.h"
#include "kiln/ops/sort/util.h"

namespace kiln {
namespace {

using Slices = std::vector<std::vector<double>>;

// Kernel of the ops that pick one element per row: pick(keys, n) gives its position; values
// and indices have the reduced shape (dim dropped unless keepdim).
template <class Pick>
void pick_kernel(const char* op, const Tensor& x, int64_t dim, bool keepdim,
                 std::vector<Tensor>& out, Pick pick) {
  const bool drop = !keepdim && x.dim() > 0;
  Tensor values = drop ? out[0].unsqueeze(dim) : out[0];
  Tensor indices = drop ? out[1].unsqueeze(dim) : out[1];
  const cpu::Rows xr(x, dim), vr(values, dim), ir(indices, dim);
  cpu::for_each_row_keys(op, x, dim, cpu::row_grain(xr.length()),
                         [&](auto* keys, int64_t n, int64_t r) {
                           const int64_t pos = pick(keys, n);
                           cpu::write_selected(x, xr, r, &pos, 1, values, vr, r);
                           cpu::write_indices(&pos, 1, indices, ir, r);
                         });
}

// Meta of the ops that pick one element per row (dim, keepdim at attrs[first]).
std::vector<TensorSpec> pick_meta(const char* op, const Tensor& x, int64_t dim, bool keepdim) {
  std::vector<int64_t> dims = x.dim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim};
  reduce::check_nonempty(op, x, dims, true);
  SymShape shape = reduce::reduced_shape(x, dims, keepdim);
  return {meta::spec(shape, x.dtype(), x.device()), meta::spec(shape, kInt64, x.device())};
}

// The picked element of a float64 slice: its value, and its position unless ties make the
// position depend on the algorithm (the op's tests check those cases with fixed values).
Slices picked(const std::vector<double>& v, int64_t pos, bool with_index) {
  Slices out{{v[pos]}};
  if (with_index) out.push_back({static_cast<double>(pos)});
  return out;
}

std::vector<OpSample> pick_samples(ScalarType dt, const sorting::DimAttrs& attrs) {
  auto s = sorting::along_dim_samples(dt, attrs, /*zero_size_dim=*/false);
  OpSample t{{sorting::tied_values({5, 12}, dt, 4)}, attrs(1, 12), "ties"};
  t.check_grad = false;
  s.push_back(t);
  if (is_floating_point(dt)) {
    OpSample n{{tensor({{1.0, NAN, 0.0, 2.0}, {NAN, 1.0, NAN, 0.0}}).to(dt)}, attrs(1, 4), "NaN"};
    n.check_grad = false;
    s.push_back(n);
  }
  return s;
}

// The errors of the ops that pick one element per row: a dim out of range, and an empty dim.
std::vector<OpErrorSample> pick_error_samples(const std::function<Attrs(int64_t dim)>& attrs) {
  return {sorting::dim_error_sample([&](int64_t dim, int64_t) { return attrs(dim); }),
          {{samples::make({3, 0}, kFloat32)},
           attrs(1),
           "Expected reduction dim 1 to have non-zero size.",
           "empty dim"}};
}

const OpDef& op_named(const char* name) { return get_op(name); }

}  // namespace

// ---- topk ----

KILN_REGISTER_OP(topk)
    .schema(
        "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> "
        "(Tensor values, Tensor indices)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t dim = sorting::along_dim("topk", x, a.i(1)), k = a.i(0);
      const SymInt n = x.dim() > 0 ? x.sym_size(dim) : SymInt(1);
      KILN_CHECK(k >= 0 && SymInt(k) <= n, "topk: k (", k, ") is out of range [0, ", n,
                 "] for dimension ", dim, " of the input of shape ", x.sym_sizes());
      SymShape shape = sorting::with_dim_size(x, dim, k);
      return std::vector<TensorSpec>{meta::spec(shape, x.dtype(), x.device()),
                                     meta::spec(shape, kInt64, x.device())};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t dim = sorting::along_dim("topk", x, a.i(1)), k = a.i(0);
      const bool largest = a.b(2), sorted = a.b(3);
      const cpu::Rows xr(x, dim), vr(out[0], dim), ir(out[1], dim);
      cpu::for_each_row_keys("topk", x, dim, cpu::row_grain(xr.length(), 4096),
                             [&](auto* keys, int64_t n, int64_t r) {
                               std::vector<int64_t> idx(k);
                               cpu::topk_row(keys, n, k, largest, sorted, idx.data());
                               cpu::write_selected(x, xr, r, idx.data(), k, out[0], vr, r);
                               cpu::write_indices(idx.data(), k, out[1], ir, r);
                             });
    })
    .save_outputs({1})  // the indices; the input only for its sizes
    .save_metadata()
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      const int64_t dim = sorting::along_dim("topk", x, c.attrs.i(1));
      return std::vector<Tensor>{sorting::select_backward(c.grad(0), c.output(1), dim, x)};
    })
    .samples([](ScalarType dt) {
      auto attrs = [](int64_t dim, int64_t n) {
        return Attrs{std::min<int64_t>(3, n), dim, true, true};
      };
      auto s = pick_samples(dt, attrs);
      s.push_back(
          {{samples::make({3, 7}, dt)}, Attrs{int64_t{4}, int64_t{1}, false, true}, "smallest"});
      s.push_back({{samples::make({2, 300}, dt)},
                   Attrs{int64_t{3}, int64_t{1}, true, true},
                   "partial sort path"});
      s.push_back({{samples::make({3, 0}, dt)},
                   Attrs{int64_t{0}, int64_t{1}, true, true},
                   "k = 0 of an empty dim"});
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const int64_t k = a.i(0);
      const bool largest = a.b(2);
      return sorting::reference_slices(in[0], sorting::along_dim("topk", in[0], a.i(1)), true,
                                       [&](const auto& v) {
                                         auto order = sorting::stable_order(v, largest);
                                         Slices out(2);
                                         for (int64_t j = 0; j < k; ++j) {
                                           out[0].push_back(v[order[j]]);
                                           out[1].push_back(static_cast<double>(order[j]));
                                         }
                                         if (sorting::has_ties(v)) out.pop_back();
                                         return out;
                                       });
    })
    .error_samples([] {
      const Tensor x = samples::make({3}, kFloat32);
      auto at = [](int64_t k, int64_t dim) { return Attrs{k, dim, true, true}; };
      return std::vector<OpErrorSample>{
          {{x}, at(10, 0), "k (10) is out of range [0, 3] for dimension 0", "k > size"},
          {{x}, at(-1, 0), "k (-1) is out of range [0, 3] for dimension 0", "negative k"},
          {{x}, at(1, 1), "expected to be in range of [-1, 0], but got 1", "dim out of range"},
      };
    })
    .dtypes(reduce::kNumericDtypes)
    .lowering("extern:topk");

// ---- kthvalue, median(dim), mode ----

KILN_REGISTER_OP(kthvalue)
    .schema(
        "kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> "
        "(Tensor values, Tensor indices)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t dim = sorting::along_dim("kthvalue", x, a.i(1)), k = a.i(0);
      auto specs = pick_meta("kthvalue", x, dim, a.b(2));
      const SymInt n = x.dim() > 0 ? x.sym_size(dim) : SymInt(1);
      KILN_CHECK(k >= 1 && SymInt(k) <= n, "kthvalue: k (", k, ") is out of range [1, ", n,
                 "] for dimension ", dim, " of the input of shape ", x.sym_sizes());
      return specs;
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const int64_t dim = sorting::along_dim("kthvalue", in[0], a.i(1)), k = a.i(0);
      pick_kernel("kthvalue", in[0], dim, a.b(2), out,
                  [k](auto* keys, int64_t n) { return cpu::kthvalue_row(keys, n, k - 1); });
    })
    .save_outputs({1})  // the indices; the input only for its sizes
    .save_metadata()
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      const int64_t dim = sorting::along_dim("kthvalue", x, c.attrs.i(1));
      return std::vector<Tensor>{
          sorting::select_backward(c.grad(0), c.output(1), dim, x, c.attrs.b(2))};
    })
    .samples([](ScalarType dt) {
      return pick_samples(dt, [](int64_t dim, int64_t n) {
        return Attrs{std::max<int64_t>(1, (n + 2) / 3), dim, dim == 0};
      });
    })
    .error_samples([] {
      auto s = pick_error_samples([](int64_t dim) { return Attrs{int64_t{1}, dim, false}; });
      const Tensor x = samples::make({3, 4}, kFloat32);
      s.push_back({{x},
                   {int64_t{5}, int64_t{1}, false},
                   "k (5) is out of range [1, 4] for dimension 1 of the input of shape [3, 4]",
                   "k > size"});
      s.push_back({{x}, {int64_t{0}, int64_t{1}, false}, "k (0) is out of range [1, 4]", "k 0"});
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const int64_t k = a.i(0);
      return sorting::reference_slices(
          in[0], sorting::along_dim("kthvalue", in[0], a.i(1)), a.b(2), [&](const auto& v) {
            return picked(v, sorting::stable_order(v)[k - 1], !sorting::has_ties(v));
          });
    })
    .dtypes(reduce::kNumericDtypes)
    .lowering("extern:kthvalue");

KILN_REGISTER_OP(median_dim)
    .schema(
        "median.dim(Tensor self, int dim, bool keepdim=False) -> "
        "(Tensor values, Tensor indices)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return pick_meta("median_dim", in[0], sorting::along_dim("median_dim", in[0], a.i(0)),
                       a.b(1));
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const bool floating = is_floating_point(in[0].dtype());
      pick_kernel("median_dim", in[0], sorting::along_dim("median_dim", in[0], a.i(0)), a.b(1), out,
                  [floating](auto* keys, int64_t n) { return cpu::median_row(keys, n, floating); });
    })
    .save_outputs({1})  // the indices; the input only for its sizes
    .save_metadata()
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      const int64_t dim = sorting::along_dim("median_dim", x, c.attrs.i(0));
      return std::vector<Tensor>{
          sorting::select_backward(c.grad(0), c.output(1), dim, x, c.attrs.b(1))};
    })
    .samples([](ScalarType dt) {
      return pick_samples(dt, [](int64_t dim, int64_t) { return Attrs{dim, dim == 0}; });
    })
    .error_samples([] { return pick_error_samples([](int64_t dim) {
                          return Attrs{dim, false};
                        }); })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return sorting::reference_slices(
          in[0], sorting::along_dim("median_dim", in[0], a.i(0)), a.b(1), [&](const auto& v) {
            for (size_t i = 0; i < v.size(); ++i)
              if (std::isnan(v[i])) return picked(v, static_cast<int64_t>(i), true);
            return picked(v, sorting::stable_order(v)[(v.size() - 1) / 2], true);
          });
    })
    .dtypes(reduce::kNumericDtypes)
    .lowering("extern:median");

KILN_REGISTER_OP(mode)
    .schema("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return pick_meta("mode", in[0], sorting::along_dim("mode", in[0], a.i(0)), a.b(1));
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const bool floating = is_floating_point(in[0].dtype());
      pick_kernel("mode", in[0], sorting::along_dim("mode", in[0], a.i(0)), a.b(1), out,
                  [floating](auto* keys, int64_t n) { return cpu::mode_row(keys, n, floating); });
    })
    .save_outputs({1})  // the indices; the input only for its sizes
    .save_metadata()
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      const int64_t dim = sorting::along_dim("mode", x, c.attrs.i(0));
      return std::vector<Tensor>{
          sorting::select_backward(c.grad(0), c.output(1), dim, x, c.attrs.b(1))};
    })
    .samples([](ScalarType dt) {
      // Rows of at most 16 elements: there std::sort is an insertion sort, so the reported
      // position (the last of the run) is the value's last occurrence. With NaNs it depends on
      // where the insertion sort leaves them.
      auto s = pick_samples(dt, [](int64_t dim, int64_t) { return Attrs{dim, dim == 0}; });
      std::vector<OpSample> out;
      for (auto& x : s)
        if (x.desc != "NaN" &&  // NaN cases are in tests/ops/sort_test.cpp
            (x.inputs[0].dim() == 0 || x.inputs[0].sym_size(-1).guard_int() <= 16))
          out.push_back(x);
      return out;
    })
    .error_samples([] { return pick_error_samples([](int64_t dim) {
                          return Attrs{dim, false};
                        }); })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return sorting::reference_slices(
          in[0], sorting::along_dim("mode", in[0], a.i(0)), a.b(1), [&](const auto& v) {
            std::map<double, int64_t> count, last;  // NaNs never repeat: counted apart
            int64_t nan_at = -1;
            for (size_t i = 0; i < v.size(); ++i) {
              if (std::isnan(v[i])) {
                nan_at = static_cast<int64_t>(i);
                continue;
              }
              ++count[v[i]];
              last[v[i]] = static_cast<int64_t>(i);
            }
            int64_t best = -1, best_count = 0;
            for (auto& [value, c] : count)
              if (c > best_count) best = last[value], best_count = c;
            return picked(v, best >= 0 ? best : nan_at, true);
          });
    })
    .dtypes(reduce::kNumericDtypes)
    .lowering("extern:mode");

// ---- median of all elements ----

KILN_REGISTER_OP(median)
    .schema("median(Tensor self) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      return meta::one_spec({}, in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const Tensor& x = in[0];
      if (x.sym_numel() == 0) {
        out[0].fill_(is_floating_point(x.dtype()) ? Scalar(NAN) : Scalar(0));
        return;
      }
      Tensor flat = x.reshape({x.sym_numel()});
      std::vector<Tensor> both = {out[0].reshape({1}), empty({1}, TensorOptions(kInt64))};
      const bool floating = is_floating_point(x.dtype());
      pick_kernel("median", flat, 0, true, both,
                  [floating](auto* keys, int64_t n) { return cpu::median_row(keys, n, floating); });
    })
    .save_outputs(/*inputs_too=*/true)
    .backward([](const BackwardContext& c) {
      // The gradient is split evenly among the elements equal to the median, as PyTorch's.
      const Tensor& x = c.input(0);
      const Tensor& m = c.output(0);
      Tensor hit = x.eq(m).logical_or(x.isnan().logical_and(m.isnan()));
      return std::vector<Tensor>{c.grad(0) * hit / hit.sum()};
    })
    .samples([](ScalarType dt) {
      std::vector<OpSample> s;
      for (auto& x : sorting::along_dim_samples(dt, [](int64_t, int64_t) { return Attrs{}; }))
        s.push_back({x.inputs, Attrs{}, x.desc});
      OpSample t{{sorting::tied_values({4, 5}, dt, 3)}, {}, "ties"};
      t.check_grad = false;
      s.push_back(t);
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      Tensor x = in[0].to(kFloat64).contiguous();
      std::vector<double> v(x.data_ptr<double>(), x.data_ptr<double>() + x.sym_numel());
      double m = NAN;
      bool nan = false;
      for (double e : v) nan = nan || std::isnan(e);
      if (!v.empty() && !nan) m = v[sorting::stable_order(v)[(v.size() - 1) / 2]];
      return std::vector<Tensor>{tensor(m, TensorOptions(kFloat64))};
    })
    .dtypes(reduce::kFloatDtypes)
    .lowering("extern:median");

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  static const OpDef& op = op_named("topk");
  auto out = call_op(op, {self}, {k, dim, largest, sorted});
  return {out[0], out[1]};
}
std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  static const OpDef& op = op_named("kthvalue");
  auto out = call_op(op, {self}, {k, dim, keepdim});
  return {out[0], out[1]};
}
Tensor median(const Tensor& self) {
  static const OpDef& op = op_named("median");
  return call_op1(op, {self}, {});
}
std::tuple<Tensor, Tensor> median(const Tensor& self, int64_t dim, bool keepdim) {
  static const OpDef& op = op_named("median_dim");
  auto out = call_op(op, {self}, {dim, keepdim});
  return {out[0], out[1]};
}
std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim, bool keepdim) {
  static const OpDef& op = op_named("mode");
  auto out = call_op(op, {self}, {dim, keepdim});
  return {out[0], out[1]};
}

std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return kiln::topk(*this, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return kiln::kthvalue(*this, k, dim, keepdim);
}
Tensor Tensor::median() const { return kiln::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const {
  return kiln::median(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::mode(int64_t dim, bool keepdim) const {
  return kiln::mode(*this, dim, keepdim);
}

}  // namespace kiln
