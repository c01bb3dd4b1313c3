// Sparse CSR tensors: construction and checks, to_dense / to_sparse_csr, and sparse::mm.
#include "kiln/ops/sparse.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "kiln/backend/cpu/spmm.h"
#include "kiln/core/sparse_csr.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

cpu::SpmmReduce parse_reduce(const std::string& reduce) {
  if (reduce == "sum") return cpu::SpmmReduce::Sum;
  if (reduce == "mean") return cpu::SpmmReduce::Mean;
  if (reduce == "amax") return cpu::SpmmReduce::Max;
  if (reduce == "amin") return cpu::SpmmReduce::Min;
  KILN_FAIL("sparse_csr_mm: reduce must be 'sum', 'mean', 'amax' or 'amin', got '", reduce, "'");
}

// The row of every stored entry (crow [rows + 1] -> [nnz]); integer data, no gradient.
Tensor csr_row_ids(const Tensor& crow) {
  // The row ids are computed on the host (crow may be on a device) and returned on crow's device.
  Tensor c = crow.to(Device(kCPU), kInt64).contiguous();
  const int64_t rows = c.sym_numel().guard_int() - 1;
  const int64_t* p = c.data_ptr<int64_t>();
  Tensor out = empty({p[rows]}, TensorOptions(kInt64));
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = p[i]; j < p[i + 1]; ++j) o[j] = i;
  return out.to(crow.device());
}

void check_structure(const Tensor& crow, const Tensor& col, const Tensor& values, int64_t rows,
                     int64_t cols) {
  KILN_CHECK(crow.dim() == 1 && col.dim() == 1 && values.dim() == 1,
             "sparse_csr_tensor: expected 1-D crow_indices, col_indices and values, got shapes ",
             crow.sym_sizes(), ", ", col.sym_sizes(), ", ", values.sym_sizes());
  KILN_CHECK(crow.dtype() == kInt64 && col.dtype() == kInt64,
             "sparse_csr_tensor: crow_indices and col_indices must be int64, got ", crow.dtype(),
             " and ", col.dtype());
  KILN_CHECK(crow.sym_size(0) == rows + 1, "sparse_csr_tensor: crow_indices has ",
             crow.sym_size(0).guard_int(), " entries, expected rows + 1 = ", rows + 1);
  const int64_t nnz = col.sym_size(0).guard_int();
  KILN_CHECK(values.sym_size(0) == nnz, "sparse_csr_tensor: ", nnz, " column indices but ",
             values.sym_size(0).guard_int(), " values");
  Tensor c = crow.cpu().contiguous(), k = col.cpu().contiguous();  // read on the host
  const int64_t* cp = c.data_ptr<int64_t>();
  KILN_CHECK(cp[0] == 0 && cp[rows] == nnz,
             "sparse_csr_tensor: crow_indices must start at 0 and "
             "end at nnz = ",
             nnz, ", got ", cp[0], " ... ", cp[rows]);
  for (int64_t i = 0; i < rows; ++i)
    KILN_CHECK(cp[i] <= cp[i + 1],
               "sparse_csr_tensor: crow_indices must be non-decreasing, but "
               "crow_indices[",
               i, "] = ", cp[i], " > crow_indices[", i + 1, "] = ", cp[i + 1]);
  const int64_t* kp = k.data_ptr<int64_t>();
  for (int64_t j = 0; j < nnz; ++j)
    KILN_CHECK(kp[j] >= 0 && kp[j] < cols, "sparse_csr_tensor: col_indices[", j, "] = ", kp[j],
               " is out of range for ", cols, " columns");
}

