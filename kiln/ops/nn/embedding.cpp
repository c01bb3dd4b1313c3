// embedding (row lookup), its dense backward (a scatter-add of gradient rows) and
// embedding_renorm_ (max_norm).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kiln/ops/meta.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

void check_indices(const char* op, const Tensor& indices) {
  KILN_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32, op,
             ": Expected tensor for argument #2 'indices' to have one of the following scalar "
             "types: Long, Int; but got ",
             indices.dtype(), " instead");
}

// The indices as int64, each checked against [0, rows).
std::vector<int64_t> checked_indices(const char* op, const Tensor& indices, int64_t rows) {
  std::vector<int64_t> idx = nn_util::to_ints(indices);
  for (int64_t i : idx)
    KILN_CHECK(i >= 0 && i < rows, op, ": index ", i, " is out of range for ", rows,
               " embeddings (index out of range in self)");
  return idx;
}

// How often each row occurs in idx.
std::vector<int64_t> row_counts(const std::vector<int64_t>& idx, int64_t rows) {
  std::vector<int64_t> counts(rows, 0);
  for (int64_t i : idx) ++counts[i];
  return counts;
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                          int64_t padding_idx, bool scale_grad_by_freq) {
  static const OpDef& op = get_op("embedding_backward");
  return call_op1(op, {grad, indices}, {num_weights, padding_idx, scale_grad_by_freq});
}

// padding_idx and scale_grad_by_freq change the gradient on purpose (it is no longer the
// derivative), so finite differences are not checked for those samples of embedding itself.
std::vector<OpSample> embedding_samples(ScalarType dt) {
  auto idx = [](std::vector<int64_t> v, std::vector<int64_t> shape) {
    return tensor(v).view(SymIntList(shape));
  };
  Tensor w = samples::make({6, 3}, dt);
  const int64_t none = -1;
  return {
      {{w, idx({0, 5, 2, 2, 1, 3}, {2, 3})}, {none, false, false}, "2-d indices"},
      {{w, idx({4, 2, 2, 0}, {4})}, {int64_t{2}, false, false}, "padding_idx", false},
      {{w, idx({1, 1, 1, 4, 0}, {5})}, {none, true, false}, "scale_grad_by_freq", false},
      {{w, idx({3}, {})}, {none, false, false}, "0-dim index"},
      {{w, idx({}, {0})}, {none, false, false}, "no indices"},
      {{samples::make({3, 6}, dt, -3, 3, true).t(), idx({0, 5, 3}, {3}).to(kInt32)},
       {none, false, false},
       "non-contiguous weight, int32 indices"},
  };
}

// The checks of the indices; `before` the indices, `after` them: the op's other arguments.
std::vector<OpErrorSample> indices_error_samples(const Tensor& before, int64_t rows,
                                                 const Attrs& a) {
  return {
      {{before, tensor({0., 1.})}, a, "types: Long, Int; but got float32 instead", "float indices"},
      {{before, tensor(std::vector<int64_t>{1, rows})},
       a,
       detail::str_cat("index ", rows, " is out of range for ", rows, " embeddings"),
       "index out of range",
       /*in_meta=*/false},
  };
}

}  // namespace

