#include "kiln/ops/inplace.h"

#include <map>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

// PyTorch's canCast: an in-place result may not go from floating to integral or from a
// number to bool; every other conversion (float64 -> float16, int64 -> int32, ...) is allowed.
bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

// An expanded tensor: more than one of its elements is stored in one place.
bool has_internal_overlap(const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    auto size = self.sym_sizes()[d].maybe_int();
    auto stride = self.sym_strides()[d].maybe_int();
    if (size && stride && *size > 1 && *stride == 0) return true;
  }
  return false;
}

// Whether another input reads self's memory: at all, or (same_layout_ok) through another layout.
bool aliased(const std::vector<Tensor>& in, bool same_layout_ok) {
  const TensorImpl& self = *in[0].impl();
  for (size_t k = 1; k < in.size(); ++k) {
    if (!in[k].defined()) continue;
    const TensorImpl& o = *in[k].impl();
    if (o.storage() != self.storage()) continue;
    const bool same_layout = o.sym_sizes() == self.sym_sizes() &&
                             o.sym_strides() == self.sym_strides() &&
                             o.sym_storage_offset() == self.sym_storage_offset();
    if (!(same_layout_ok && same_layout)) return true;
  }
  return false;
}

// "add(Tensor self, ...) -> Tensor" becomes "add_(Tensor(a!) self, ...) -> Tensor(a!)".
std::string inplace_schema(std::string s, const std::string& name) {
  auto replace = [&s](const std::string& from, const std::string& to) {
    size_t at = s.find(from);
    if (at != std::string::npos) s.replace(at, from.size(), to);
  };
  replace(name + "(", name + "_(");
  replace("Tensor self", "Tensor(a!) self");
  replace("-> Tensor", "-> Tensor(a!)");
  return s;
}

// Runs f (the out-of-place entry's meta function or kernel); an argument error it raises in
// the entry's name ("add: ...") is raised in the in-place entry's name ("add_: ...").
template <class F>
auto as_inplace(const OpDef& base, const std::string& name, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    const std::string what = e.what(), prefix = base.name + ":";
    if (typeid(e) != typeid(Error) || what.rfind(prefix, 0) != 0) throw;
    throw Error(name + what.substr(base.name.size()));
  }
}

MetaFn inplace_meta(const OpDef* base, const std::string* name) {
  return [base, name](const std::vector<Tensor>& in, const Attrs& attrs) {
    const Tensor& self = in.at(0);
    KILN_CHECK(!has_internal_overlap(self), *name,
               ": unsupported operation: more than one element of the written-to tensor refers "
               "to a single memory location (size ",
               self.sym_sizes(), ", stride ", self.sym_strides(),
               "). Please clone() the tensor before performing the operation.");
    const TensorSpec result =
        as_inplace(*base, *name, [&] { return base->meta_(in, attrs).at(0); });
    KILN_CHECK(SymIntArrayRef(result.sizes) == self.sym_sizes(), *name, ": output with shape ",
               self.sym_sizes(), " doesn't match the broadcast shape ",
               SymIntArrayRef(result.sizes));
    KILN_CHECK(can_cast(result.dtype, self.dtype()), *name, ": result type ", result.dtype,
               " can't be cast to the desired output type ", self.dtype());
    TensorSpec s = meta::spec(self.sym_sizes(), self.dtype(), self.device());
    s.inplace_of = 0;
    return std::vector<TensorSpec>{s};
  };
}

void run_inplace(const OpDef& base, const KernelFn& kernel, InplaceKind kind,
                 const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
  const Tensor& self = in[0];
  const ScalarType result = base.meta_(in, attrs).at(0).dtype;
  const bool direct = kind == InplaceKind::Elementwise
                          ? !aliased(in, /*same_layout_ok=*/true)
                          : self.is_contiguous() && !aliased(in, /*same_layout_ok=*/false);
  if (result == self.dtype() && direct) {
    kernel(in, out, attrs);  // out[0] is self
    return;
  }
  std::vector<Tensor> tmp{empty(self.sym_sizes(), TensorOptions(result).device(self.device()))};
  kernel(in, tmp, attrs);
  Tensor dst = self;
  dst.copy_(tmp[0]);
}

KernelFn inplace_kernel(const OpDef* base, const std::string* name, KernelFn kernel,
                        InplaceKind kind) {
  return [base, name, kernel, kind](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                    const Attrs& attrs) {
    as_inplace(*base, *name, [&] { run_inplace(*base, kernel, kind, in, out, attrs); });
  };
}

SampleFn inplace_samples(const OpDef* base) {
  return [base](ScalarType dt) {
    std::vector<OpSample> fitting;
    for (OpSample& s : base->samples_(dt)) {
      const Tensor& self = s.inputs.at(0);
      if (!self.defined() || self.impl()->is_wrapped_number() || has_internal_overlap(self))
        continue;
      const TensorSpec spec = base->meta_(s.inputs, s.attrs).at(0);
      if (SymIntArrayRef(spec.sizes) == self.sym_sizes() && can_cast(spec.dtype, self.dtype()))
        fitting.push_back(std::move(s));
    }
    return fitting;
  };
}

