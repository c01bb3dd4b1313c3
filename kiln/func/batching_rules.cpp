#include "kiln/func/batching_rules.h"

#include <algorithm>
#include <unordered_map>

#include "kiln/core/dispatch.h"
#include "kiln/core/error.h"
#include "kiln/func/schema_dims.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/pointwise.h"
#include "kiln/ops/shape.h"

namespace kiln::func::detail {

int64_t logical_rank(const Tensor& value, std::optional<int64_t> bdim) {
  return value.dim() - (bdim ? 1 : 0);
}

namespace {

bool is_pointwise(const OpDef& op) {
  using Kind = lowering::Lowering::Kind;
  if (op.lowering_.kind == Kind::Pointwise) return !op.is_random;
  if (!op.is_inplace || op.name.empty() || op.name.back() != '_') return false;
  const OpDef* functional = find_op(std::string_view(op.name).substr(0, op.name.size() - 1));
  return functional && functional->lowering_.kind == Kind::Pointwise && !functional->is_random;
}

// Batched inputs go to [B, 1..., logical sizes] so that they broadcast against each other and
// against the unbatched ones (which broadcast from the right, as ever).
BatchResult pointwise_rule(const OpDef& op, const BatchCall& c) {
  int64_t rank = 0;
  for (size_t i = 0; i < c.values.size(); ++i)
    if (c.values[i].defined()) rank = std::max(rank, logical_rank(c.values[i], c.bdims[i]));
  std::vector<Tensor> args(c.values.size());
  for (size_t i = 0; i < c.values.size(); ++i) {
    args[i] = c.values[i];
    if (!c.bdims[i]) continue;
    Tensor t = c.batch_in_front(i);
    for (int64_t pad = logical_rank(t, 0); pad < rank; ++pad) t = t.unsqueeze(1);
    args[i] = t;
  }
  std::vector<Tensor> outs = call_op(op, std::move(args), c.attrs);
  return {outs, std::vector<std::optional<int64_t>>(outs.size(), int64_t{0})};
}

// mm, bmm, addmm and baddbmm through matmul, which takes the batch as a leading dim
// (broadcasting an unbatched operand over it).
std::optional<BatchResult> product_rule(const OpDef& op, const BatchCall& c) {
  auto front = [&](size_t i) { return c.batch_in_front(i); };
  const std::string& n = op.name;
  Tensor out;
  if (n == "mm" || n == "bmm") {
    out = matmul(front(0), front(1));
  } else if (n == "addmm" || n == "baddbmm") {
    Tensor product = matmul(front(1), front(2));
    Tensor self = front(0);
    const int64_t rank = n == "addmm" ? 2 : 3;
    if (c.bdims[0])
      for (int64_t pad = logical_rank(self, 0); pad < rank; ++pad) self = self.unsqueeze(1);
    // beta 0 ignores self, NaNs included (PyTorch's addmm).
    const Scalar beta = c.attrs.scalar(0), alpha = c.attrs.scalar(1);
    out = beta.to<double>() == 0 ? product.mul(alpha).add(zeros_like(self))
                                 : self.mul(beta).add(product, alpha);
  } else {
    return std::nullopt;
  }
  return BatchResult{{out}, {int64_t{0}}};
}

bool is_product(const OpDef& op) {
  static const char* const kNames[] = {"mm", "bmm", "addmm", "baddbmm"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](const char* n) { return op.name == n; });
}

}  // namespace

namespace {
BatchRuleKind find_rule_kind(const OpDef& op) {
  if (op.batch_rule_ || is_product(op)) return BatchRuleKind::Own;
  if (is_pointwise(op)) return BatchRuleKind::Pointwise;
  if (dims_rule_applies(op)) return BatchRuleKind::Dims;
  return BatchRuleKind::Loop;
}
}  // namespace

BatchRuleKind batch_rule_kind(const OpDef& op) {
  // Asked on every op call under vmap: each entry's answer is worked out once per thread.
  thread_local std::unordered_map<const OpDef*, BatchRuleKind> kinds;
  auto it = kinds.find(&op);
  if (it == kinds.end()) it = kinds.emplace(&op, find_rule_kind(op)).first;
  return it->second;
}

const char* to_string(BatchRuleKind kind) {
  switch (kind) {
    case BatchRuleKind::Own:
      return "rule";
    case BatchRuleKind::Pointwise:
      return "pointwise";
    case BatchRuleKind::Dims:
      return "dims";
    case BatchRuleKind::Loop:
      return "loop";
  }
  return "?";
}

std::optional<BatchResult> apply_batch_rule(const OpDef& op, const BatchCall& call) {
  switch (batch_rule_kind(op)) {
    case BatchRuleKind::Own:
      if (op.batch_rule_) return op.batch_rule_(call);
      return product_rule(op, call);
    case BatchRuleKind::Pointwise:
      return pointwise_rule(op, call);
    case BatchRuleKind::Dims:
      return dims_rule(op, call);
    case BatchRuleKind::Loop:
      return std::nullopt;
  }
  return std::nullopt;
}

BatchResult batch_loop(const OpDef& op, const BatchCall& c,
                       const std::function<void()>& before_each) {
  KILN_CHECK(!op.dynamic_output, "vmap: ", op.name,
             " returns data-dependent sizes, which differ between batch elements; vmap cannot "
             "batch it");
  KILN_CHECK(!(op.is_inplace && op.is_view), "vmap: ", op.name,
             " changes a tensor's sizes in place, which vmap cannot do to one batch element; "
             "use the out-of-place op");
  std::vector<std::vector<Tensor>> per_element;
  per_element.reserve(static_cast<size_t>(c.batch_size));
  for (int64_t b = 0; b < c.batch_size; ++b) {
    std::vector<Tensor> args(c.values.size());
    for (size_t i = 0; i < args.size(); ++i)
      args[i] = c.bdims[i] ? c.values[i].select(*c.bdims[i], b) : c.values[i];
    if (before_each) before_each();
    per_element.push_back(call_op(op, std::move(args), c.attrs));
  }
  BatchResult r;
  const size_t num_outputs = per_element.empty() ? 0 : per_element[0].size();
  for (size_t o = 0; o < num_outputs; ++o) {
    if (op.is_inplace && o == 0) {  // the slices were written in place
      r.values.push_back(c.values[0]);
      r.bdims.push_back(c.bdims[0]);
      continue;
    }
    std::vector<Tensor> parts;
    for (auto& outs : per_element) parts.push_back(outs[o]);
    if (!parts[0].defined()) {
      r.values.emplace_back();
      r.bdims.emplace_back();
      continue;
    }
    r.values.push_back(stack(parts, 0));
    r.bdims.push_back(int64_t{0});
  }
  return r;
}

}  // namespace kiln::func::detail
