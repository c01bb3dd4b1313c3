#include "kiln/ops/pool/linear.h"

#include <array>
#include <unordered_map>

#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool/planes.h"
#include "kiln/ops/pool/util.h"
#include "kiln/ops/samples.h"

namespace kiln::pool {
namespace {

// The forward entry's attrs with the input sizes appended: the adjoint's attrs.
Attrs with_sizes(const Attrs& a, const SymShape& sizes) {
  std::vector<AttrValue> v;
  for (size_t i = 0; i < a.size(); ++i) v.push_back(a[i]);
  v.push_back(sizes);
  return Attrs(std::move(v));
}
Attrs without_sizes(const Attrs& a) {
  std::vector<AttrValue> v;
  for (size_t i = 0; i + 1 < a.size(); ++i) v.push_back(a[i]);
  return Attrs(std::move(v));
}

// The taps of every dim as three (a 2-d entry's depth is the identity on one element).
std::array<Taps, kMaxSpatial> all_taps(const SeparableDef& def, const Attrs& a, const Extent& in,
                                       const Extent& out) {
  std::array<Taps, kMaxSpatial> t;
  const int skip = kMaxSpatial - def.spatial;
  for (int d = 0; d < kMaxSpatial; ++d) {
    if (d < skip) {
      t[d].add(0, 1.0);
      t[d].close();
    } else {
      t[d] = def.taps(a, d - skip, in.size[d], out.size[d]);
    }
    KILN_CHECK(t[d].outputs() == out.size[d], "internal: ", def.name, ": tap count mismatch");
  }
  return t;
}

// y = M x (forward) or x = M^T y (adjoint, accumulate) for each plane.
void apply(const SeparableDef& def, const Attrs& a, const Tensor& src, Tensor& dst, bool adjoint) {
  const Tensor s = to_compute(src);
  const Extent in = extent(adjoint ? dst : s);   // the input side
  const Extent out = extent(adjoint ? s : dst);  // the output side
  const std::array<Taps, kMaxSpatial> t = all_taps(def, a, in, out);
  const Taps &td = t[0], &th = t[1], &tw = t[2];
  const int64_t H = in.size[1], W = in.size[2];
  const int64_t OD = out.size[0], OH = out.size[1], OW = out.size[2];
  compute_into(dst, [&](Tensor& r) {
    visit_compute(r.dtype(), [&]<class T>(T) {
      const T* ps = s.data_ptr<T>();
      T* pr = r.data_ptr<T>();
      const int64_t in_plane = adjoint ? out.numel() : in.numel();
      const int64_t out_plane = adjoint ? in.numel() : out.numel();
      for_planes(planes(s), out.numel() * 4, [&](int64_t p) {
        const T* x = ps + p * in_plane;
        T* y = pr + p * out_plane;
        if (adjoint) std::fill(y, y + out_plane, T(0));
        for (int64_t od = 0; od < OD; ++od)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              using Acc = double;
              Acc acc = 0;
              const int64_t o = (od * OH + oh) * OW + ow;
              const T g = adjoint ? x[o] : T(0);
              for (int64_t k = td.begin[od]; k < td.begin[od + 1]; ++k)
                for (int64_t i = th.begin[oh]; i < th.begin[oh + 1]; ++i)
                  for (int64_t j = tw.begin[ow]; j < tw.begin[ow + 1]; ++j) {
                    const Acc w = td.weight[k] * th.weight[i] * tw.weight[j];
                    const int64_t at = (td.index[k] * H + th.index[i]) * W + tw.index[j];
                    if (adjoint)
                      y[at] += static_cast<T>(w * g);
                    else
                      acc += w * x[at];
                  }
              if (!adjoint) y[o] = static_cast<T>(acc);
            }
      });
    });
  });
}

// The adjoint's reference: column j of M^T g is <M e_j, g>, with M from the forward reference.
std::vector<Tensor> adjoint_reference(const SeparableDef& def, const std::vector<Tensor>& in,
                                      const Attrs& a) {
  const Attrs fa = without_sizes(a);
  const SymShape sizes = a.shape(a.size() - 1);
  Tensor g = in[0].to(kFloat64).contiguous();
  Tensor out = zeros(sizes, kFloat64);
  Tensor e = zeros(sizes, kFloat64);
  for (int64_t j = 0; j < out.sym_numel(); ++j) {
    e.data_ptr<double>()[j] = 1;
    Tensor y = def.reference({e}, fa)[0].contiguous();
    double dot = 0;
    for (int64_t k = 0; k < y.sym_numel(); ++k)
      dot += y.data_ptr<double>()[k] * g.data_ptr<double>()[k];
    out.data_ptr<double>()[j] = dot;
    e.data_ptr<double>()[j] = 0;
  }
  return {out};
}

// The adjoint's error samples, from the forward entry's first sample: sizes of another rank,
// and a gradient of another shape than the forward output's.
std::vector<OpErrorSample> adjoint_error_samples(const SeparableDef& def) {
  const OpSample s = def.samples(kFloat32).at(0);
  const SymShape in_sizes = s.inputs[0].sym_sizes();
  std::vector<int64_t> out;
  for (const SymInt& v : def.output_sizes(s.inputs[0], s.attrs)) out.push_back(v.guard_int());
  std::vector<int64_t> wrong = out;
  wrong.back() += 1;
  return {
      {{samples::make({2, 3}, kFloat32)},
       with_sizes(s.attrs, SymShape{2, 3}),
       detail::str_cat("expected a ", def.spatial + 2,
                       "-D gradient and input sizes, got [2, 3] and [2, 3]"),
       "2-D"},
      {{samples::make(wrong, kFloat32)},
       with_sizes(s.attrs, in_sizes),
       detail::str_cat("expected a gradient of size ", IntArrayRef(out), ", but got ",
                       IntArrayRef(wrong)),
       "gradient of another shape"},
  };
}

// Every registered definition by name (filled during static initialisation).
std::unordered_map<std::string, SeparableDef>& separable_defs() {
  static std::unordered_map<std::string, SeparableDef> defs;
  return defs;
}

}  // namespace

