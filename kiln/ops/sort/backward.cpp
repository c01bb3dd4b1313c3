// The two ops the gradients of the selecting ops (sort, topk, kthvalue, median, mode, cummax,
// cummin) are made of: value_selecting_backward adds a gradient into zeros at positions along a
// dim, select_along_dim reads values at positions along a dim. Each is the other's gradient, so
// double backward works.
#include <vector>

#include "kiln/backend/cpu/sort_rows.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/sort/util.h"

namespace kiln {
namespace {

// Every index in [0, n), checked before a kernel writes anything (and outside its parallel
// loops, where an exception could not propagate).
void check_range(const char* op, const Tensor& indices, int64_t n) {
  Tensor idx = indices.contiguous();
  const int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < idx.sym_numel(); ++i) {
    KILN_CHECK(p[i] >= 0 && p[i] < n, op, ": index ", p[i],
               " is out of bounds for dimension with size ", n);
  }
}

// Row r of int64 positions (strided) copied out.
std::vector<int64_t> positions(const Tensor& indices, const cpu::Rows& ir, int64_t r) {
  const int64_t* p = indices.data_ptr<int64_t>() + ir.offset(r);
  std::vector<int64_t> out(ir.length());
  for (int64_t j = 0; j < ir.length(); ++j) out[j] = p[j * ir.stride()];
  return out;
}

void check_indices(const char* op, const Tensor& indices) {
  KILN_CHECK(indices.dtype() == kInt64, op, ": expected int64 indices, got ", indices.dtype());
}

// Positions along dim in [0, n), repeats included: the sample indices of both ops.
Tensor sample_indices(std::vector<int64_t> shape, int64_t n) {
  return samples::make(std::move(shape), kInt64, 0, static_cast<double>(n));
}

std::vector<OpSample> gather_like_samples(ScalarType dt, bool scatter) {
  struct Case {
    std::vector<int64_t> x, idx;
    int64_t dim;
    const char* desc;
  };
  const std::vector<Case> cases = {{{3, 5}, {3, 4}, 1, "rows"},
                                   {{4, 3}, {6, 3}, 0, "columns, repeats"},
                                   {{2, 5, 3}, {2, 2, 3}, 1, "middle dim"},
                                   {{}, {}, 0, "0-dim"},
                                   {{0, 4}, {0, 2}, 1, "zero-size"}};
  std::vector<OpSample> s;
  for (const Case& c : cases) {
    const int64_t n = c.x.empty() ? 1 : c.x[c.dim];
    Tensor idx = sample_indices(c.idx, n);
    if (scatter) {
      s.push_back(
          {{samples::make(c.idx, dt), idx}, {c.dim, SymShape(c.x.begin(), c.x.end())}, c.desc});
    } else {
      s.push_back({{samples::make(c.x, dt), idx}, {c.dim}, c.desc});
    }
  }
  return s;
}

// Float64 reference of both ops: for every element of `indices`, the position it addresses in
// a tensor of `sizes` (row-major), and its own position.
template <class F>
void for_each_selected(const Tensor& indices, const std::vector<int64_t>& sizes, int64_t dim, F f) {
  Tensor idx = indices.contiguous();
  const std::vector<int64_t> isz = idx.sym_sizes().vec();
  const int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t e = 0; e < idx.sym_numel(); ++e) {
    int64_t rem = e, target = 0, mul = 1;
    for (int64_t d = static_cast<int64_t>(isz.size()) - 1; d >= 0; --d) {
      const int64_t i = rem % isz[d];
      rem /= isz[d];
      target += (d == dim ? p[e] : i) * mul;
      mul *= sizes[d];
    }
    f(target, e);
  }
}

}  // namespace

