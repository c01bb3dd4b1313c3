#include "kiln/func/autodiff.h"

#include "kiln/autograd/engine.h"
#include "kiln/autograd/first_order_watch.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/range.h"

namespace kiln::func::detail {
namespace {

// How many grad/vjp/jvp calls are running on this thread: inside one, a nested transform keeps
// its graph so that the outer one can differentiate what it computed.
thread_local int t_depth = 0;
struct DepthGuard {
  DepthGuard() { ++t_depth; }
  ~DepthGuard() { --t_depth; }
};

// The primal f sees: a new leaf that requires grad (sharing p's data, and p's batch under vmap),
// or, where p is already tracked by a transform outside, a view of p, so that what f computes
// stays connected to p for that transform.
Tensor differentiable_primal(const char* what, const Tensor& p, size_t i) {
  KILN_CHECK(p.defined(), what, ": primal ", i, " is an undefined tensor");
  KILN_CHECK(is_floating_point(p.dtype()), what, ": primal ", i, " has dtype ", p.dtype(),
             "; only floating point tensors can be differentiated");
  if (p.requires_grad()) return p.view(p.sym_sizes());
  const TensorImpl& src = *p.impl();
  auto impl = std::make_shared<TensorImpl>(src.storage(), src.dtype(), src.sym_sizes(),
                                           src.sym_strides(), src.sym_storage_offset());
  impl->set_extension(src.extension());
  Tensor leaf(std::move(impl));
  leaf.requires_grad_(true);
  return leaf;
}

}  // namespace

void check_scalar_output(const char* what, const Tensor& out) {
  KILN_CHECK(out.defined() && out.numel() == 1, what,
             ": the function must return a tensor with one element, got sizes ",
             out.defined() ? ::kiln::detail::str_cat(out.sym_sizes()) : std::string("(undefined)"),
             "; use vjp or jacrev for other outputs");
  KILN_CHECK(is_floating_point(out.dtype()), what,
             ": the function must return a floating point tensor, got ", out.dtype());
}

VjpResult vjp_flat(const char* what, const FlatFn& f, const std::vector<Tensor>& primals,
                   bool keep_graph) {
  const bool outer_tracks =
      t_depth > 0 ||
      (GradMode::is_enabled() && std::any_of(primals.begin(), primals.end(), [](const Tensor& p) {
         return p.defined() && p.requires_grad();
       }));
  DepthGuard depth;
  AutoGradMode enable(true);
  std::vector<Tensor> inputs(primals.size());
  for (size_t i = 0; i < primals.size(); ++i)
    inputs[i] = differentiable_primal(what, primals[i], i);
  std::vector<Tensor> outputs = f(inputs);
  const bool create_graph = keep_graph || outer_tracks;
  VjpResult r;
  r.pullback = [what = std::string(what), inputs, outputs,
                create_graph](const std::vector<Tensor>& cotangents) {
    KILN_CHECK(cotangents.size() == outputs.size(), what, ": ", cotangents.size(),
               " cotangents given for ", outputs.size(), " outputs");
    std::vector<Tensor> roots, seeds;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& o = outputs[i];
      const Tensor& c = cotangents[i];
      KILN_CHECK(c.defined() && c.sym_sizes() == o.sym_sizes(), what, ": cotangent ", i,
                 " has sizes ",
                 c.defined() ? ::kiln::detail::str_cat(c.sym_sizes()) : "(undefined)",
                 " but output ", i, " has sizes ", o.sym_sizes());
      if (!o.requires_grad()) continue;  // it does not depend on the primals
      roots.push_back(o);
      seeds.push_back(c);
    }
    std::vector<Tensor> grads(inputs.size());
    if (!roots.empty())
      grads = autograd::grad(roots, inputs, seeds, /*retain_graph=*/true, create_graph,
                             /*allow_unused=*/true);
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined()) grads[i] = zeros_like(inputs[i]);
    return grads;
  };
  r.outputs = std::move(outputs);
  if (!create_graph)
    for (Tensor& o : r.outputs) o = o.detach();
  return r;
}