const SeparableDef& separable_def(const std::string& name) {
  const auto it = separable_defs().find(name);
  KILN_CHECK(it != separable_defs().end(), "pool: no separable entry named ", name);
  return it->second;
}

Tensor call_separable(const char* name, const Tensor& input, const Attrs& attrs) {
  return call_op1(get_op(name), {input}, attrs);
}

bool register_separable(const SeparableDef& def) {
  separable_defs()[def.name] = def;
  const std::string bname = def.name + "_backward";
  register_op(def.name)
      .schema(def.schema)
      .meta([def](const std::vector<Tensor>& in, const Attrs& a) {
        return meta::one_spec(def.output_sizes(in[0], a), in[0].dtype(), in[0].device());
      })
      .cpu([def](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        apply(def, a, in[0], out[0], false);
      })
      .save_metadata()
      .backward([bname](const BackwardContext& c) {
        return std::vector<Tensor>{
            call_op1(get_op(bname), {c.grad()}, with_sizes(c.attrs, c.input(0).sym_sizes()))};
      })
      .samples(def.samples)
      .error_samples(def.error_samples)
      .reference(def.reference)
      .dtypes({kFloat64, kFloat32, kBFloat16})
      .lowering("extern:" + def.name);
  register_op(bname)
      .schema(def.name + "_backward(Tensor grad, <" + def.name + " attrs>, SymInt[] input_sizes)")
      .meta([def](const std::vector<Tensor>& in, const Attrs& a) {
        const SymShape sizes = a.shape(a.size() - 1);
        const auto rank = static_cast<size_t>(def.spatial) + 2;
        KILN_CHECK(sizes.size() == rank && in[0].dim() == static_cast<int64_t>(rank), def.name,
                   "_backward: expected a ", rank, "-D gradient and input sizes, got ",
                   in[0].sym_sizes(), " and ", sizes);
        const SymShape expected =
            def.output_sizes(empty_meta(sizes, in[0].dtype()), without_sizes(a));
        KILN_CHECK(in[0].sym_sizes() == expected, def.name, "_backward: expected a gradient of ",
                   "size ", expected, ", but got ", in[0].sym_sizes());
        return meta::one_spec(sizes, in[0].dtype(), in[0].device());
      })
      .cpu([def](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        apply(def, without_sizes(a), in[0], out[0], true);
      })
      .save_metadata()
      .backward([def](const BackwardContext& c) {
        return std::vector<Tensor>{call_op1(get_op(def.name), {c.grad()}, without_sizes(c.attrs))};
      })
      .error_samples([def] { return adjoint_error_samples(def); })
      .samples([def](ScalarType dt) {
        std::vector<OpSample> out;
        for (const OpSample& s : def.samples(dt)) {
          const SymShape in_sizes = s.inputs[0].sym_sizes();
          const SymShape out_sizes = def.output_sizes(s.inputs[0], s.attrs);
          std::vector<int64_t> shape;
          for (const SymInt& v : out_sizes) shape.push_back(v.guard_int());
          out.push_back({{samples::make(shape, dt)}, with_sizes(s.attrs, in_sizes), s.desc});
        }
        return out;
      })
      .reference([def](const std::vector<Tensor>& in, const Attrs& a) {
        return adjoint_reference(def, in, a);
      })
      .dtypes({kFloat64, kFloat32})
      .lowering("extern:" + bname);
  return true;
}

}  // namespace kiln::pool
