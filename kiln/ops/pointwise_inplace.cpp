// In-place pointwise entries (add_, exp_, clamp_, ...), each derived from its out-of-place entry:
// same kernel, backward and reference; a meta function that checks the result fits the tensor
// written to; the out-of-place samples that fit. Autograd sees `.inplace()` and version-checks.
#include "kiln/ops/ops.h"
#include "kiln/ops/pointwise_util.h"

namespace kiln::pointwise {
namespace {

// PyTorch's canCast: an in-place result may not go from floating to integral or from a
// number to bool; every other conversion (float64 -> float16, int64 -> int32, ...) is allowed.
bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

// A tensor whose elements share memory (an expanded tensor) cannot be written element-wise.
void check_no_internal_overlap(const char* op, const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    auto size = self.sizes()[d].maybe_int();
    auto stride = self.strides()[d].maybe_int();
    KILN_CHECK(!(size && stride && *size > 1 && *stride == 0), op,
               ": unsupported operation: more than one element of the written-to tensor refers "
               "to a single memory location. Please clone() the tensor before performing the "
               "operation.");
  }
}

// Another input reads the memory written to, through a different layout: element i of the
// result could overwrite what a later element still has to read.
bool partially_aliased(const std::vector<Tensor>& in) {
  const TensorImpl& self = *in[0].impl();
  for (size_t k = 1; k < in.size(); ++k) {
    if (!in[k].defined()) continue;
    const TensorImpl& o = *in[k].impl();
    if (o.storage() != self.storage()) continue;
    if (!(o.sizes() == self.sizes() && o.strides() == self.strides() &&
          o.storage_offset() == self.storage_offset()))
      return true;
  }
  return false;
}

ScalarType result_dtype(const OpDef& base, const std::vector<Tensor>& in, const Attrs& attrs) {
  return base.meta_(in, attrs).at(0).dtype;
}

MetaFn inplace_meta(const OpDef* base, const std::string* name) {
  return [base, name](const std::vector<Tensor>& in, const Attrs& attrs) {
    const Tensor& self = in.at(0);
    check_no_internal_overlap(name->c_str(), self);
    ScalarType result = result_dtype(*base, in, attrs);
    // inplace_of checks the shape, and rejects `result` when it is not castable to self.
    return meta::inplace_of(name->c_str(), in,
                            can_cast(result, self.dtype()) ? self.dtype() : result);
  };
}

KernelFn inplace_kernel(const OpDef* base, KernelFn kernel) {
  return [base, kernel](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                        const Attrs& attrs) {
    const Tensor& self = in[0];
    const ScalarType result = result_dtype(*base, in, attrs);
    if (result == self.dtype() && !partially_aliased(in)) {
      kernel(in, out, attrs);  // out[0] is self: each element is read, then written
      return;
    }
    std::vector<Tensor> tmp{empty(self.sym_sizes(), TensorOptions(result).device(self.device()))};
    kernel(in, tmp, attrs);
    Tensor dst = self;
    dst.copy_(tmp[0]);
  };
}

SampleFn inplace_samples(const OpDef* base) {
  return [base](ScalarType dt) {
    std::vector<OpSample> fitting;
    for (OpSample& s : base->samples_(dt)) {
      const Tensor& self = s.inputs.at(0);
      if (!self.defined() || self.impl()->is_wrapped_number()) continue;
      TensorSpec spec = base->meta_(s.inputs, s.attrs).at(0);
      if (!(SymIntArrayRef(spec.sizes) == self.sizes())) continue;
      if (!can_cast(spec.dtype, self.dtype())) continue;
      fitting.push_back(std::move(s));
    }
    return fitting;
  };
}

// "add(Tensor self, ...) -> Tensor" becomes "add_(Tensor(a!) self, ...) -> Tensor(a!)".
std::string inplace_schema(const std::string& schema, const std::string& name) {
  std::string s = schema;
  auto replace = [&s](const std::string& from, const std::string& to) {
    size_t at = s.find(from);
    if (at != std::string::npos) s.replace(at, from.size(), to);
  };
  replace(name + "(", name + "_(");
  replace("Tensor self", "Tensor(a!) self");
  replace("-> Tensor", "-> Tensor(a!)");
  return s;
}

void derive_inplace(const OpDef& base) {
  OpDef& d = register_op(base.name + "_");
  const std::string* name = &d.name;  // OpDefs live as long as the registry
  d.schema(inplace_schema(base.schema_, base.name))
      .meta(inplace_meta(&base, name))
      .backward(base.backward_)
      .samples(inplace_samples(&base))
      .reference(base.reference_)
      .dtypes(base.dtypes_)
      .lowering("inplace:" + base.name)
      .inplace();
  for (int dev = 0; dev < kNumDeviceTypes; ++dev)
    if (base.kernels[dev]) d.kernels[dev] = inplace_kernel(&base, base.kernels[dev]);
  d.saves_inputs = base.saves_inputs;
  d.saves_outputs = base.saves_outputs;
  d.atol = base.atol;
  d.rtol = base.rtol;
}

}  // namespace

bool register_inplace(std::initializer_list<const char*> names) {
  for (const char* n : names) derive_inplace(get_op(n));
  return true;
}

}  // namespace kiln::pointwise
