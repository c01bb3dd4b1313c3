// Functionalization: the tracer records in-place changes to tensors the function computed as
// out-of-place ops, so that graphs of ordinary functions hold no mutation and fuse.
//
// Each storage an op made (its tensor dense from offset 0: the base) is followed. An in-place op
// on the base records its out-of-place form (add for add_), whose result is the base's new value.
// One on a view records the out-of-place form on the view's value, then as_strided_scatter of
// that into the base's value at the view's geometry; every view of the storage is then behind,
// and is recomputed from the new base (as_strided at its geometry) before it is next read. An op
// with no out-of-place form runs in place on a clone of what it changes. Arguments are followed
// the same way, and a changed argument gets its final content back with one copy_ at the end of
// the graph, so that callers see the change. So are captured tensors (a module's buffers, a
// cache in a closure) that span their storage; another captured tensor on that storage is one of
// its views. One that requires grad is not followed: later reads must see the leaf itself, which
// they differentiate, so its changes stay in-place ops, replayed in order.
#include <algorithm>

#include "kiln/compile/tracer.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

bool same_layout(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.device() != b.device() || a.dim() != b.dim()) return false;
  const SymShape &as = a.impl()->sym_sizes(), &bs = b.impl()->sym_sizes();
  const SymShape &ast = a.impl()->sym_strides(), &bst = b.impl()->sym_strides();
  for (size_t d = 0; d < as.size(); ++d) {
    if (!as[d].same_as(bs[d])) return false;
    if (as[d].maybe_int() != 1 && !ast[d].same_as(bst[d])) return false;
  }
  return true;
}

// Dense from storage offset 0, so that a view's geometry addresses the base's elements.
bool dense_from_zero(const Tensor& t) {
  const TensorImpl& i = *t.impl();
  return i.sym_storage_offset().maybe_int() == 0 && is_contiguous(i.sym_sizes(), i.sym_strides());
}

const OpDef* out_of_place_form(const OpDef& op) {
  if (!op.name.ends_with('_')) return nullptr;
  const OpDef* f = find_op(std::string_view(op.name).substr(0, op.name.size() - 1));
  if (!f || f->is_inplace || f->is_view || f->is_random || f->dynamic_output) return nullptr;
  return f;
}

Attrs geometry_of(const Tensor& t) {
  return {t.impl()->sym_sizes(), t.impl()->sym_strides(), t.impl()->sym_storage_offset()};
}

}  // namespace

void Tracer::follow_argument(const Tensor& t, int id) {
  if (!dense_from_zero(t)) return;
  const StorageImpl* s = t.impl()->storage().get();
  storages_.emplace(s, Computed{t, 0, false, id});
  inputs_.push_back(s);
}

void Tracer::follow_captured(const Tensor& t, int id) {
  const StorageImpl* s = t.impl()->storage().get();
  if (!s || s->is_meta()) return;
  if (auto it = storages_.find(s); it != storages_.end()) {
    it->second.viewed = true;  // read at the version the graph starts from: 0
    return;
  }
  const size_t spanned = static_cast<size_t>(t.numel()) * element_size(t.dtype());
  if (t.requires_grad() || !dense_from_zero(t) || spanned != s->nbytes()) return;
  storages_.emplace(s, Computed{t, 0, false, id});
  inputs_.push_back(s);
}

// Each argument or captured tensor the function changed functionally is copied its final content
// (in place: the caller's tensor), which a returned argument then is.
void Tracer::write_back_inputs() {
  static const OpDef& copy = get_op("copy_");
  for (const StorageImpl* s : inputs_) {
    Computed& c = storages_.at(s);
    if (c.version == 0) continue;  // unchanged, or changed in place (no out-of-place value)
    Node n;
    n.op = &copy;
    n.inputs = {c.input, ids_.at(c.base.impl())};
    n.grad_enabled = GradMode::is_enabled();
    Value v = graph_.values[c.input];
    v.kind = Value::Kind::NodeOutput;
    v.producer = static_cast<int>(graph_.nodes.size());
    const int id = graph_.add_value(std::move(v));
    n.outputs = {id};
    graph_.nodes.push_back(std::move(n));
    ids_[c.base.impl()] = id;
  }
}

void Tracer::note_storage(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs) {
  for (const Tensor& out : outs) {
    const bool is_input = std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& in) {
      return in.defined() && in.impl() == out.impl();
    });
    if (is_input) continue;  // an in-place op's result, or an op that returned its input
    const StorageImpl* s = out.impl()->storage().get();
    if (auto it = storages_.find(s); it != storages_.end()) {  // a view of a followed storage
      it->second.viewed = true;
      view_versions_[out.impl()] = it->second.version;
      continue;
    }
    const bool shares = std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& in) {
      return in.defined() && in.impl()->storage().get() == s;
    });
    if (!shares && dense_from_zero(out)) storages_.emplace(s, Computed{out, 0, false});
  }
}

