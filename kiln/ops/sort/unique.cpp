// unique (PyTorch's _unique2) and unique_consecutive. Their output sizes depend on the data, so
// the kernels allocate the outputs (.dynamic()).
#include <cmath>
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

// Runs of equal elements, found on keys: `order` lists positions so that equal values are
// adjacent; each run's positions (in `order`) are [starts[u], starts[u + 1]). NaNs never equal.
struct Runs {
  std::vector<int64_t> order, starts;
};

template <class K>
Runs find_runs(const K* keys, int64_t n, bool floating, bool sort_first) {
  Runs runs;
  runs.order.resize(n);
  if (sort_first) {
    cpu::sort_row(keys, n, false, runs.order.data());
  } else {
    for (int64_t i = 0; i < n; ++i) runs.order[i] = i;
  }
  for (int64_t j = 0; j < n; ++j) {
    const K k = keys[runs.order[j]];
    if (j == 0 || k != keys[runs.order[j - 1]] || cpu::is_nan_key(k, floating))
      runs.starts.push_back(j);
  }
  runs.starts.push_back(n);
  return runs;
}

// Allocates and fills (values, inverse, counts) of the flattened x from its runs.
std::vector<Tensor> outputs_of_runs(const Tensor& flat, const Runs& runs, SymShape inverse_shape,
                                    bool return_inverse, bool return_counts) {
  const int64_t u = static_cast<int64_t>(runs.starts.size()) - 1;
  TensorOptions ints(kInt64);
  Tensor values = empty({u}, TensorOptions(flat.dtype()));
  Tensor inverse = return_inverse ? empty(SymIntList(inverse_shape), ints) : empty({0}, ints);
  Tensor counts = return_counts ? empty({u}, ints) : empty({0}, ints);
  std::vector<int64_t> first(u);
  for (int64_t k = 0; k < u; ++k) first[k] = runs.order[runs.starts[k]];
  const cpu::Rows fr(flat, 0), vr(values, 0);
  cpu::write_selected(flat, fr, 0, first.data(), u, values, vr, 0);
  int64_t* inv = return_inverse ? inverse.data_ptr<int64_t>() : nullptr;
  int64_t* cnt = return_counts ? counts.data_ptr<int64_t>() : nullptr;
  for (int64_t k = 0; k < u; ++k) {
    if (cnt) cnt[k] = runs.starts[k + 1] - runs.starts[k];
    if (inv)
      for (int64_t j = runs.starts[k]; j < runs.starts[k + 1]; ++j) inv[runs.order[j]] = k;
  }
  return {values, inverse, counts};
}

// Flattened unique / unique_consecutive: attrs end with (return_inverse, return_counts).
std::vector<Tensor> flat_unique(const char* op, const Tensor& x, bool sort_first,
                                bool return_inverse, bool return_counts) {
  Tensor flat = x.reshape({x.sym_numel()}).contiguous();
  Runs runs;
  const bool floating = is_floating_point(x.dtype());
  cpu::for_each_row_keys(op, flat, 0, 1, [&](auto* keys, int64_t n, int64_t) {
    runs = find_runs(keys, n, floating, sort_first);
  });
  if (flat.sym_numel() == 0) runs.starts = {0};
  return outputs_of_runs(flat, runs, x.sym_sizes(), return_inverse, return_counts);
}

std::vector<TensorSpec> unique_meta(const char* op, const Tensor& x, const SymInt& rows,
                                    SymShape inverse_shape, SymShape value_shape, int64_t dim,
                                    bool return_inverse, bool return_counts) {
  const SymInt u = sorting::data_dependent_size(op, x, rows);
  if (!value_shape.empty()) value_shape[dim] = u;
  return {meta::spec(value_shape.empty() ? SymShape{u} : value_shape, x.dtype(), x.device()),
          meta::spec(return_inverse ? inverse_shape : SymShape{0}, kInt64, x.device()),
          meta::spec(return_counts ? SymShape{u} : SymShape{0}, kInt64, x.device())};
}

// unique_consecutive's dim, wrapped (a 0-dim input has none).
int64_t consecutive_dim(const Tensor& x, int64_t dim) {
  KILN_CHECK(x.dim() > 0, "unique_consecutive: dim given for a 0-dim tensor (dim ", dim, ")");
  return meta::wrap_dim("unique_consecutive", dim, x.dim());
}

