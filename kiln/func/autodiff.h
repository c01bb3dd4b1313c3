#pragma once
// Reverse and forward mode over a function of a list of tensors: what grad, vjp, jvp, jacrev,
// jacfwd and hessian (func.h) call once they have flattened the arguments. Both run on the
// autograd graph: vjp records f and differentiates it; jvp is the vjp of the vjp (the pullback
// is linear in its cotangent u, so the vjp of u -> J^T u with tangent v is J v).
#include <functional>
#include <vector>

#include "kiln/func/vmap_flat.h"

namespace kiln::func::detail {

struct VjpResult {
  std::vector<Tensor> outputs;
  // Cotangents (one per output) to gradients (one per primal; zeros where none flowed).
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> pullback;
};

// `what` names the transform in errors ("grad", "vjp", "jacrev"). With keep_graph the
// gradients the pullback returns can themselves be differentiated (jvp and nesting need it;
// it is on anyway inside another transform, or when a primal requires grad).
VjpResult vjp_flat(const char* what, const FlatFn& f, const std::vector<Tensor>& primals,
                   bool keep_graph = false);

struct JvpResult {
  std::vector<Tensor> outputs;
  std::vector<Tensor> tangents;  // d(outputs) along the primals' tangents
};
JvpResult jvp_flat(const char* what, const FlatFn& f, const std::vector<Tensor>& primals,
                   const std::vector<Tensor>& tangents);

// The Jacobians (each of sizes out.sizes + primal.sizes) of a function of one tensor result: by
// reverse mode (the pullback vmapped over the result's basis) or forward mode (jvp vmapped over
// each primal's basis).
std::vector<Tensor> jacrev_flat(const FlatFn& f, const std::vector<Tensor>& primals);
std::vector<Tensor> jacfwd_flat(const FlatFn& f, const std::vector<Tensor>& primals);

// grad's checks on f's result: one element, floating point.
void check_scalar_output(const char* what, const Tensor& out);

}  // namespace kiln::func::detail