KILN_REGISTER_OP(embedding)
    .schema(
        "embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool "
        "scale_grad_by_freq=False, bool sparse=False) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& w = in[0];
      check_indices("embedding", in[1]);
      KILN_CHECK(w.dim() == 2, "embedding: 'weight' must be 2-D, got a tensor of shape ",
                 w.sym_sizes());
      KILN_CHECK(!a.b(2),
                 "embedding: sparse gradients are not supported; pass sparse=false (got "
                 "sparse=true)");
      SymShape shape = in[1].sym_sizes();
      shape.push_back(w.sym_size(1));
      return meta::one_spec(shape, w.dtype(), w.device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const Tensor w = in[0].contiguous();
      const int64_t rows = w.sym_size(0).guard_int();
      const std::vector<int64_t> idx = checked_indices("embedding", in[1], rows);
      const size_t row_bytes = static_cast<size_t>(w.sym_size(1).guard_int()) * w.element_size();
      const char* src = static_cast<const char*>(w.data_ptr());
      char* dst = static_cast<char*>(out[0].data_ptr());
      for (size_t i = 0; i < idx.size() && row_bytes > 0; ++i)
        std::memcpy(dst + i * row_bytes, src + idx[i] * row_bytes, row_bytes);
    })
    .save_metadata({0})  // weight: its sizes only
    .backward([](const BackwardContext& c) {
      const Tensor& w = c.input(0);
      return std::vector<Tensor>{embedding_backward(c.grad(), c.input(1), w.sym_size(0).guard_int(),
                                                    c.attrs.i(0), c.attrs.b(1)),
                                 Tensor()};
    })
    .samples(embedding_samples)
    .error_samples([] {
      const Attrs a{int64_t{-1}, false, false};
      auto s = indices_error_samples(samples::make({6, 3}, kFloat32), 6, a);
      s.push_back({{samples::make({6}, kFloat32), tensor({1}, kInt64)},
                   a,
                   "'weight' must be 2-D, got a tensor of shape [6]",
                   "weight of rank 1"});
      s.push_back({{samples::make({6, 3}, kFloat32), tensor({1}, kInt64)},
                   {int64_t{-1}, false, true},
                   "sparse gradients are not supported",
                   "sparse"});
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      const std::vector<double> w = nn_util::to_doubles(in[0]);
      const std::vector<int64_t> idx = nn_util::to_ints(in[1]);
      const int64_t d = in[0].sym_size(1).guard_int();
      std::vector<double> out;
      for (int64_t i : idx)
        for (int64_t j = 0; j < d; ++j) out.push_back(w[i * d + j]);
      std::vector<int64_t> shape = nn_util::concrete_sizes(in[1]);
      shape.push_back(d);
      return std::vector<Tensor>{nn_util::from_doubles(out, shape)};
    })
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:embedding");

// grad (*, D) -> (num_weights, D): row i accumulates the gradient rows of the positions whose
// index is i (none for padding_idx; divided by the index's count with scale_grad_by_freq).
KILN_REGISTER_OP(embedding_backward)
    .schema(
        "embedding_backward(Tensor grad, Tensor indices, int num_weights, int padding_idx, bool "
        "scale_grad_by_freq) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      check_indices("embedding_backward", in[1]);
      const Tensor& g = in[0];
      KILN_CHECK(g.dim() == in[1].dim() + 1,
                 "embedding_backward: grad must have one more dim than indices, got grad of shape ",
                 g.sym_sizes(), " and indices of shape ", in[1].sym_sizes());
      return meta::one_spec({SymInt(a.i(0)), g.sym_size(-1)}, g.dtype(), g.device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const int64_t rows = a.i(0), pad = a.i(1);
      const bool by_freq = a.b(2);
      const Tensor g = nn_util::as_compute(in[0]);
      const std::vector<int64_t> idx = checked_indices("embedding_backward", in[1], rows);
      const std::vector<int64_t> counts = row_counts(idx, rows);
      const int64_t d = g.sym_size(-1).guard_int();
      Tensor acc = zeros({rows, d}, g.options());
      nn_util::visit_compute(g.dtype(), "embedding_backward", [&](auto tag) {
        using T = decltype(tag);
        const T* src = g.data_ptr<T>();
        T* dst = acc.data_ptr<T>();
        for (size_t i = 0; i < idx.size(); ++i) {
          const int64_t r = idx[i];
          if (r == pad) continue;
          const T scale = by_freq ? T(1) / static_cast<T>(counts[r]) : T(1);
          for (int64_t j = 0; j < d; ++j) dst[r * d + j] += src[i * d + j] * scale;
        }
      });
      nn_util::store(out[0], acc);
    })
    .save_inputs({1})
    .backward([](const BackwardContext& c) {
      // The adjoint of the scatter-add: a lookup, masked and scaled the same way.
      const Tensor& idx = c.input(1);
      Tensor g = embedding(c.grad(), idx);
      if (c.attrs.i(1) >= 0) g = g * (idx != c.attrs.i(1)).unsqueeze(-1);
      if (c.attrs.b(2)) {
        Tensor ones_col = ones(idx.sym_sizes(), c.grad().options()).unsqueeze(-1);
        Tensor counts = embedding_backward(ones_col, idx, c.attrs.i(0), -1, false);
        g = g / embedding(counts, idx);
      }
      return std::vector<Tensor>{g, Tensor()};
    })
    .error_samples([] {
      const Attrs a{int64_t{6}, int64_t{-1}, false};
      auto s = indices_error_samples(samples::make({2, 3}, kFloat32), 6, a);
      s.push_back({{samples::make({3}, kFloat32), tensor({1, 2}, kInt64)},
                   a,
                   "one more dim than indices, got grad of shape [3] and indices of shape [2]",
                   "grad of the indices' rank"});
      return s;
    })
    .samples([](ScalarType dt) {
      std::vector<OpSample> out;
      for (const OpSample& s : embedding_samples(dt)) {
        const Tensor& idx = s.inputs[1];
        SymShape gshape = idx.sym_sizes();
        gshape.push_back(s.inputs[0].sym_size(1));
        Tensor g = samples::make(SymIntArrayRef(gshape).vec(), dt);
        out.push_back({{g, idx},
                       {s.inputs[0].sym_size(0).guard_int(), s.attrs.i(0), s.attrs.b(1)},
                       s.desc,
                       true});
      }
      return out;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const std::vector<double> g = nn_util::to_doubles(in[0]);
      const std::vector<int64_t> idx = nn_util::to_ints(in[1]);
      const int64_t rows = a.i(0), d = in[0].sym_size(-1).guard_int();
      std::vector<double> out(rows * d, 0.0);
      for (size_t i = 0; i < idx.size(); ++i) {
        if (idx[i] == a.i(1)) continue;
        int64_t count = 0;
        for (int64_t k : idx) count += k == idx[i];
        for (int64_t j = 0; j < d; ++j)
          out[idx[i] * d + j] += g[i * d + j] / (a.b(2) ? static_cast<double>(count) : 1.0);
      }
      return std::vector<Tensor>{nn_util::from_doubles(out, {rows, d})};
    })
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:embedding_backward");