// Float64 reference of sparse::mm for the op-table tests.
std::vector<Tensor> spmm_reference(const std::vector<Tensor>& in, const Attrs& a) {
  Tensor crow = in[0].contiguous(), col = in[1].contiguous();
  Tensor vals = in[2].to(kFloat64).contiguous(), dense = in[3].to(kFloat64).contiguous();
  const cpu::SpmmReduce r = parse_reduce(a.str(0));
  const int64_t rows = crow.sym_numel().guard_int() - 1, F = dense.sym_size(1).guard_int();
  Tensor out = zeros({rows, F}, TensorOptions(kFloat64));
  const int64_t *cp = crow.data_ptr<int64_t>(), *kp = col.data_ptr<int64_t>();
  const double *vp = vals.data_ptr<double>(), *dp = dense.data_ptr<double>();
  double* op = out.data_ptr<double>();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t f = 0; f < F; ++f) {
      double acc = r == cpu::SpmmReduce::Max ? -INFINITY : r == cpu::SpmmReduce::Min ? INFINITY : 0;
      for (int64_t j = cp[i]; j < cp[i + 1]; ++j) {
        const double c = vp[j] * dp[kp[j] * F + f];
        acc = r == cpu::SpmmReduce::Max   ? std::max(acc, c)
              : r == cpu::SpmmReduce::Min ? std::min(acc, c)
                                          : acc + c;
      }
      const int64_t n = cp[i + 1] - cp[i];
      if (n == 0) acc = 0;
      if (r == cpu::SpmmReduce::Mean && n > 0) acc /= static_cast<double>(n);
      op[i * F + f] = acc;
    }
  }
  return {out};
}

// A 3x4 pattern with an empty row, as (crow, col).
std::pair<Tensor, Tensor> sample_pattern() {
  return {kiln::tensor({0, 2, 2, 5}, TensorOptions(kInt64)),
          kiln::tensor({0, 3, 1, 2, 3}, TensorOptions(kInt64))};
}

std::vector<OpSample> spmm_samples(ScalarType dt) {
  auto [crow, col] = sample_pattern();
  std::vector<OpSample> s;
  for (const char* r : {"sum", "mean", "amax", "amin"}) {
    s.push_back({{crow, col, samples::make({5}, dt, 0.5, 2), samples::make({4, 6}, dt)},
                 {std::string(r)},
                 r});
  }
  s.push_back({{crow, col, samples::make({5}, dt), samples::make({6, 4}, dt).t()},
               {std::string("sum")},
               "transposed dense"});
  return s;
}

}  // namespace