void Tracer::refresh(const Tensor& t) {
  if (!t.defined()) return;
  auto it = storages_.find(t.impl()->storage().get());
  if (it == storages_.end() || t.impl() == it->second.base.impl()) return;
  const Computed& c = it->second;
  uint64_t& version = view_versions_[t.impl()];
  if (version >= c.version) return;
  if (t.requires_grad() && !t.impl()->is_traced())
    throw GraphBreak(
        "a captured tensor that requires grad shares memory with a tensor the "
        "function changed");
  if (t.dtype() != c.base.dtype())
    throw GraphBreak("a view of dtype " + std::string(dtype_name(t.dtype())) +
                     " reads a changed tensor of dtype " + std::string(dtype_name(c.base.dtype())));
  static const OpDef& as_strided = get_op("as_strided");
  const std::vector<Tensor> current = record(as_strided, {c.base}, geometry_of(t));
  ids_[t.impl()] = ids_.at(current[0].impl());
  version = c.version;
}

// The value inputs[0] has after in-place op `op`: copy_'s source where it needs no conversion,
// the out-of-place form's result when that has the same dtype and sizes, else op run in place on
// a clone of inputs[0].
Tensor Tracer::record_content(const OpDef& op, const std::vector<Tensor>& inputs,
                              const Attrs& attrs) {
  static const OpDef& copy = get_op("copy_");
  if (&op == &copy && inputs.size() == 2 && inputs[1].defined() &&
      inputs[1].dtype() == inputs[0].dtype() && inputs[1].device() == inputs[0].device() &&
      same_shape(inputs[1].impl()->sym_sizes(), inputs[0].impl()->sym_sizes()))
    return inputs[1];
  if (const OpDef* f = out_of_place_form(op)) {
    std::vector<Tensor> check;
    try {
      check = run_meta(*f, inputs, attrs);
    } catch (const Error&) {  // another schema: the clone below
    }
    if (check.size() == 1 && check[0].dtype() == inputs[0].dtype() &&
        same_shape(check[0].impl()->sym_sizes(), inputs[0].impl()->sym_sizes()))
      return record(*f, inputs, attrs)[0];
  }
  static const OpDef& clone = get_op("clone");
  std::vector<Tensor> on_copy = inputs;
  on_copy[0] = record(clone, {inputs[0]}, {})[0];
  return record(op, on_copy, attrs)[0];
}

std::optional<std::vector<Tensor>> Tracer::functionalize(const OpDef& op,
                                                         const std::vector<Tensor>& inputs,
                                                         const Attrs& attrs) {
  if (inputs.empty() || !inputs[0].defined()) return std::nullopt;
  const Tensor& x = inputs[0];
  auto it = storages_.find(x.impl()->storage().get());
  if (it == storages_.end()) return std::nullopt;
  Computed& c = it->second;
  const bool is_base = x.impl() == c.base.impl();
  // The in-place op's own checks (and its result: x itself).
  env_.set_origin(op.name);
  std::vector<Tensor> outs = run_meta(op, inputs, attrs);
  if (outs.size() != 1 || outs[0].impl() != x.impl()) return std::nullopt;
  if (is_base && !c.viewed) {
    // Nothing else reads the storage: the out-of-place form when it keeps the layout, else the
    // in-place op itself (no reader can tell).
    const OpDef* f = out_of_place_form(op);
    std::vector<Tensor> result;
    try {
      if (f) result = run_meta(*f, inputs, attrs);
    } catch (const Error&) {
    }
    if (result.size() != 1 || !same_layout(result[0], x)) return std::nullopt;
    ids_[x.impl()] = ids_.at(record(*f, inputs, attrs)[0].impl());
    ++c.version;
    return outs;
  }
  if (x.dtype() != c.base.dtype())
    throw GraphBreak(op.name + " changes a view of dtype " + std::string(dtype_name(x.dtype())) +
                     " of a tensor of dtype " + std::string(dtype_name(c.base.dtype())));
  const Tensor changed = record_content(op, inputs, attrs);
  if (is_base) {
    if (!same_layout(changed, x))
      throw GraphBreak(op.name + " changes a viewed tensor into another layout");
    ids_[x.impl()] = ids_.at(changed.impl());
  } else {
    static const OpDef& scatter = get_op("as_strided_scatter");
    const std::vector<Tensor> base = record(scatter, {c.base, changed}, geometry_of(x));
    ids_[c.base.impl()] = ids_.at(base[0].impl());
  }
  ++c.version;  // every view, x too, is now behind
  return outs;
}

}  // namespace kiln::compiler
