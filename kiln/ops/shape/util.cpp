#include "kiln/ops/shape/util.h"

#include <cmath>
#include <cstring>

#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/creation.h"

namespace kiln::shape {

TensorSpec view_spec(const Tensor& in, SymShape sizes, SymShape strides, SymInt offset) {
  TensorSpec s = meta::spec(std::move(sizes), in.dtype(), in.device());
  s.strides = std::move(strides);
  s.view_of = 0;
  s.storage_offset = std::move(offset);
  return s;
}

Tensor raw_view(const Tensor& base, const SymShape& sizes, const SymShape& strides,
                const SymInt& offset) {
  return Tensor(
      std::make_shared<TensorImpl>(base.impl()->storage(), base.dtype(), sizes, strides, offset));
}

Attrs drop_attrs(const Attrs& a, size_t skip) {
  std::vector<AttrValue> v;
  for (size_t i = skip; i < a.size(); ++i) v.push_back(a[i]);
  return Attrs(std::move(v));
}

Attrs prepend_attr(AttrValue first, const Attrs& a) {
  std::vector<AttrValue> v{std::move(first)};
  for (size_t i = 0; i < a.size(); ++i) v.push_back(a[i]);
  return Attrs(std::move(v));
}

GatherDim identity_dim(int64_t size, int64_t stride) {
  GatherDim d;
  d.src.resize(size);
  for (int64_t i = 0; i < size; ++i) d.src[i] = i;
  d.stride = stride;
  return d;
}

namespace {

// A run of the innermost output dim that reads consecutive input elements (or only fills).
struct Segment {
  int64_t out_start, length, src_start;  // src_start -1: fill
};

std::vector<Segment> segments_of(const GatherDim& d) {
  std::vector<Segment> segs;
  for (int64_t i = 0; i < static_cast<int64_t>(d.src.size()); ++i) {
    const int64_t src = d.src[i];
    if (!segs.empty()) {
      Segment& b = segs.back();
      bool extend = (src < 0 && b.src_start < 0) ||
                    (src >= 0 && b.src_start >= 0 && src == b.src_start + b.length);
      if (extend) {
        ++b.length;
        continue;
      }
    }
    segs.push_back({i, 1, src});
  }
  return segs;
}

// U is an unsigned integer of the element's size: a gather only moves bits.
template <class U>
void gather_typed(const Tensor& out, const Tensor& in, const std::vector<GatherDim>& dims, U fill) {
  const int64_t nd = static_cast<int64_t>(dims.size());
  U* o = static_cast<U*>(out.data_ptr());
  const U* x = in.sym_numel() > 0 ? static_cast<const U*>(in.data_ptr()) : nullptr;
  if (nd == 0) {
    o[0] = x[0];
    return;
  }
  std::vector<int64_t> sizes(nd);
  int64_t numel = 1;
  for (int64_t d = 0; d < nd; ++d) {
    sizes[d] = static_cast<int64_t>(dims[d].src.size());
    numel *= sizes[d];
  }
  if (numel == 0) return;
  const GatherDim& last = dims.back();
  const int64_t inner = sizes.back();
  const int64_t rows = numel / inner;
  const std::vector<Segment> segs = segments_of(last);
  const bool by_segment = last.stride == 1 && segs.size() * 4 <= static_cast<size_t>(inner);
  cpu::parallel_for(
      0, rows, std::max<int64_t>(1, cpu::kParallelGrain / inner), [&](int64_t begin, int64_t end) {
        std::vector<int64_t> idx(nd - 1);
        int64_t rem = begin;
        for (int64_t d = nd - 2; d >= 0; --d) {
          idx[d] = rem % sizes[d];
          rem /= sizes[d];
        }
        for (int64_t r = begin; r < end; ++r) {
          U* orow = o + r * inner;
          int64_t base = 0;
          bool filled = false;
          for (int64_t d = 0; d < nd - 1; ++d) {
            const int64_t s = dims[d].src[idx[d]];
            if (s < 0) filled = true;
            base += s * dims[d].stride;
          }
          if (filled) {
            std::fill(orow, orow + inner, fill);
          } else if (by_segment) {
            for (const Segment& s : segs) {
              if (s.src_start < 0) {
                std::fill(orow + s.out_start, orow + s.out_start + s.length, fill);
              } else {
                std::memcpy(orow + s.out_start, x + base + s.src_start, s.length * sizeof(U));
              }
            }
          } else {
            for (int64_t i = 0; i < inner; ++i) {
              const int64_t s = last.src[i];
              orow[i] = s < 0 ? fill : x[base + s * last.stride];
            }
          }
          for (int64_t d = nd - 2; d >= 0; --d) {
            if (++idx[d] < sizes[d]) break;
            idx[d] = 0;
          }
        }
      });
}

}  // namespace

void gather_copy(const Tensor& out, const Tensor& in, const std::vector<GatherDim>& dims,
                 const Scalar& fill) {
  if (out.sym_numel() == 0) return;
  KILN_CHECK(out.dtype() == in.dtype() && out.is_contiguous() &&
                 static_cast<int64_t>(dims.size()) == out.dim(),
             "internal: gather_copy expects a contiguous output of the input's dtype");
  uint64_t bits = 0;
  cpu::visit_all(out.dtype(), "gather_copy", [&](auto tag) {
    using T = decltype(tag);
    const T v = fill.to<T>();
    std::memcpy(&bits, &v, sizeof(T));
  });
  switch (out.element_size()) {
    case 1:
      return gather_typed<uint8_t>(out, in, dims, static_cast<uint8_t>(bits));
    case 2:
      return gather_typed<uint16_t>(out, in, dims, static_cast<uint16_t>(bits));
    case 4:
      return gather_typed<uint32_t>(out, in, dims, static_cast<uint32_t>(bits));
    default:
      return gather_typed<uint64_t>(out, in, dims, bits);
  }
}

std::vector<int64_t> int_sizes(const Tensor& t) { return t.sym_sizes().vec(); }

int64_t flat_index(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  int64_t f = 0;
  for (size_t d = 0; d < sizes.size(); ++d) f = f * sizes[d] + idx[d];
  return f;
}

Tensor reference_gather(const Tensor& x, const std::vector<int64_t>& out_sizes,
                        const SourceFn& source, double fill) {
  Tensor xc = x.to(kFloat64).contiguous();
  const std::vector<int64_t> xs = int_sizes(xc);
  Tensor out = empty(out_sizes, kFloat64);
  int64_t n = 1;
  for (int64_t s : out_sizes) n *= s;
  const int64_t nd = static_cast<int64_t>(out_sizes.size());
  std::vector<int64_t> oi(nd), ii(xs.size());
  const double* xd = n > 0 && xc.sym_numel() > 0 ? xc.data_ptr<double>() : nullptr;
  double* od = n > 0 ? out.data_ptr<double>() : nullptr;
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rem = flat;
    for (int64_t d = nd - 1; d >= 0; --d) {
      oi[d] = rem % out_sizes[d];
      rem /= out_sizes[d];
    }
    od[flat] = source(oi, ii) ? xd[flat_index(ii, xs)] : fill;
  }
  return out;
}

Tensor reference_adjoint(const ReferenceFn& forward, const SymShape& input_sizes,
                         const Attrs& forward_attrs, const Tensor& grad) {
  const std::vector<int64_t> in_sizes = SymIntArrayRef(input_sizes).vec();
  Tensor positions = empty(in_sizes, kFloat64);
  const int64_t n = positions.sym_numel();
  for (int64_t i = 0; i < n; ++i) positions.data_ptr<double>()[i] = static_cast<double>(i);
  Tensor map = forward({positions}, forward_attrs)[0].contiguous();
  Tensor g = grad.to(kFloat64).contiguous();
  KILN_CHECK(map.sym_numel() == g.sym_numel(),
             "internal: reference_adjoint: the forward output has ", map.sym_numel(),
             " elements but the gradient has ", g.sym_numel());
  Tensor out = zeros(in_sizes, kFloat64);
  for (int64_t j = 0; j < g.sym_numel(); ++j) {
    const auto src = static_cast<int64_t>(std::llround(map.data_ptr<double>()[j]));
    out.data_ptr<double>()[src] += g.data_ptr<double>()[j];
  }
  return out;
}

}  // namespace kiln::shape