KILN_REGISTER_OP(value_selecting_backward)
    .schema(
        "value_selecting_backward(Tensor grad, Tensor indices, int dim, SymInt[] sizes) -> "
        "Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const char* op = "value_selecting_backward";
      check_indices(op, in[1]);
      meta::wrap_dim(op, a.i(0), static_cast<int64_t>(a.shape(1).size()));
      return meta::one_spec(a.shape(1), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const char* op = "value_selecting_backward";
      const Tensor &g = in[0], &indices = in[1];
      const int64_t dim = sorting::along_dim(op, out[0], a.i(0));
      out[0].zero_();
      const cpu::Rows gr(g, dim), ir(indices, dim), orow(out[0], dim);
      check_range(op, indices, orow.length());
      cpu::visit_floating(g.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        const T* gp = g.data_ptr<T>();
        T* op_ = out[0].data_ptr<T>();
        cpu::parallel_for(0, gr.count(), cpu::row_grain(gr.length()), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const std::vector<int64_t> pos = positions(indices, ir, r);
            const T* gs = gp + gr.offset(r);
            T* os = op_ + orow.offset(r);
            for (size_t j = 0; j < pos.size(); ++j) {
              T& dst = os[pos[j] * orow.stride()];
              dst = static_cast<T>(static_cast<cpu::compute_t<T>>(dst) +
                                   static_cast<cpu::compute_t<T>>(gs[j * gr.stride()]));
            }
          }
        });
      });
    })
    .save_inputs({1})
    .backward([](const BackwardContext& c) {
      const int64_t dim = meta::wrap_dim("value_selecting_backward", c.attrs.i(0),
                                         static_cast<int64_t>(c.attrs.shape(1).size()));
      return std::vector<Tensor>{sorting::select_along_dim(c.grad(), c.input(1), dim), Tensor()};
    })
    .samples([](ScalarType dt) { return gather_like_samples(dt, true); })
    .error_samples([] {
      const Tensor g = samples::make({3, 2}, kFloat32);
      const Attrs a{int64_t{1}, SymShape{3, 4}};
      return std::vector<OpErrorSample>{
          {{g, zeros({3, 2}, kInt32)}, a, "expected int64 indices, got int32", "int32 indices"},
          {{g, zeros({3, 2}, kInt64)},
           {int64_t{2}, SymShape{3, 4}},
           "expected to be in range of [-2, 1], but got 2",
           "dim"},
          {{g, tensor({{0, 4}, {1, 2}, {3, 3}}, kInt64)},
           a,
           "index 4 is out of bounds for dimension with size 4",
           "index out of range",
           /*in_meta=*/false},
          {{g.to(kInt64), zeros({3, 2}, kInt64)},
           a,
           "not supported for dtype int64 (expected a floating dtype)",
           "integer gradient",
           /*in_meta=*/false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      std::vector<int64_t> sizes;
      for (const auto& s : a.shape(1)) sizes.push_back(s.guard_int());
      Tensor out = zeros(SymIntList(a.shape(1)), TensorOptions(kFloat64));
      Tensor g = in[0].to(kFloat64).contiguous();
      double* o = out.data_ptr<double>();
      const double* gp = g.data_ptr<double>();
      for_each_selected(in[1], sizes, a.i(0), [&](int64_t t, int64_t e) { o[t] += gp[e]; });
      return std::vector<Tensor>{out};
    })
    .lowering("extern:value_selecting_backward");

KILN_REGISTER_OP(select_along_dim)
    .schema("select_along_dim(Tensor self, Tensor indices, int dim) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const char* op = "select_along_dim";
      check_indices(op, in[1]);
      const int64_t dim = sorting::along_dim(op, in[0], a.i(0));
      KILN_CHECK(in[0].dim() == in[1].dim(), op, ": self and indices must have the same number ",
                 "of dims, got ", in[0].sym_sizes(), " and ", in[1].sym_sizes());
      for (int64_t d = 0; d < in[0].dim(); ++d) {
        KILN_CHECK(d == dim || in[0].sym_size(d) == in[1].sym_size(d), op, ": sizes of self ",
                   in[0].sym_sizes(), " and indices ", in[1].sym_sizes(),
                   " must match except in dim ", dim);
      }
      return meta::one_spec(in[1].sym_sizes(), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const char* op = "select_along_dim";
      const Tensor &x = in[0], &indices = in[1];
      const int64_t dim = sorting::along_dim(op, x, a.i(0));
      const cpu::Rows xr(x, dim), ir(indices, dim), orow(out[0], dim);
      check_range(op, indices, xr.length());
      cpu::parallel_for(0, ir.count(), cpu::row_grain(ir.length()), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const std::vector<int64_t> pos = positions(indices, ir, r);
          cpu::write_selected(x, xr, r, pos.data(), static_cast<int64_t>(pos.size()), out[0], orow,
                              r);
        }
      });
    })
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      const int64_t dim = sorting::along_dim("select_along_dim", x, c.attrs.i(0));
      return std::vector<Tensor>{sorting::select_backward(c.grad(), c.input(1), dim, x), Tensor()};
    })
    .samples([](ScalarType dt) { return gather_like_samples(dt, false); })
    .error_samples([] {
      const Tensor x = samples::make({3, 4}, kFloat32);
      const Attrs d1{int64_t{1}};
      return std::vector<OpErrorSample>{
          {{x, zeros({3, 2}, kInt32)}, d1, "expected int64 indices, got int32", "int32 indices"},
          {{x, zeros({3, 2}, kInt64)},
           {int64_t{2}},
           "expected to be in range of [-2, 1], but got 2",
           "dim"},
          {{x, zeros({3}, kInt64)},
           d1,
           "must have the same number of dims, got [3, 4] and [3]",
           "rank"},
          {{x, zeros({2, 2}, kInt64)},
           d1,
           "sizes of self [3, 4] and indices [2, 2] must match except in dim 1",
           "sizes"},
          {{x, tensor({{0, 4}, {1, 2}, {3, 3}}, kInt64)},
           d1,
           "index 4 is out of bounds for dimension with size 4",
           "index out of range",
           /*in_meta=*/false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor x = in[0].to(kFloat64).contiguous();
      Tensor out = empty(in[1].sym_sizes(), TensorOptions(kFloat64));
      double* o = out.data_ptr<double>();
      const double* xp = x.data_ptr<double>();
      for_each_selected(in[1], x.sym_sizes().vec(), a.i(0),
                        [&](int64_t t, int64_t e) { o[e] = xp[t]; });
      return std::vector<Tensor>{out};
    })
    .lowering("extern:select_along_dim");

}  // namespace kiln