KILN_REGISTER_OP(sparse_csr_mm)
    .schema(
        "sparse_csr_mm(Tensor crow, Tensor col, Tensor values, Tensor dense, str reduce) "
        "-> (Tensor, Tensor)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor &crow = in[0], &values = in[2], &dense = in[3];
      const cpu::SpmmReduce r = parse_reduce(a.str(0));
      KILN_CHECK(dense.dim() == 2, "sparse_csr_mm: expected a 2-D dense operand, got shape ",
                 dense.sym_sizes());
      KILN_CHECK(values.dtype() == dense.dtype() && is_floating_point(dense.dtype()),
                 "sparse_csr_mm: values (", values.dtype(), ") and dense (", dense.dtype(),
                 ") must have the same floating dtype");
      const SymInt rows = crow.sym_size(0) - 1;
      const bool arg = r == cpu::SpmmReduce::Max || r == cpu::SpmmReduce::Min;
      return std::vector<TensorSpec>{
          meta::spec({rows, dense.sym_size(1)}, dense.dtype(), dense.device()),
          // int32 entry numbers keep the arg lanes as wide as float32 values (the kernel
          // vectorises); int64 only when the entry count needs it.
          meta::spec(
              arg ? SymShape{rows, dense.sym_size(1)} : SymShape{0},
              in[1].sym_size(0).maybe_int().value_or(INT64_MAX) <= INT32_MAX ? kInt32 : kInt64,
              dense.device())};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const ScalarType work = out[0].dtype() == kFloat64 ? kFloat64 : kFloat32;
      Tensor result = out[0].dtype() == work ? out[0] : empty_like(out[0], TensorOptions(work));
      cpu::spmm(in[0].contiguous(), in[1].contiguous(), in[2].to(work).contiguous(),
                in[3].to(work).contiguous(), parse_reduce(a.str(0)), result, out[1]);
      if (!result.is_same(out[0])) out[0].copy_(result);
    })
    .save_outputs({1})  // the argument indices; every input
    .backward([](const BackwardContext& c) {
      const Tensor &crow = c.input(0), &col = c.input(1), &values = c.input(2), &dense = c.input(3);
      const cpu::SpmmReduce r = parse_reduce(c.attrs.str(0));
      const Tensor& g = c.grad(0);
      Tensor grad_values, grad_dense;
      if (r == cpu::SpmmReduce::Sum || r == cpu::SpmmReduce::Mean) {
        const Tensor rows = csr_row_ids(crow);
        Tensor g_rows = g.index_select(0, rows);  // [nnz, F]
        Tensor scale;
        if (r == cpu::SpmmReduce::Mean) {
          Tensor counts = (crow.slice(0, 1) - crow.slice(0, 0, -1)).to(values.dtype());
          scale = counts.clamp_min(1).reciprocal().index_select(0, rows);
        }
        if (c.needs_grad(2)) {
          grad_values = (g_rows * dense.index_select(0, col)).sum(IntArrayRef{1});
          if (scale.defined()) grad_values = grad_values * scale;
        }
        if (c.needs_grad(3)) {
          Tensor v = scale.defined() ? values * scale : values;
          grad_dense = zeros_like(dense).index_add(0, col, g_rows * v.unsqueeze(1));
        }
      } else {
        const Tensor arg = c.output(1).to(kInt64);
        Tensor chosen = arg.clamp_min(0);
        Tensor g_kept = g * arg.ge(0).to(g.dtype());
        Tensor dense_col = col.index_select(0, chosen.flatten()).view(arg.sym_sizes());
        if (c.needs_grad(2)) {
          Tensor contrib = g_kept * dense.gather(0, dense_col);
          grad_values = zeros_like(values).index_add(0, chosen.flatten(), contrib.flatten());
        }
        if (c.needs_grad(3)) {
          Tensor v = values.index_select(0, chosen.flatten()).view(arg.sym_sizes());
          grad_dense = zeros_like(dense).scatter_add(0, dense_col, g_kept * v);
        }
      }
      return std::vector<Tensor>{Tensor(), Tensor(), grad_values, grad_dense};
    })
    .samples(spmm_samples)
    .error_samples([] {
      auto [crow, col] = sample_pattern();
      const Tensor v = samples::make({5}, kFloat32), dense = samples::make({4, 6}, kFloat32);
      const Attrs sum{std::string("sum")};
      return std::vector<OpErrorSample>{
          {{crow, col, v, dense},
           {std::string("max")},
           "reduce must be 'sum', 'mean', 'amax' or 'amin', got 'max'",
           "reduce"},
          {{crow, col, v, samples::make({4}, kFloat32)},
           sum,
           "expected a 2-D dense operand, got shape [4]",
           "vector"},
          {{crow, col, v, dense.to(kFloat64)},
           sum,
           "values (float32) and dense (float64) must have the same floating dtype",
           "dtypes"},
      };
    })
    .reference(spmm_reference)
    .lowering("sparse:csr_mm");