// The out-of-place entry's error samples (raised in the in-place entry's name; those its kernel
// raises only where the result fits self), plus one sample per check of inplace_meta: self with
// elements stored twice, and the entry's samples whose result does not fit self in shape or
// dtype.
ErrorSampleFn inplace_error_samples(const OpDef* base) {
  return [base] {
    std::vector<OpErrorSample> out;
    auto fits = [&](const std::vector<Tensor>& in, const Attrs& attrs) {
      const TensorSpec spec = base->meta_(in, attrs).at(0);
      return SymIntArrayRef(spec.sizes) == in[0].sym_sizes() && can_cast(spec.dtype, in[0].dtype());
    };
    if (base->error_samples_) {
      for (OpErrorSample& s : base->error_samples_())
        if (s.in_meta || fits(s.inputs, s.attrs)) out.push_back(std::move(s));
    }
    bool overlap = false, shape = false, cast = false;
    const std::vector<ScalarType> dtypes =
        base->dtypes_.empty() ? std::vector<ScalarType>{kFloat64} : base->dtypes_;
    for (ScalarType dt : dtypes) {
      for (OpSample& s : base->samples_(dt)) {
        const Tensor self = s.inputs.at(0);
        if (!self.defined() || self.impl()->is_wrapped_number() || has_internal_overlap(self))
          continue;
        const TensorSpec spec = base->meta_(s.inputs, s.attrs).at(0);
        if (!(SymIntArrayRef(spec.sizes) == self.sym_sizes())) {
          if (!std::exchange(shape, true))
            out.push_back(
                {s.inputs, s.attrs,
                 detail::str_cat("output with shape ", self.sym_sizes(),
                                 " doesn't match the broadcast shape ", SymIntArrayRef(spec.sizes)),
                 "result larger than self: " + s.desc});
        } else if (!can_cast(spec.dtype, self.dtype())) {
          if (!std::exchange(cast, true))
            out.push_back(
                {s.inputs, s.attrs,
                 detail::str_cat("result type ", spec.dtype,
                                 " can't be cast to the desired output type ", self.dtype()),
                 "result of another dtype: " + s.desc});
        } else if (self.dim() > 0 && self.sym_size(0) > 1 && !std::exchange(overlap, true)) {
          OpErrorSample o{s.inputs, s.attrs, "", "self with elements stored twice: " + s.desc};
          o.inputs[0] = self.select(0, 0).unsqueeze(0).expand(self.sym_sizes());
          o.expected = detail::str_cat("(size ", o.inputs[0].sym_sizes(), ", stride ",
                                       o.inputs[0].sym_strides(), ")");
          out.push_back(std::move(o));
        }
      }
    }
    return out;
  };
}

// The in-place kind of each op that has a derived in-place variant, by the base op's name.
std::map<std::string, InplaceKind, std::less<>>& derived_kinds() {
  static std::map<std::string, InplaceKind, std::less<>> kinds;
  return kinds;
}

void derive_inplace(const OpDef& base, InplaceKind kind) {
  OpDef& d = register_op(base.name + "_");
  const std::string* name = &d.name;  // OpDefs live as long as the registry
  d.schema(inplace_schema(base.schema_, base.name))
      .meta(inplace_meta(&base, name))
      .backward(base.backward_)
      .samples(inplace_samples(&base))
      .error_samples(inplace_error_samples(&base))
      .reference(base.reference_)
      .dtypes(base.dtypes_)
      .lowering("inplace:" + base.name)
      .inplace();
  for (int dev = 0; dev < kNumDeviceTypes; ++dev)
    if (base.kernels[dev]) d.kernels[dev] = inplace_kernel(&base, name, base.kernels[dev], kind);
  derived_kinds().emplace(base.name, kind);
  d.saved_inputs = base.saved_inputs;
  d.saved_outputs = base.saved_outputs;
  d.atol = base.atol;
  d.rtol = base.rtol;
}

}  // namespace

void set_inplace_kernel(const OpDef& base, DeviceType device) {
  auto it = derived_kinds().find(base.name);
  if (it == derived_kinds().end()) return;
  OpDef& d = const_cast<OpDef&>(get_op(base.name + "_"));
  const KernelFn& kernel = base.kernels[static_cast<int>(device)];
  d.kernels[static_cast<int>(device)] = inplace_kernel(&base, &d.name, kernel, it->second);
}

bool register_inplace(std::initializer_list<const char*> names, InplaceKind kind) {
  for (const char* n : names) derive_inplace(get_op(n), kind);
  return true;
}

}  // namespace kiln
