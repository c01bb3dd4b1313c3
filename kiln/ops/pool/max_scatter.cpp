// The pair max pooling's gradients are made of: max_pool_backward scatters a gradient to flat
// per-plane indices and max_pool_gather reads a tensor at them; each is the other's derivative.
// Planes are the dims after N and C, two or three of them.
#include <vector>

#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool/planes.h"
#include "kiln/ops/pool/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

bool is_pooled(const Tensor& t) { return t.dim() == 4 || t.dim() == 5; }

// {0, 3, 3, 5, 8, 1, 2, 2}: indices into 3x3 planes, with repeats, as `shape` (8 elements).
Tensor repeated_indices(std::vector<int64_t> shape) {
  return tensor(std::vector<int64_t>{0, 3, 3, 5, 8, 1, 2, 2}).view(shape);
}

}  // namespace

// max_pool_backward(grad [N, C, <out>], indices, input_sizes) -> [N, C, <in>]
KILN_REGISTER_OP(max_pool_backward)
    .schema("max_pool_backward(Tensor grad, Tensor indices, SymInt[] input_sizes) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      KILN_CHECK(
          is_pooled(in[0]) && in[1].dtype() == kInt64 && in[0].sym_sizes() == in[1].sym_sizes(),
          "max_pool_backward: expected grad and int64 indices of one 4-D or 5-D shape, got ",
          in[0].sym_sizes(), " and ", in[1].sym_sizes());
      KILN_CHECK(a.shape(0).size() == static_cast<size_t>(in[0].dim()),
                 "max_pool_backward: expected input_sizes of rank ", in[0].dim(), ", got ",
                 a.shape(0));
      return meta::one_spec(a.shape(0), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const Tensor g = pool::to_compute(in[0]);
      const Tensor idx = in[1].contiguous();
      const int64_t plane_in = pool::extent(out[0]).numel();
      const int64_t plane_out = pool::extent(g).numel();
      const int64_t planes = pool::planes(g);
      pool::compute_into(out[0], [&](Tensor& r) {
        pool::visit_compute(r.dtype(), [&]<class T>(T) {
          const T* pg = g.data_ptr<T>();
          const int64_t* pi = idx.data_ptr<int64_t>();
          T* pr = r.data_ptr<T>();
          pool::for_planes(planes, plane_in + plane_out, [&](int64_t p) {
            T* dst = pr + p * plane_in;
            std::fill(dst, dst + plane_in, T(0));
            for (int64_t j = p * plane_out; j < (p + 1) * plane_out; ++j) {
              KILN_CHECK(pi[j] >= 0 && pi[j] < plane_in, "max_pool_backward: index ", pi[j],
                         " is out of range for an input plane of ", plane_in, " elements");
              dst[pi[j]] += pg[j];
            }
          });
        });
      });
    })
    .save_inputs({1})
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{pool::gather_planes(c.grad(), c.input(1)), Tensor()};
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({1, 2, 2, 2}, dt), repeated_indices({1, 2, 2, 2})},
           {SymShape{1, 2, 3, 3}},
           "repeated indices"},
          {{samples::make({1, 2, 1, 2, 2}, dt), repeated_indices({1, 2, 1, 2, 2})},
           {SymShape{1, 2, 1, 3, 3}},
           "5-D"}};
    })
    .error_samples([] {
      const Tensor g = samples::make({1, 2, 2, 2}, kFloat32);
      const Attrs sizes{SymShape{1, 2, 3, 3}};
      return std::vector<OpErrorSample>{
          {{g, zeros({1, 2, 2}, kInt64)},
           sizes,
           "expected grad and int64 indices of one 4-D or 5-D shape, got [1, 2, 2, 2] and [1, 2, "
           "2]",
           "indices' shape"},
          {{g, tensor(std::vector<int64_t>{0, 3, 3, 9, 8, 1, 2, 2}).view({1, 2, 2, 2})},
           sizes,
           "index 9 is out of range for an input plane of 9 elements",
           "index out of range",
           /*in_meta=*/false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor r = zeros(a.shape(0), kFloat64);
      Tensor g = in[0].to(kFloat64).contiguous();
      Tensor idx = in[1].contiguous();
      const int64_t pin = pool::extent(r).numel(), pout = pool::extent(g).numel();
      for (int64_t j = 0; j < g.sym_numel(); ++j)
        r.data_ptr<double>()[j / pout * pin + idx.data_ptr<int64_t>()[j]] +=
            g.data_ptr<double>()[j];
      return std::vector<Tensor>{r};
    })
    .lowering("extern:max_pool_backward");

// max_pool_gather(x [N, C, <in>], indices [N, C, <out>]) -> x at the indices
KILN_REGISTER_OP(max_pool_gather)
    .schema("max_pool_gather(Tensor self, Tensor indices) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      KILN_CHECK(is_pooled(in[0]) && in[1].dim() == in[0].dim() && in[1].dtype() == kInt64 &&
                     in[1].sym_size(0) == in[0].sym_size(0) &&
                     in[1].sym_size(1) == in[0].sym_size(1),
                 "max_pool_gather: expected a 4-D or 5-D input and int64 indices of its rank, N "
                 "and C, got ",
                 in[0].sym_sizes(), " and ", in[1].sym_sizes());
      return meta::one_spec(in[1].sym_sizes(), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const Tensor x = pool::to_compute(in[0]);
      const Tensor idx = in[1].contiguous();
      const int64_t plane_in = pool::extent(x).numel();
      const int64_t plane_out = pool::extent(idx).numel();
      const int64_t planes = pool::planes(idx);
      pool::compute_into(out[0], [&](Tensor& r) {
        pool::visit_compute(r.dtype(), [&]<class T>(T) {
          const T* px = x.data_ptr<T>();
          const int64_t* pi = idx.data_ptr<int64_t>();
          T* pr = r.data_ptr<T>();
          pool::for_planes(planes, plane_out, [&](int64_t p) {
            for (int64_t j = p * plane_out; j < (p + 1) * plane_out; ++j) {
              KILN_CHECK(pi[j] >= 0 && pi[j] < plane_in, "max_pool_gather: index ", pi[j],
                         " is out of range for an input plane of ", plane_in, " elements");
              pr[j] = px[p * plane_in + pi[j]];
            }
          });
        });
      });
    })
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{pool::scatter_planes(c.grad(), c.input(1), c.input(0).sym_sizes()),
                                 Tensor()};
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({1, 2, 3, 3}, dt), repeated_indices({1, 2, 2, 2})},
           {},
           "repeated indices"},
          {{samples::make({1, 2, 1, 3, 3}, dt), repeated_indices({1, 2, 1, 2, 2})}, {}, "5-D"}};
    })
    .error_samples([] {
      const Tensor x = samples::make({1, 2, 3, 3}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x, zeros({1, 2, 2}, kInt64)},
           {},
           "expected a 4-D or 5-D input and int64 indices of its rank, N and C, got [1, 2, 3, 3] "
           "and [1, 2, 2]",
           "indices' shape"},
          {{x, tensor(std::vector<int64_t>{0, 3, 3, 5, 8, 1, 2, -1}).view({1, 2, 2, 2})},
           {},
           "index -1 is out of range for an input plane of 9 elements",
           "index out of range",
           /*in_meta=*/false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      Tensor x = in[0].to(kFloat64).contiguous();
      Tensor idx = in[1].contiguous();
      Tensor r = empty(idx.sym_sizes(), kFloat64);
      const int64_t pin = pool::extent(x).numel(), pout = pool::extent(r).numel();
      for (int64_t j = 0; j < r.sym_numel(); ++j)
        r.data_ptr<double>()[j] = x.data_ptr<double>()[j / pout * pin + idx.data_ptr<int64_t>()[j]];
      return std::vector<Tensor>{r};
    })
    .lowering("extern:max_pool_gather");

namespace pool {
Tensor gather_planes(const Tensor& x, const Tensor& indices) {
  static const OpDef& op = get_op("max_pool_gather");
  return call_op1(op, {x, indices}, {});
}
Tensor scatter_planes(const Tensor& grad, const Tensor& indices, const SymShape& input_sizes) {
  static const OpDef& op = get_op("max_pool_backward");
  return call_op1(op, {grad, indices}, {input_sizes});
}
}  // namespace pool

}  // namespace kiln