JvpResult jvp_flat(const char* what, const FlatFn& f, const std::vector<Tensor>& primals,
                   const std::vector<Tensor>& tangents) {
  KILN_CHECK(tangents.size() == primals.size(), what, ": ", tangents.size(), " tangents given for ",
             primals.size(), " primals");
  for (size_t i = 0; i < primals.size(); ++i)
    KILN_CHECK(tangents[i].defined() && tangents[i].sym_sizes() == primals[i].sym_sizes() &&
                   tangents[i].dtype() == primals[i].dtype(),
               what, ": tangent ", i, " must have its primal's sizes ", primals[i].sym_sizes(),
               " and dtype ", primals[i].dtype(), ", got ",
               tangents[i].defined()
                   ? ::kiln::detail::str_cat(tangents[i].sym_sizes(), " ", tangents[i].dtype())
                   : std::string("an undefined tensor"));
  const bool outer_tracks = t_depth > 0;
  DepthGuard depth;
  AutoGradMode enable(true);
  VjpResult v = vjp_flat(what, f, primals, /*keep_graph=*/true);
  // The pullback at a cotangent u that requires grad is linear in u; its vjp along the tangents
  // is the jvp.
  std::vector<Tensor> us(v.outputs.size());
  for (size_t i = 0; i < us.size(); ++i) {
    us[i] = zeros_like(v.outputs[i]);
    if (v.outputs[i].requires_grad()) us[i].requires_grad_(true);
  }
  std::vector<Tensor> pulled;
  {
    autograd::FirstOrderWatch watch;
    pulled = v.pullback(us);
    if (!watch.ops().empty()) {
      std::string names;
      for (const auto& n : watch.ops()) names += (names.empty() ? "" : ", ") + n;
      KILN_FAIL(what, ": forward mode differentiates each op's backward, and the backward of ",
                names,
                " is not differentiable (a fused kernel); compute this derivative with "
                "reverse mode (vjp, jacrev) instead");
    }
  }
  std::vector<Tensor> roots, seeds;
  for (size_t i = 0; i < pulled.size(); ++i) {
    if (!pulled[i].requires_grad()) continue;
    roots.push_back(pulled[i]);
    seeds.push_back(tangents[i]);
  }
  std::vector<Tensor> wrt;
  for (const Tensor& u : us)
    if (u.requires_grad()) wrt.push_back(u);
  std::vector<Tensor> d;
  if (!roots.empty() && !wrt.empty())
    d = autograd::grad(roots, wrt, seeds, /*retain_graph=*/true, /*create_graph=*/outer_tracks,
                       /*allow_unused=*/true);
  JvpResult r;
  size_t k = 0;
  for (size_t i = 0; i < us.size(); ++i) {
    Tensor t = us[i].requires_grad() && k < d.size() ? d[k++] : Tensor();
    r.tangents.push_back(t.defined() ? t : zeros_like(v.outputs[i]));
  }
  r.outputs = std::move(v.outputs);
  if (!outer_tracks)
    for (Tensor& o : r.outputs) o = o.detach();
  return r;
}

namespace {
// The rows of an identity matrix of n = numel(sizes) rows, each shaped as `sizes`.
Tensor basis(const SymShape& sizes, const Tensor& like) {
  const int64_t n = numel_of(sizes).guard_int();
  SymShape shape = sizes;
  shape.insert(shape.begin(), SymInt(n));
  return eye(n, TensorOptions(like.dtype()).device(like.device())).view(shape);
}
SymShape concat(const SymShape& a, const SymShape& b) {
  SymShape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}
}  // namespace

std::vector<Tensor> jacrev_flat(const FlatFn& f, const std::vector<Tensor>& primals) {
  VjpResult r = vjp_flat("jacrev", f, primals);
  KILN_CHECK(r.outputs.size() == 1, "jacrev: the function must return one tensor");
  const Tensor& out = r.outputs[0];
  KILN_CHECK(is_floating_point(out.dtype()),
             "jacrev: the function must return a floating point "
             "tensor, got ",
             out.dtype());
  std::vector<Tensor> rows =
      vmap_flat([&](const std::vector<Tensor>& v) { return r.pullback(v); },
                {basis(out.sym_sizes(), out)}, {0}, {0}, Randomness::Error, std::nullopt);
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i] = rows[i].reshape(concat(out.sym_sizes(), primals[i].sym_sizes()));
  return rows;
}

std::vector<Tensor> jacfwd_flat(const FlatFn& f, const std::vector<Tensor>& primals) {
  std::vector<Tensor> jacobians;
  for (size_t i = 0; i < primals.size(); ++i) {
    KILN_CHECK(primals[i].defined(), "jacfwd: primal ", i, " is an undefined tensor");
    auto one_direction = [&](const std::vector<Tensor>& v) {
      std::vector<Tensor> tangents(primals.size());
      for (size_t j = 0; j < primals.size(); ++j)
        tangents[j] = j == i ? v[0] : zeros_like(primals[j]);
      JvpResult r = jvp_flat("jacfwd", f, primals, tangents);
      KILN_CHECK(r.tangents.size() == 1, "jacfwd: the function must return one tensor");
      return r.tangents;
    };
    Tensor columns = vmap_flat(one_direction, {basis(primals[i].sym_sizes(), primals[i])}, {0},
                               {-1}, Randomness::Error, std::nullopt)[0];
    SymShape out_sizes = columns.sym_sizes().sym_vec();
    out_sizes.pop_back();
    jacobians.push_back(columns.reshape(concat(out_sizes, primals[i].sym_sizes())));
  }
  return jacobians;
}

}  // namespace kiln::func::detail