KILN_REGISTER_OP(sparse_csr_to_dense)
    .schema("sparse_csr_to_dense(Tensor crow, Tensor col, Tensor values, int cols) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return meta::one_spec({in[0].sym_size(0) - 1, SymInt(a.i(0))}, in[2].dtype(), in[2].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const Tensor rows = csr_row_ids(in[0]);
      Tensor flat = out[0].zero_().view({-1});
      NoGradGuard no_grad;
      flat.index_put_({rows * a.i(0) + in[1]}, in[2]);
    })
    .save_inputs({0, 1})  // crow and col indices
    .backward([](const BackwardContext& c) {
      Tensor lin = csr_row_ids(c.input(0)) * c.attrs.i(0) + c.input(1);
      return std::vector<Tensor>{Tensor(), Tensor(), c.grad().reshape({-1}).index_select(0, lin)};
    })
    .samples([](ScalarType dt) {
      auto [crow, col] = sample_pattern();
      return std::vector<OpSample>{{{crow, col, samples::make({5}, dt)}, {int64_t{4}}, "3x4"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor crow = in[0].contiguous(), col = in[1].contiguous(), v = in[2].to(kFloat64);
      const int64_t rows = crow.sym_numel().guard_int() - 1, cols = a.i(0);
      Tensor out = zeros({rows, cols}, TensorOptions(kFloat64));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = crow.data_ptr<int64_t>()[i]; j < crow.data_ptr<int64_t>()[i + 1]; ++j)
          out.data_ptr<double>()[i * cols + col.data_ptr<int64_t>()[j]] = v[j].item<double>();
      return std::vector<Tensor>{out};
    })
    .lowering("sparse:csr_to_dense");

Tensor sparse_csr_tensor(const Tensor& crow_indices, const Tensor& col_indices,
                         const Tensor& values, IntArrayRef size) {
  KILN_CHECK(size.size() == 2,
             "sparse_csr_tensor: only 2-D sparse CSR tensors are supported, got "
             "size ",
             size);
  check_structure(crow_indices, col_indices, values, size[0], size[1]);
  return Tensor(std::make_shared<SparseCsrTensorImpl>(crow_indices, col_indices, values,
                                                      SymShape{size[0], size[1]}));
}

bool Tensor::is_sparse_csr() const { return checked()->layout() == Layout::SparseCsr; }
Tensor Tensor::crow_indices() const {
  return sparse_csr_impl(*this, "crow_indices").crow_indices();
}
Tensor Tensor::col_indices() const { return sparse_csr_impl(*this, "col_indices").col_indices(); }
Tensor Tensor::values() const { return sparse_csr_impl(*this, "values").values(); }

Tensor Tensor::to_dense() const {
  if (!is_sparse_csr()) return *this;
  const auto& csr = sparse_csr_impl(*this, "to_dense");
  static const OpDef& op = get_op("sparse_csr_to_dense");
  return call_op1(op, {csr.crow_indices(), csr.col_indices(), csr.values()}, {size(1)});
}

// The stored entries are the non-zeros, row by row; values keep the dense tensor's autograd
// history (masked_select), so gradients reach it through sparse::mm.
Tensor Tensor::to_sparse_csr() const {
  if (is_sparse_csr()) return *this;
  KILN_CHECK(dim() == 2, "to_sparse_csr: only 2-D tensors are supported, got shape ", sizes());
  Tensor mask = ne(0);
  Tensor counts = mask.sum(IntArrayRef{1}).to(kInt64);
  Tensor crow = cat({zeros({1}, TensorOptions(kInt64)), counts.cumsum(0)});
  Tensor col = mask.nonzero().select(1, 1).contiguous();
  return sparse_csr_tensor(crow, col, masked_select(mask), {size(0), size(1)});
}

namespace sparse {

Tensor mm(const Tensor& sparse, const Tensor& dense, const std::string& reduce) {
  const auto& csr = sparse_csr_impl(sparse, "sparse::mm");
  KILN_CHECK(dense.dim() == 2 && dense.sym_size(0) == sparse.sym_size(1),
             "sparse::mm: cannot multiply a ", sparse.sym_sizes(), " sparse matrix by a dense ",
             dense.sym_sizes(), " matrix");
  static const OpDef& op = get_op("sparse_csr_mm");
  return call_op1(op, {csr.crow_indices(), csr.col_indices(), csr.values(), dense}, {reduce});
}

}  // namespace sparse
}  // namespace kiln
