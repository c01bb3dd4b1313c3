// view, expand, permute: the basic views; reshape and transpose built on them.
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln {
using shape::view_spec;

SymShape infer_size(const char* op, const SymShape& size, const SymInt& numel) {
  SymShape out = size;
  int infer = -1;
  SymShape known_sizes;
  for (size_t d = 0; d < size.size(); ++d) {
    if (!size[d].is_symbolic() && size[d].guard_int() == -1) {
      KILN_CHECK(infer < 0, op, ": only one dimension can be inferred, got shape ",
                 SymIntArrayRef(size));
      infer = static_cast<int>(d);
    } else {
      KILN_CHECK(size[d] >= 0, op, ": invalid shape dimension ", size[d]);
      known_sizes.push_back(size[d]);
    }
  }
  SymInt known;
  try {
    known = numel_of(known_sizes);
  } catch (...) {
    detail::rethrow_in(op, detail::str_cat("shape ", SymIntArrayRef(size)));
  }
  auto fail = [&] {
    KILN_FAIL(op, ": shape '", SymIntArrayRef(size), "' is invalid for input of size ", numel);
  };
  if (infer >= 0) {
    if (known == 0) fail();
    if (numel % known != 0) fail();
    out[infer] = numel / known;
  } else if (!(known == numel)) {
    fail();
  }
  return out;
}

std::optional<SymShape> view_strides(const SymShape& oldshape, const SymShape& oldstride,
                                     const SymShape& newshape) {
  if (oldshape.empty()) return SymShape(newshape.size(), SymInt(1));
  SymInt numel = numel_of(oldshape);
  if (numel == 0) return contiguous_strides(newshape);
  SymShape newstride(newshape.size());
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  SymInt chunk_base_stride = oldstride.back();
  SymInt tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel = tensor_numel * oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 &&
                          oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel = view_numel * newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

KILN_REGISTER_OP(view)
    .schema("view(Tensor(a) self, SymInt[] size) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      SymShape sizes = infer_size("view", a.shape(0), x.sym_numel());
      std::optional<SymShape> strides;
      if (x.is_contiguous())
        strides = contiguous_strides(sizes);
      else
        strides = view_strides(x.sym_sizes(), x.sym_strides(), sizes);
      KILN_CHECK(strides.has_value(), "view: view size ", SymIntArrayRef(sizes),
                 " is not compatible with input tensor's size ", x.sym_sizes(), " and stride ",
                 x.sym_strides(),
                 " (at least one dimension spans across two contiguous subspaces). "
                 "Use .reshape(...) instead.");
      return std::vector<TensorSpec>{view_spec(x, sizes, *strides, x.sym_storage_offset())};
    })
    .view()
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.grad().reshape(c.input(0).sym_sizes())};
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({3, 4}, dt)}, {SymShape{2, 6}}, "2x6"},
          {{samples::make({3, 4}, dt)}, {SymShape{-1}}, "flatten"},
          {{samples::make({2, 3, 4}, dt)}, {SymShape{6, -1}}, "infer"},
          {{samples::make({4, 6}, dt, -3, 3, true)}, {SymShape{4, 2, 3}}, "non-contiguous split"},
          {{samples::make({}, dt)}, {SymShape{1, 1}}, "0-dim"},
          {{samples::make({0, 4}, dt)}, {SymShape{4, 0}}, "empty"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      // Row-major order is the definition of view: copy values in order into the new shape.
      Tensor src = in[0].to(kFloat64).contiguous();
      Tensor out = empty(infer_size("view", a.shape(0), src.sym_numel()), kFloat64);
      const int64_t n = src.sym_numel();
      for (int64_t i = 0; i < n; ++i) out.data_ptr<double>()[i] = src.data_ptr<double>()[i];
      return std::vector<Tensor>{out};
    })
    .error_samples([] {
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x},
           {SymShape{-1, -1}},
           "only one dimension can be inferred, got shape [-1, -1]",
           "two -1"},
          {{x}, {SymShape{-2, 6}}, "invalid shape dimension -2", "negative size"},
          {{x}, {SymShape{5}}, "shape '[5]' is invalid for input of size 12", "wrong numel"},
          {{samples::make({4, 3}, kFloat32).t()},
           {SymShape{12}},
           "view size [12] is not compatible with input tensor's size [3, 4] and stride [1, 3]",
           "transposed input"},
      };
    })
    .lowering("view");

