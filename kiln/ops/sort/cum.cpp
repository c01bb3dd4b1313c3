// cummax and cummin: the running extreme along a dim and the (last) index where it was attained.
#include <cmath>
#include <vector>

#include "kiln/backend/cpu/sort_rows.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/sort.h"
#include "kiln/ops/sort/util.h"

namespace kiln {
namespace {

// A later element takes over when it is NaN, or when it is at least as large (kMax) or as small
// as the running extreme and that is not NaN (NaN, once seen, stays).
template <bool kMax>
void cum_extreme_kernel(const char* op, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                        const Attrs& a) {
  const Tensor& x = in[0];
  const int64_t dim = sorting::along_dim(op, x, a.i(0));
  const bool floating = is_floating_point(x.dtype());
  const cpu::Rows xr(x, dim), vr(out[0], dim), ir(out[1], dim);
  cpu::for_each_row_keys(
      op, x, dim, cpu::row_grain(xr.length()), [&](auto* keys, int64_t n, int64_t r) {
        std::vector<int64_t> idx(n);
        int64_t best = 0;
        for (int64_t i = 0; i < n; ++i) {
          const auto k = keys[i], b = keys[best];
          const bool take = cpu::is_nan_key(k, floating) ||
                            (!cpu::is_nan_key(b, floating) && (kMax ? k >= b : k <= b));
          if (take) best = i;
          idx[i] = best;
        }
        cpu::write_selected(x, xr, r, idx.data(), n, out[0], vr, r);
        cpu::write_indices(idx.data(), n, out[1], ir, r);
      });
}

template <bool kMax>
void register_cum_extreme(const char* op) {
  register_op(op)
      .schema(std::string(op) + "(Tensor self, int dim) -> (Tensor values, Tensor indices)")
      .meta([op](const std::vector<Tensor>& in, const Attrs& a) {
        sorting::along_dim(op, in[0], a.i(0));
        return std::vector<TensorSpec>{meta::spec(in[0].sym_sizes(), in[0].dtype(), in[0].device()),
                                       meta::spec(in[0].sym_sizes(), kInt64, in[0].device())};
      })
      .cpu([op](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        cum_extreme_kernel<kMax>(op, in, out, a);
      })
      .save_outputs({1})  // the indices; the input only for its sizes
      .save_metadata()
      .backward([op](const BackwardContext& c) {
        const Tensor& x = c.input(0);
        const int64_t dim = sorting::along_dim(op, x, c.attrs.i(0));
        return std::vector<Tensor>{sorting::select_backward(c.grad(0), c.output(1), dim, x)};
      })
      .samples([](ScalarType dt) {
        auto s = sorting::along_dim_samples(dt, [](int64_t dim, int64_t) { return Attrs{dim}; });
        OpSample t{{sorting::tied_values({3, 20}, dt, 3)}, {int64_t{1}}, "ties"};
        t.check_grad = false;
        s.push_back(t);
        if (is_floating_point(dt)) {
          OpSample n{{tensor({1.0, NAN, 3.0, NAN, -1.0}).to(dt)}, {int64_t{0}}, "NaN"};
          n.check_grad = false;
          s.push_back(n);
        }
        return s;
      })
      .error_samples([] {
        return std::vector<OpErrorSample>{
            sorting::dim_error_sample([](int64_t dim, int64_t) { return Attrs{dim}; })};
      })
      .reference([op](const std::vector<Tensor>& in, const Attrs& a) {
        return sorting::reference_slices(
            in[0], sorting::along_dim(op, in[0], a.i(0)), true, [](const std::vector<double>& v) {
              std::vector<std::vector<double>> out(2);
              size_t best = 0;
              for (size_t i = 0; i < v.size(); ++i) {
                if (std::isnan(v[i]) ||
                    (!std::isnan(v[best]) && (kMax ? v[i] >= v[best] : v[i] <= v[best])))
                  best = i;
                out[0].push_back(v[best]);
                out[1].push_back(static_cast<double>(best));
              }
              return out;
            });
      })
      .dtypes(reduce::kAllDtypes)
      .lowering(std::string("extern:") + op);
}

[[maybe_unused]] const bool registered = [] {
  register_cum_extreme<true>("cummax");
  register_cum_extreme<false>("cummin");
  return true;
}();

std::tuple<Tensor, Tensor> call_cum(const char* name, const Tensor& self, int64_t dim) {
  auto out = call_op(get_op(name), {self}, {dim});
  return {out[0], out[1]};
}

}  // namespace

std::tuple<Tensor, Tensor> cummax(const Tensor& self, int64_t dim) {
  return call_cum("cummax", self, dim);
}
std::tuple<Tensor, Tensor> cummin(const Tensor& self, int64_t dim) {
  return call_cum("cummin", self, dim);
}
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return kiln::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return kiln::cummin(*this, dim); }

}  // namespace kiln