KILN_REGISTER_OP(embedding_renorm_)
    .schema(
        "embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> "
        "Tensor(a!)")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      check_indices("embedding_renorm_", in[1]);
      KILN_CHECK(in[0].dim() == 2,
                 "embedding_renorm_: 'weight' must be 2-D, got a tensor of shape ",
                 in[0].sym_sizes());
      TensorSpec s = meta::spec(in[0].sym_sizes(), in[0].dtype(), in[0].device());
      s.inplace_of = 0;
      return std::vector<TensorSpec>{s};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
      const Tensor& w = in[0];
      const int64_t rows = w.sym_size(0).guard_int();
      std::vector<int64_t> idx = checked_indices("embedding_renorm_", in[1], rows);
      std::sort(idx.begin(), idx.end());
      idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
      const double max_norm = a.f(0), p = a.f(1);
      for (int64_t r : idx) {
        Tensor row = w.select(0, r);
        const double norm = row.norm(p).item<double>();
        // PyTorch's constant: rows end slightly inside the ball.
        if (norm > max_norm) row.mul_(max_norm / (norm + 1e-7));
      }
    })
    .inplace()
    .error_samples([] {
      const Attrs a{1.0, 2.0};
      auto s = indices_error_samples(samples::make({6, 3}, kFloat32), 6, a);
      s.push_back({{samples::make({6}, kFloat32), tensor({1}, kInt64)},
                   a,
                   "'weight' must be 2-D, got a tensor of shape [6]",
                   "weight of rank 1"});
      return s;
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({5, 3}, dt), tensor(std::vector<int64_t>{0, 2, 2, 4})},
           {1.0, 2.0},
           "max_norm 1, p 2",
           false},
          {{samples::make({4, 2}, dt), tensor(std::vector<int64_t>{1, 3})},
           {0.5, 1.0},
           "p 1",
           false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      std::vector<double> w = nn_util::to_doubles(in[0]);
      const std::vector<int64_t> idx = nn_util::to_ints(in[1]);
      const int64_t d = in[0].sym_size(1).guard_int();
      std::vector<bool> done(in[0].sym_size(0).guard_int(), false);
      for (int64_t r : idx) {
        if (done[r]) continue;
        done[r] = true;
        double norm = 0;
        for (int64_t j = 0; j < d; ++j) norm += std::pow(std::abs(w[r * d + j]), a.f(1));
        norm = std::pow(norm, 1.0 / a.f(1));
        if (norm > a.f(0))
          for (int64_t j = 0; j < d; ++j) w[r * d + j] *= a.f(0) / (norm + 1e-7);
      }
      return std::vector<Tensor>{nn_util::from_doubles(w, nn_util::concrete_sizes(in[0]))};
    })
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:embedding_renorm_");

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                 bool scale_grad_by_freq, bool sparse) {
  static const OpDef& op = get_op("embedding");
  return call_op1(op, {weight, indices}, {padding_idx, scale_grad_by_freq, sparse});
}

Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm,
                          double norm_type) {
  static const OpDef& op = get_op("embedding_renorm_");
  NoGradGuard no_grad;
  call_op(op, {weight, indices}, {max_norm, norm_type});
  return weight;
}

}  // namespace kiln