// unique_consecutive along dim: slices equal in every element (NaN never equal) collapse.
std::vector<Tensor> unique_consecutive_dim(const Tensor& x, int64_t dim, bool return_inverse,
                                           bool return_counts) {
  const char* op = "unique_consecutive";
  const int64_t n = x.sym_size(dim).guard_int();
  Tensor moved = x.movedim(dim, int64_t{0}).contiguous();
  const int64_t width = n == 0 ? 0 : moved.sym_numel().guard_int() / n;
  std::vector<int64_t> starts;
  const bool floating = is_floating_point(x.dtype());
  Tensor flat = moved.reshape({moved.sym_numel()});
  cpu::for_each_row_keys(op, flat, 0, 1, [&](auto* keys, int64_t, int64_t) {
    auto same = [&](int64_t a, int64_t b) {
      for (int64_t e = 0; e < width; ++e) {
        const auto ka = keys[a * width + e];
        if (ka != keys[b * width + e] || cpu::is_nan_key(ka, floating)) return false;
      }
      return true;
    };
    for (int64_t i = 0; i < n; ++i)
      if (i == 0 || !same(i - 1, i)) starts.push_back(i);
  });
  const int64_t u = static_cast<int64_t>(starts.size());
  starts.push_back(n);
  TensorOptions ints(kInt64);
  std::vector<int64_t> first(starts.begin(), starts.end() - 1);
  SymShape idx_shape(x.dim(), SymInt(1));
  idx_shape[dim] = u;
  SymShape value_shape = x.sym_sizes();
  value_shape[dim] = u;
  Tensor index = tensor(first).reshape(idx_shape).expand(value_shape).contiguous();
  Tensor values = sorting::select_along_dim(x, index, dim);
  Tensor inverse = return_inverse ? empty({n}, ints) : empty({0}, ints);
  Tensor counts = return_counts ? empty({u}, ints) : empty({0}, ints);
  for (int64_t k = 0; k < u; ++k) {
    if (return_counts) counts.data_ptr<int64_t>()[k] = starts[k + 1] - starts[k];
    if (return_inverse)
      for (int64_t i = starts[k]; i < starts[k + 1]; ++i) inverse.data_ptr<int64_t>()[i] = k;
  }
  return {values, inverse, counts};
}

std::vector<OpSample> unique_samples(ScalarType dt, bool with_dim) {
  std::vector<OpSample> s;
  auto add = [&](Tensor x, std::string desc) {
    for (bool inverse : {false, true}) {
      Attrs a =
          with_dim ? Attrs{inverse, !inverse, std::monostate{}} : Attrs{true, inverse, !inverse};
      s.push_back({{x}, a, desc + (inverse ? " with inverse" : " with counts")});
    }
  };
  add(sorting::tied_values({20}, dt, 5), "vector");
  add(sorting::tied_values({4, 6}, dt, 3).t(), "transposed matrix");
  add(sorting::tied_values({}, dt, 3), "0-dim");
  add(sorting::tied_values({0, 3}, dt, 3), "empty");
  if (is_floating_point(dt))
    add(tensor({2.0, NAN, -0.0, 1.0, 0.0, NAN, 2.0, 2.0}).to(dt), "NaN and signed zeros");
  if (with_dim) {
    Tensor rows = tensor({{1, 2}, {1, 2}, {3, 4}, {3, 4}, {1, 2}}).to(dt);
    s.push_back({{rows}, Attrs{true, true, int64_t{0}}, "rows"});
    s.push_back({{rows.t()}, Attrs{true, true, int64_t{1}}, "columns"});
  }
  for (auto& x : s) x.check_grad = false;
  return s;
}

// Float64 reference: (values, inverse, counts) of v's runs, sorted or in order.
std::vector<Tensor> unique_reference(const Tensor& x, bool sort_first, bool return_inverse,
                                     bool return_counts) {
  Tensor xd = x.to(kFloat64).contiguous();
  std::vector<double> v(xd.data_ptr<double>(), xd.data_ptr<double>() + xd.sym_numel());
  std::vector<int64_t> order = sort_first ? sorting::stable_order(v) : std::vector<int64_t>{};
  if (!sort_first)
    for (size_t i = 0; i < v.size(); ++i) order.push_back(static_cast<int64_t>(i));
  std::vector<double> values, counts, inverse(v.size());
  for (size_t j = 0; j < order.size(); ++j) {
    const double e = v[order[j]];
    if (j == 0 || !(e == v[order[j - 1]])) {
      values.push_back(e);
      counts.push_back(0);
    }
    counts.back() += 1;
    inverse[order[j]] = static_cast<double>(values.size() - 1);
  }
  auto make = [](const std::vector<double>& d) { return tensor(d, TensorOptions(kFloat64)); };
  return {make(values), return_inverse ? make(inverse).reshape(x.sym_sizes()) : make({}),
          return_counts ? make(counts) : make({})};
}

}  // namespace