KILN_REGISTER_OP(expand)
    .schema("expand(Tensor(a) self, SymInt[] size) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const SymShape& size = a.shape(0);
      const int64_t nd = static_cast<int64_t>(size.size());
      KILN_CHECK(nd >= x.dim(), "expand: the number of sizes provided (", nd,
                 ") must be greater or equal to the number of dimensions in the tensor (", x.dim(),
                 ")");
      SymShape sizes(nd), strides(nd);
      for (int64_t d = nd - 1; d >= 0; --d) {
        int64_t xd = d - (nd - x.dim());
        SymInt want = size[d];
        if (xd < 0) {
          KILN_CHECK(want >= 0, "expand: -1 is not allowed in a leading, non-existing dimension ",
                     "(target sizes ", SymIntArrayRef(size), ", tensor sizes ", x.sym_sizes(), ")");
          sizes[d] = want;
          strides[d] = 0;
          continue;
        }
        SymInt have = x.sym_size(xd);
        if (!want.is_symbolic() && want.guard_int() == -1) want = have;
        if (have == want) {
          sizes[d] = have;
          strides[d] = x.sym_stride(xd);
        } else {
          KILN_CHECK(have == 1, "expand: the expanded size of the tensor (", want,
                     ") must match the existing size (", have, ") at non-singleton dimension ", d,
                     ".  Target sizes: ", SymIntArrayRef(size), ".  Tensor sizes: ", x.sym_sizes());
          sizes[d] = want;
          strides[d] = 0;
        }
      }
      return std::vector<TensorSpec>{view_spec(x, sizes, strides, x.sym_storage_offset())};
    })
    .view()
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.grad()};
    })  // summed back by autograd
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({3, 1}, dt)}, {SymShape{3, 4}}, "column"},
          {{samples::make({4}, dt)}, {SymShape{2, 3, 4}}, "new dims"},
          {{samples::make({}, dt)}, {SymShape{2, 2}}, "0-dim"},
          {{samples::make({1, 4}, dt)}, {SymShape{-1, 4}}, "-1 keeps"},
          {{samples::make({1, 4}, dt, -3, 3, true)}, {SymShape{2, 3, 4}}, "non-contiguous"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const SymShape& size = a.shape(0);
      Tensor src = in[0].to(kFloat64).contiguous();
      std::vector<int64_t> out_sizes;
      for (size_t d = 0; d < size.size(); ++d) {
        int64_t xd = static_cast<int64_t>(d) - (static_cast<int64_t>(size.size()) - src.dim());
        out_sizes.push_back(size[d] == -1 ? src.sym_size(xd).guard_int() : size[d].guard_int());
      }
      Tensor out = empty(out_sizes, kFloat64);
      const int64_t n = out.sym_numel();
      const int64_t nd = static_cast<int64_t>(out_sizes.size());
      for (int64_t i = 0; i < n; ++i) {
        int64_t rem = i, src_index = 0, src_mul = 1;
        for (int64_t d = nd - 1; d >= 0; --d) {
          int64_t idx = rem % out_sizes[d];
          rem /= out_sizes[d];
          int64_t xd = d - (nd - src.dim());
          if (xd >= 0) {
            int64_t s = src.sym_size(xd).guard_int();
            src_index += (s == 1 ? 0 : idx) * src_mul;
            src_mul *= s;
          }
        }
        out.data_ptr<double>()[i] = src.data_ptr<double>()[src_index];
      }
      return std::vector<Tensor>{out};
    })
    .error_samples([] {
      return std::vector<OpErrorSample>{
          {{samples::make({3, 4}, kFloat32)},
           {SymShape{4}},
           "the number of sizes provided (1) must be greater or equal to the number of dimensions "
           "in the tensor (2)",
           "fewer sizes"},
          {{samples::make({3}, kFloat32)},
           {SymShape{-1, 3}},
           "-1 is not allowed in a leading, non-existing dimension (target sizes [-1, 3], tensor "
           "sizes [3])",
           "-1 in a new dim"},
          {{samples::make({3, 2}, kFloat32)},
           {SymShape{3, 4}},
           "the expanded size of the tensor (4) must match the existing size (2) at non-singleton "
           "dimension 1",
           "size 2 to 4"},
      };
    })
    .lowering("view");

