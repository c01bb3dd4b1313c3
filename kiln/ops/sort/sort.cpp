// sort and argsort.
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

constexpr const char* kSort = "sort";

// attrs: (stable, dim, descending)
void sort_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor& x = in[0];
  const int64_t dim = sorting::along_dim(kSort, x, a.i(1));
  const bool descending = a.b(2);
  const cpu::Rows xr(x, dim), vr(out[0], dim), ir(out[1], dim);
  const int64_t n = xr.length();
  cpu::for_each_row_keys(kSort, x, dim, cpu::row_grain(n, 4096),
                         [&](auto* keys, int64_t, int64_t r) {
                           std::vector<int64_t> idx(n);
                           cpu::sort_row(keys, n, descending, idx.data());
                           cpu::write_selected(x, xr, r, idx.data(), n, out[0], vr, r);
                           cpu::write_indices(idx.data(), n, out[1], ir, r);
                         });
}

std::vector<OpSample> sort_samples(ScalarType dt) {
  auto attrs = [](int64_t dim, bool descending) {
    return Attrs{std::monostate{}, dim, descending};
  };
  auto s = sorting::along_dim_samples(dt, [&](int64_t dim, int64_t) { return attrs(dim, false); });
  s.push_back({{samples::make({3, 6}, dt)}, attrs(1, true), "descending"});
  s.push_back({{samples::make({4, 5}, dt)}, Attrs{true, int64_t{0}, true}, "stable descending"});
  for (bool descending : {false, true}) {
    OpSample t{{sorting::tied_values({3, 80}, dt, 4)}, attrs(-1, descending), "ties"};
    t.check_grad = false;
    s.push_back(t);
  }
  if (is_floating_point(dt)) {
    Tensor x = tensor({1.0, NAN, -0.0, 0.0, -INFINITY, NAN, 2.0, INFINITY}).to(dt);
    for (bool descending : {false, true}) {
      OpSample t{{x}, attrs(0, descending), "NaN, infinities and signed zeros"};
      t.check_grad = false;
      s.push_back(t);
    }
  }
  return s;
}

}  // namespace

KILN_REGISTER_OP(sort)
    .schema(
        "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> "
        "(Tensor values, Tensor indices)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      sorting::along_dim(kSort, in[0], a.i(1));
      return std::vector<TensorSpec>{meta::spec(in[0].sym_sizes(), in[0].dtype(), in[0].device()),
                                     meta::spec(in[0].sym_sizes(), kInt64, in[0].device())};
    })
    .cpu(sort_kernel)
    .save_outputs({1})  // the indices; the input only for its sizes
    .save_metadata()
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      const int64_t dim = sorting::along_dim(kSort, x, c.attrs.i(1));
      return std::vector<Tensor>{sorting::select_backward(c.grad(0), c.output(1), dim, x)};
    })
    .samples(sort_samples)
    .error_samples([] {
      return std::vector<OpErrorSample>{sorting::dim_error_sample([](int64_t dim, int64_t) {
        return Attrs{std::monostate{}, dim, false};
      })};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const bool descending = a.b(2);
      return sorting::reference_slices(in[0], sorting::along_dim(kSort, in[0], a.i(1)), true,
                                       [&](const std::vector<double>& v) {
                                         std::vector<double> values, indices;
                                         for (int64_t i : sorting::stable_order(v, descending)) {
                                           values.push_back(v[i]);
                                           indices.push_back(static_cast<double>(i));
                                         }
                                         return std::vector<std::vector<double>>{values, indices};
                                       });
    })
    .dtypes(reduce::kAllDtypes)
    .lowering("extern:sort");

std::tuple<Tensor, Tensor> sort(const Tensor& self, std::optional<bool> stable, int64_t dim,
                                bool descending) {
  static const OpDef& op = get_op(kSort);
  auto out = call_op(op, {self}, {opt_attr(stable), dim, descending});
  return {out[0], out[1]};
}
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
  return sort(self, std::nullopt, dim, descending);
}
Tensor argsort(const Tensor& self, bool stable, int64_t dim, bool descending) {
  return std::get<1>(sort(self, stable, dim, descending));
}
Tensor argsort(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(sort(self, std::nullopt, dim, descending));
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return kiln::sort(*this, dim, descending);
}
std::tuple<Tensor, Tensor> Tensor::sort(std::optional<bool> stable, int64_t dim,
                                        bool descending) const {
  return kiln::sort(*this, stable, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const {
  return kiln::argsort(*this, dim, descending);
}
Tensor Tensor::argsort(bool stable, int64_t dim, bool descending) const {
  return kiln::argsort(*this, stable, dim, descending);
}

}  // namespace kiln
