// The adjoints of views (slice_backward, select_backward, diagonal_backward, unfold_backward):
// one registry entry per view, all made by register_view_backward from the forward entry.
#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln::shape {
namespace {

// dst[i] += src[i] one element at a time: dst may map several indices to one element.
void accumulate(const Tensor& dst, const Tensor& src) {
  cpu::visit_floating(dst.dtype(), "view backward", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    const int64_t n = dst.sym_numel().guard_int();
    if (n == 0) return;
    T* d = static_cast<T*>(dst.data_ptr());
    const T* s = static_cast<const T*>(src.data_ptr());
    const std::vector<int64_t> sizes = dst.sym_sizes().vec(), ds = dst.sym_strides().vec(),
                               ss = src.sym_strides().vec();
    const int64_t nd = dst.dim();
    std::vector<int64_t> idx(nd, 0);
    int64_t od = 0, os = 0;
    for (int64_t i = 0; i < n; ++i) {
      d[od] = static_cast<T>(static_cast<C>(d[od]) + static_cast<C>(s[os]));
      for (int64_t k = nd - 1; k >= 0; --k) {
        if (++idx[k] < sizes[k]) {
          od += ds[k];
          os += ss[k];
          break;
        }
        od -= (sizes[k] - 1) * ds[k];
        os -= (sizes[k] - 1) * ss[k];
        idx[k] = 0;
      }
    }
  });
}

// "slice(Tensor(a) self, int dim=0, ...) -> Tensor(a)" -> "int dim=0, ..."
std::string attrs_of_schema(const std::string& schema) {
  const size_t open = schema.find('('), comma = schema.find(", ", open);
  const size_t close = schema.rfind(") ->");
  if (comma == std::string::npos || close == std::string::npos || comma > close) return "";
  return schema.substr(comma + 2, close - comma - 2);
}

}  // namespace

void register_view_backward(const char* forward_name, bool overlapping) {
  const std::string forward = forward_name;
  const std::string name = forward + "_backward";
  const std::string fattrs = attrs_of_schema(get_op(forward).schema_);
  OpDef& op = register_op(name);
  op.schema(name + "(Tensor grad_output, SymInt[] input_sizes" +
            (fattrs.empty() ? "" : ", " + fattrs) + ") -> Tensor")
      .meta([forward, name](const std::vector<Tensor>& in, const Attrs& a) {
        const Tensor& g = in[0];
        const SymShape& sizes = a.shape(0);
        Tensor probe = empty_meta(sizes, g.dtype(), g.device());
        TensorSpec v = get_op(forward).meta_({probe}, drop_attrs(a, 1)).at(0);
        KILN_CHECK(SymIntArrayRef(v.sizes) == g.sym_sizes(), name, ": grad_output of shape ",
                   g.sym_sizes(), " does not match the shape ", SymIntArrayRef(v.sizes), " that ",
                   forward, " gives for an input of shape ", SymIntArrayRef(sizes));
        return meta::one_spec(sizes, g.dtype(), g.device());
      })
      .cpu([forward, overlapping](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                  const Attrs& a) {
        TensorSpec v = get_op(forward).meta_({out[0]}, drop_attrs(a, 1)).at(0);
        cpu::fill(out[0], 0);
        Tensor dst =
            raw_view(out[0], v.sizes, v.strides.empty() ? contiguous_strides(v.sizes) : v.strides,
                     v.storage_offset);
        if (overlapping) {
          accumulate(dst, in[0]);
        } else {
          cpu::copy(dst, in[0]);
        }
      })
      .backward([forward](const BackwardContext& c) {
        return std::vector<Tensor>{call_op1(get_op(forward), {c.grad()}, drop_attrs(c.attrs, 1))};
      })
      .samples([forward](ScalarType dt) {
        const OpDef& f = get_op(forward);
        std::vector<OpSample> out;
        size_t k = 0;
        for (const OpSample& s : f.samples_(dt)) {
          const Tensor& x = s.inputs.at(0);
          TensorSpec v = f.meta_({x}, s.attrs).at(0);
          std::vector<int64_t> gs = SymIntArrayRef(v.sizes).vec();
          const bool noncontiguous = (k++ % 2 == 1) && !gs.empty();
          out.push_back({{samples::make(gs, dt, -3, 3, noncontiguous)},
                         prepend_attr(x.sym_sizes(), s.attrs),
                         s.desc,
                         s.check_grad});
        }
        return out;
      })
      .error_samples([forward] {
        // The forward's first sample, with a gradient one element longer than its view.
        const OpDef& f = get_op(forward);
        const OpSample s = f.samples_(kFloat32).at(0);
        const Tensor& x = s.inputs.at(0);
        std::vector<int64_t> gs = SymIntArrayRef(f.meta_({x}, s.attrs).at(0).sizes).vec();
        std::vector<int64_t> wrong = gs;
        wrong.push_back(2);
        return std::vector<OpErrorSample>{
            {{samples::make(wrong, kFloat32)},
             prepend_attr(x.sym_sizes(), s.attrs),
             detail::str_cat("grad_output of shape ", IntArrayRef(wrong),
                             " does not match the shape ", IntArrayRef(gs)),
             "gradient of another shape"}};
      })
      .reference([forward](const std::vector<Tensor>& in, const Attrs& a) {
        return std::vector<Tensor>{
            reference_adjoint(get_op(forward).reference_, a.shape(0), drop_attrs(a, 1), in[0])};
      })
      .dtypes({kFloat64, kFloat32, kBFloat16})
      .lowering("extern:" + name);
  op.save_inputs({});
}

}  // namespace kiln::shape