KILN_REGISTER_OP(permute)
    .schema("permute(Tensor(a) self, int[] dims) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const auto& dims = a.ints(0);
      KILN_CHECK(static_cast<int64_t>(dims.size()) == x.dim(),
                 "permute: number of dims don't "
                 "match in permute: got ",
                 dims.size(), " dims for a tensor of ", x.dim(), " dims");
      auto w = meta::wrap_dims("permute", dims, x.dim());
      SymShape sizes, strides;
      for (int64_t d : w) {
        sizes.push_back(x.sym_size(d));
        strides.push_back(x.sym_stride(d));
      }
      return std::vector<TensorSpec>{view_spec(x, sizes, strides, x.sym_storage_offset())};
    })
    .view()
    .backward([](const BackwardContext& c) {
      auto w = meta::wrap_dims("permute", c.attrs.ints(0), c.input(0).dim());
      std::vector<int64_t> inv(w.size());
      for (size_t i = 0; i < w.size(); ++i) inv[w[i]] = static_cast<int64_t>(i);
      return std::vector<Tensor>{c.grad().permute(inv)};
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({2, 3, 4}, dt)}, {std::vector<int64_t>{2, 0, 1}}, "3d"},
          {{samples::make({3, 4}, dt)}, {std::vector<int64_t>{-1, 0}}, "negative"},
          {{samples::make({}, dt)}, {std::vector<int64_t>{}}, "0-dim"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor x = in[0].to(kFloat64).contiguous();
      auto w = meta::wrap_dims("permute", a.ints(0), x.dim());
      std::vector<int64_t> osz;
      for (int64_t d : w) osz.push_back(x.sym_size(d).guard_int());
      Tensor out = empty(osz, kFloat64);
      auto xs = contiguous_strides(x.sym_sizes().vec());
      const int64_t n = out.sym_numel();
      for (int64_t i = 0; i < n; ++i) {
        int64_t rem = i, src = 0;
        for (int64_t d = static_cast<int64_t>(osz.size()) - 1; d >= 0; --d) {
          src += (rem % osz[d]) * xs[w[d]];
          rem /= osz[d];
        }
        out.data_ptr<double>()[i] = x.data_ptr<double>()[src];
      }
      return std::vector<Tensor>{out};
    })
    .error_samples([] {
      using V = std::vector<int64_t>;
      const Tensor x = samples::make({2, 3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {V{1, 0}}, "got 2 dims for a tensor of 3 dims", "too few dims"},
          {{x}, {V{0, 1, 3}}, "expected to be in range of [-3, 2], but got 3", "dim"},
          {{x}, {V{0, 1, -2}}, "dim 1 appears multiple times in the list of dims", "repeated"},
      };
    })
    .lowering("view");

// detach: the same elements, cut from autograd. It is an op (not a TensorImpl copy) so that
// traces see it: a detached value is a graph value like any other.
KILN_REGISTER_OP(detach)
    .schema("detach(Tensor(a) self) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      const Tensor& x = in[0];
      return std::vector<TensorSpec>{
          view_spec(x, x.sym_sizes().sym_vec(), x.sym_strides().sym_vec(), x.sym_storage_offset())};
    })
    .view()
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{{{samples::make({2, 3}, dt)}, {}, "2d"},
                                   {{samples::make({3, 4}, dt).t()}, {}, "transposed"},
                                   {{samples::make({}, dt)}, {}, "0-dim"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{in[0].to(kFloat64).clone()};
    })
    .lowering("view");

Tensor view(const Tensor& self, SymIntList size) {
  static const OpDef& op = get_op("view");
  return call_op1(op, {self}, {std::move(size).get()});
}

Tensor reshape(const Tensor& self, SymIntList size) {
  SymShape s = infer_size("reshape", size.get(), self.sym_numel());
  if (self.is_contiguous() || view_strides(self.sym_sizes(), self.sym_strides(), s))
    return view(self, std::move(s));
  return view(self.clone(), std::move(s));
}

Tensor expand(const Tensor& self, SymIntList size) {
  static const OpDef& op = get_op("expand");
  return call_op1(op, {self}, {std::move(size).get()});
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  static const OpDef& op = get_op("permute");
  return call_op1(op, {self}, {dims.vec()});
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t nd = self.dim();
  if (nd == 0) return self;
  int64_t a = meta::wrap_dim("transpose", dim0, nd), b = meta::wrap_dim("transpose", dim1, nd);
  std::vector<int64_t> p(nd);
  for (int64_t i = 0; i < nd; ++i) p[i] = i;
  std::swap(p[a], p[b]);
  return permute(self, p);
}

Tensor sum_to_size(const Tensor& self, SymIntList size) {
  const SymShape& target = size.get();
  const int64_t lead = self.dim() - static_cast<int64_t>(target.size());
  KILN_CHECK(lead >= 0, "sum_to_size: size ", SymIntArrayRef(target), " is not expandable to size ",
             self.sym_sizes());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (int64_t d = lead; d < self.dim(); ++d) {
    const SymInt& t = target[d - lead];
    if (t == 1 && self.sym_size(d) != 1) {
      dims.push_back(d);
    } else {
      KILN_CHECK(t == self.sym_size(d), "sum_to_size: size ", SymIntArrayRef(target),
                 " is not expandable to size ", self.sym_sizes());
    }
  }
  if (dims.empty()) return self;
  Tensor r = self.sum(dims, /*keepdim=*/true);
  if (lead > 0) r = r.view(target);
  return r;
}

Tensor Tensor::view(SymIntList size) const { return kiln::view(*this, std::move(size)); }
Tensor Tensor::reshape(SymIntList size) const { return kiln::reshape(*this, std::move(size)); }
Tensor Tensor::expand(SymIntList size) const { return kiln::expand(*this, std::move(size)); }
Tensor Tensor::permute(IntArrayRef dims) const { return kiln::permute(*this, dims); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return kiln::transpose(*this, d0, d1); }
Tensor Tensor::t() const {
  KILN_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? *this : transpose(0, 1);
}

}  // namespace kiln
