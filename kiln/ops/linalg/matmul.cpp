// matmul, mv and linear: compositions of the product entries (dot, mm, bmm, addmm) with views, so
// their gradients, meta shapes and traces come from those entries.
#include "kiln/ops/linalg.h"
#include "kiln/ops/linalg/util.h"
#include "kiln/ops/ops.h"

namespace kiln {
namespace {

// The batch dims of a and b broadcast together, or the error naming both full shapes.
SymShape broadcast_batch(const Tensor& a, const Tensor& b, const SymShape& ba, const SymShape& bb) {
  const size_t nd = std::max(ba.size(), bb.size());
  SymShape out(nd, SymInt(1));
  for (size_t d = 0; d < nd; ++d) {
    const SymInt x = d + ba.size() >= nd ? ba[d + ba.size() - nd] : SymInt(1);
    const SymInt y = d + bb.size() >= nd ? bb[d + bb.size() - nd] : SymInt(1);
    KILN_CHECK(x == 1 || y == 1 || x == y, "matmul: cannot broadcast the batch dims of ",
               a.sym_sizes(), " and ", b.sym_sizes(), ": ", x, " != ", y, " at batch dim ", d);
    out[d] = x == 1 ? y : x;
  }
  return out;
}

SymShape leading(const Tensor& t, int64_t drop) {
  SymShape s = t.sym_sizes();
  s.resize(s.size() - static_cast<size_t>(drop));
  return s;
}

}  // namespace

Tensor mv(const Tensor& self, const Tensor& vec) {
  KILN_CHECK(self.dim() == 2 && vec.dim() == 1, "mv: expected a matrix and a vector, but got ",
             self.dim(), "-D and ", vec.dim(), "-D tensors of shapes ", self.sym_sizes(), " and ",
             vec.sym_sizes());
  linalg::check_inner_dims("mv", self, self.sym_size(1), vec, vec.sym_size(0));
  return mm(self, vec.reshape({vec.sym_size(0), 1})).view({self.sym_size(0)});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  KILN_CHECK(da >= 1 && db >= 1,
             "matmul: both arguments to matmul need to be at least 1D, but they are ", da, "D and ",
             db, "D (shapes ", a.sym_sizes(), " and ", b.sym_sizes(), ")");
  const SymInt k = a.sym_size(-1);
  linalg::check_inner_dims("matmul", a, k, b, b.sym_size(db >= 2 ? -2 : -1));
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 1 && db == 2) return mm(a.reshape({1, k}), b).view({b.sym_size(1)});
  if (da == 2 && db == 2) return mm(a, b);
  if (db <= 2) {
    // Fold a's batch dims into its rows: one mm instead of a batch of small products.
    SymShape out_shape = leading(a, 1);
    Tensor b2 = db == 1 ? b.reshape({k, 1}) : b;
    if (db == 2) out_shape.push_back(b.sym_size(1));
    // The row count is named, not -1: with k == 0 a -1 cannot be inferred.
    return mm(a.reshape({numel_of(leading(a, 1)), k}), b2).view(out_shape);
  }
  // Batched: a vector operand becomes a row (a) or a column (b) that is dropped at the end.
  Tensor a2 = da == 1 ? a.reshape({1, k}) : a;
  Tensor b2 = db == 1 ? b.reshape({k, 1}) : b;
  const SymInt n = a2.sym_size(-2), m = b2.sym_size(-1);
  SymShape batch = broadcast_batch(a, b, leading(a2, 2), leading(b2, 2));
  SymShape a_full = batch, b_full = batch;
  a_full.insert(a_full.end(), {n, k});
  b_full.insert(b_full.end(), {k, m});
  const SymInt batch_numel = numel_of(batch);
  // Broadcast batch dims become 0-stride views: bmm reads the repeated matrix without copies.
  if (!(a2.sym_sizes() == SymIntArrayRef(a_full))) a2 = a2.expand(a_full);
  if (!(b2.sym_sizes() == SymIntArrayRef(b_full))) b2 = b2.expand(b_full);
  Tensor out = bmm(a2.reshape({batch_numel, n, k}), b2.reshape({batch_numel, k, m}));
  SymShape out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(m);
  return out.view(out_shape);
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  KILN_CHECK(weight.dim() == 1 || weight.dim() == 2,
             "linear: weight must be 1-D or 2-D, but got a tensor of shape ", weight.sym_sizes());
  KILN_CHECK(input.dim() >= 1, "linear: input must have at least one dimension, got shape ",
             input.sym_sizes());
  const SymInt in_features = weight.sym_size(-1);
  KILN_CHECK(input.sym_size(-1) == in_features, "linear: input of shape ", input.sym_sizes(),
             " and weight of shape ", weight.sym_sizes(), " do not match: input's last dim ",
             input.sym_size(-1), " != in_features ", in_features);
  if (bias.defined() && weight.dim() == 2 && input.dim() >= 2) {
    // addmm fuses the bias into the product (BLAS beta = 1).
    if (input.dim() == 2) return addmm(bias, input, weight.t());
    SymShape out_shape = leading(input, 1);
    out_shape.push_back(weight.sym_size(0));
    return addmm(bias, input.reshape({-1, in_features}), weight.t()).view(out_shape);
  }
  Tensor out = matmul(input, weight.t());
  return bias.defined() ? out + bias : out;
}

Tensor Tensor::matmul(const Tensor& other) const { return kiln::matmul(*this, other); }

}  // namespace kiln