KILN_REGISTER_OP(unique)
    .schema(
        "_unique2(Tensor self, bool sorted=True, bool return_inverse=False, "
        "bool return_counts=False) -> (Tensor, Tensor, Tensor)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      return unique_meta("unique", x, x.sym_numel(), x.sym_sizes(), {}, 0, a.b(1), a.b(2));
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      out = flat_unique("unique", in[0], /*sort_first=*/true, a.b(1), a.b(2));
    })
    .dynamic()
    .samples([](ScalarType dt) { return unique_samples(dt, false); })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return unique_reference(in[0], true, a.b(1), a.b(2));
    })
    .dtypes(reduce::kAllDtypes)
    .lowering("extern:unique");

KILN_REGISTER_OP(unique_consecutive)
    .schema(
        "unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, "
        "int? dim=None) -> (Tensor, Tensor, Tensor)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      auto dim = a.opt_i(2);
      if (!dim)
        return unique_meta("unique_consecutive", x, x.sym_numel(), x.sym_sizes(), {}, 0, a.b(0),
                           a.b(1));
      const int64_t d = consecutive_dim(x, *dim);
      return unique_meta("unique_consecutive", x, x.sym_size(d), {x.sym_size(d)}, x.sym_sizes(), d,
                         a.b(0), a.b(1));
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      auto dim = a.opt_i(2);
      if (dim) {
        out = unique_consecutive_dim(in[0], consecutive_dim(in[0], *dim), a.b(0), a.b(1));
      } else {
        out = flat_unique("unique_consecutive", in[0], /*sort_first=*/false, a.b(0), a.b(1));
      }
    })
    .dynamic()
    .samples([](ScalarType dt) { return unique_samples(dt, true); })
    .error_samples([] {
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {false, false, int64_t{2}}, "expected to be in range of [-2, 1], but got 2", "dim"},
          {{samples::make({}, kFloat32)},
           {false, false, int64_t{0}},
           "dim given for a 0-dim tensor (dim 0)",
           "0-dim input"},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      auto dim = a.opt_i(2);
      if (!dim) return unique_reference(in[0], false, a.b(0), a.b(1));
      // Along dim: the rows of the reference are the slices; compare them whole.
      const int64_t d = consecutive_dim(in[0], *dim);
      Tensor m = in[0].movedim(d, int64_t{0}).to(kFloat64).contiguous();
      const int64_t n = m.sym_size(0).guard_int(), w = n == 0 ? 0 : m.sym_numel().guard_int() / n;
      const double* p = m.data_ptr<double>();
      std::vector<Tensor> kept;
      std::vector<double> inverse, counts;
      for (int64_t i = 0; i < n; ++i) {
        bool same = i > 0;
        for (int64_t e = 0; same && e < w; ++e) same = p[i * w + e] == p[(i - 1) * w + e];
        if (!same) {
          kept.push_back(m.select(0, i));
          counts.push_back(0);
        }
        counts.back() += 1;
        inverse.push_back(static_cast<double>(kept.size() - 1));
      }
      Tensor values = stack(kept, 0).movedim(int64_t{0}, d).contiguous();
      return std::vector<Tensor>{values, tensor(inverse, TensorOptions(kFloat64)),
                                 tensor(counts, TensorOptions(kFloat64))};
    })
    .dtypes(reduce::kAllDtypes)
    .lowering("extern:unique_consecutive");

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self, bool sorted, bool return_inverse,
                                          bool return_counts) {
  static const OpDef& op = get_op("unique");
  auto out = call_op(op, {self}, {sorted, return_inverse, return_counts});
  return {out[0], out[1], out[2]};
}
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& self, bool return_inverse,
                                                      bool return_counts,
                                                      std::optional<int64_t> dim) {
  static const OpDef& op = get_op("unique_consecutive");
  auto out = call_op(op, {self}, {return_inverse, return_counts, opt_attr(dim)});
  return {out[0], out[1], out[2]};
}

}  // namespace kiln
