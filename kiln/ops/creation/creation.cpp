#include "kiln/ops/creation.h"

#include "kiln/backend/cpu/copy.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/creation/pinned.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

MetaFn factory_meta(const char* op) {
  return [op](const std::vector<Tensor>&, const Attrs& a) {
    // attrs: sizes, ..., dtype (second to last), device (last)
    size_t n = a.size();
    for (const SymInt& s : a.shape(0))
      KILN_CHECK(s >= 0, op, ": negative dimension in size ", SymIntArrayRef(a.shape(0)));
    return std::vector<TensorSpec>{meta::spec(a.shape(0), a.dtype(n - 2), a.device(n - 1))};
  };
}

Attrs factory_attrs(SymIntList size, const TensorOptions& o) {
  return {std::move(size).get(), o.dtype(), o.device()};
}

Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.pinned_memory() && !t.is_pinned()) t = t.pin_memory();
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}

}  // namespace

KILN_REGISTER_OP(empty)
    .schema("empty(SymInt[] size, ScalarType dtype, Device device) -> Tensor")
    .meta(factory_meta("empty"))
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>&, const Attrs&) {})
    .error_samples([] {
      return std::vector<OpErrorSample>{{{},
                                         {SymShape{2, -1}, kFloat32, Device(kCPU)},
                                         "negative dimension in size [2, -1]",
                                         "negative size"}};
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{{{}, {SymShape{2, 3}, dt, Device(kCPU)}, "2x3"},
                                   {{}, {SymShape{0}, dt, Device(kCPU)}, "empty"}};
    })
    .dtypes({kFloat32, kInt64, kBool});

KILN_REGISTER_OP(full)
    .schema("full(SymInt[] size, Scalar fill_value, ScalarType dtype, Device device) -> Tensor")
    .meta(factory_meta("full"))
    .error_samples([] {
      return std::vector<OpErrorSample>{{{},
                                         {SymShape{2, -1}, Scalar(1), kFloat32, Device(kCPU)},
                                         "negative dimension in size [2, -1]",
                                         "negative size"}};
    })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      cpu::fill(out[0], a.scalar(1));
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{{{}, {SymShape{2, 3}, Scalar(1.5), dt, Device(kCPU)}, "2x3"},
                                   {{}, {SymShape{}, Scalar(7), dt, Device(kCPU)}, "0-dim"},
                                   {{}, {SymShape{0, 2}, Scalar(1), dt, Device(kCPU)}, "empty"}};
    })
    .reference([](const std::vector<Tensor>&, const Attrs& a) {
      Tensor out = empty(a.shape(0), kFloat64);
      for (int64_t i = 0; i < out.sym_numel(); ++i)
        out.data_ptr<double>()[i] = a.scalar(1).to_double();
      return std::vector<Tensor>{out};
    })
    .dtypes({kFloat64, kFloat32, kBFloat16, kInt64, kBool})
    .lowering(lowering::Lowering::of("full", [](const lowering::Call& c) -> lowering::ExprPtr {
      const Scalar v = c.attrs.scalar(1);
      // Constants are doubles: integers beyond 2^53 stay extern calls.
      if (!is_floating_point(c.output) &&
          (v.is_floating_point() || v.to_double() > 0x1p53 || v.to_double() < -0x1p53))
        return nullptr;
      return lowering::constant(v.to_double(), c.output);
    }));

KILN_REGISTER_OP(_to_copy)
    .schema(
        "_to_copy(Tensor self, ScalarType dtype, Device device, bool non_blocking=False) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return meta::one_spec(in[0].sym_sizes(), a.dtype(0), a.device(1));
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      cpu::copy(out[0], in[0]);
    })
    .save_inputs({0})
    .save_metadata()  // the backward reads the source's device
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.grad().to(c.input(0).device())};
    })
    .samples([](ScalarType dt) {
      std::vector<OpSample> s;
      for (ScalarType to : {kFloat64, kFloat32, kBFloat16, kInt64})
        s.push_back({{samples::make({3, 4}, dt)},
                     {to, Device(kCPU)},
                     "to " + std::string(dtype_name(to)),
                     is_floating_point(to) && to == kFloat64});
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{in[0]};
    })
    .dtypes({kFloat64, kFloat32, kInt32})
    .lowering(lowering::Lowering::of("convert", [](const lowering::Call& c) {
      return lowering::input(0, c.output);
    }));

KILN_REGISTER_OP(clone)
    .schema("clone(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      cpu::copy(out[0], in[0]);
    })
    .save_inputs({0})
    .save_metadata()  // the backward reads the source's device
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.grad().to(c.input(0).device())};
    })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{in[0]};
    })
    .lowering(lowering::Lowering::of("identity", [](const lowering::Call& c) {
      return lowering::input(0, c.output);
    }));

KILN_REGISTER_OP(copy_)
    .schema("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      std::vector<SymShape> shapes{in[0].sym_sizes(), in[1].sym_sizes()};
      SymShape b = meta::broadcast_shapes("copy_", shapes);
      KILN_CHECK(SymIntArrayRef(b) == in[0].sym_sizes(), "copy_: source of shape ",
                 in[1].sym_sizes(), " cannot be broadcast to the destination's shape ",
                 in[0].sym_sizes());
      TensorSpec s = meta::spec(in[0].sym_sizes(), in[0].dtype(), in[0].device());
      s.inplace_of = 0;
      return std::vector<TensorSpec>{s};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs&) {
      cpu::copy(in[0], in[1]);
    })
    .inplace()
    .allow_cross_device()
    .save_inputs({1})
    .save_metadata()  // the backward reads the source's device
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{zeros_like(c.grad()), c.grad().to(c.input(1).device())};
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({3, 4}, dt), samples::make({3, 4}, dt)}, {}, "same shape"},
          {{samples::make({3, 4}, dt), samples::make({4}, dt)}, {}, "broadcast"},
          {{samples::make({4, 3}, dt, -3, 3, true), samples::make({4, 3}, dt)}, {}, "strided dst"}};
    })
    .error_samples([] {
      const Tensor dst = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{dst, samples::make({3, 5}, kFloat32)},
           {},
           "shapes [3, 4] and [3, 5] cannot be broadcast together",
           "shapes"},
          {{dst, samples::make({2, 3, 4}, kFloat32)},
           {},
           "source of shape [2, 3, 4] cannot be broadcast to the destination's shape [3, 4]",
           "larger source"},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{in[1].expand(in[0].sym_sizes()).clone()};
    });

KILN_REGISTER_OP(fill_)
    .schema("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      TensorSpec s = meta::spec(in[0].sym_sizes(), in[0].dtype(), in[0].device());
      s.inplace_of = 0;
      return std::vector<TensorSpec>{s};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
      cpu::fill(in[0], a.scalar(0));
    })
    .inplace()
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) { return std::vector<Tensor>{zeros_like(c.grad())}; })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({3, 4}, dt)}, {Scalar(1.5)}, "fill"},
          {{samples::make({4, 3}, dt, -3, 3, true)}, {Scalar(2)}, "strided"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return std::vector<Tensor>{full(in[0].sym_sizes(), a.scalar(0), in[0].dtype())};
    });

Tensor empty(SymIntList size, const TensorOptions& o) {
  static const OpDef& op = get_op("empty");
  if (o.pinned_memory()) return finish(empty_pinned("empty", std::move(size), o), o);
  return finish(call_op1(op, {}, factory_attrs(std::move(size), o)), o);
}

Tensor empty_strided(SymIntList size, SymIntList stride, const TensorOptions& o) {
  SymShape sz = std::move(size).get(), st = std::move(stride).get();
  KILN_CHECK(sz.size() == st.size(), "empty_strided: got ", sz.size(), " sizes and ", st.size(),
             " strides");
  int64_t extent = 1;
  for (size_t d = 0; d < sz.size(); ++d) extent += (sz[d].guard_int() - 1) * st[d].guard_int();
  Tensor base = empty({std::max<int64_t>(extent, 0)}, o.requires_grad(false));
  return finish(base.as_strided(sz, st), o);
}

Tensor full(SymIntList size, const Scalar& value, const TensorOptions& o) {
  static const OpDef& op = get_op("full");
  TensorOptions opts = o;
  if (!o.has_dtype())
    opts = o.dtype(value.is_floating_point() ? get_default_dtype() : value.dtype());
  return finish(call_op1(op, {}, {std::move(size).get(), value, opts.dtype(), opts.device()}), o);
}
Tensor zeros(SymIntList size, const TensorOptions& o) {
  return full(std::move(size), 0.0, o.dtype(o.dtype()));
}
Tensor ones(SymIntList size, const TensorOptions& o) {
  return full(std::move(size), 1.0, o.dtype(o.dtype()));
}

namespace {
TensorOptions like(const Tensor& t, const TensorOptions& o) {
  TensorOptions r = o;
  if (!o.has_dtype()) r = r.dtype(t.dtype());
  if (!o.has_device()) r = r.device(t.device());
  return r;
}
}  // namespace
Tensor empty_like(const Tensor& t, const TensorOptions& o) {
  return empty(t.sym_sizes(), like(t, o));
}
Tensor zeros_like(const Tensor& t, const TensorOptions& o) {
  return zeros(t.sym_sizes(), like(t, o));
}
Tensor ones_like(const Tensor& t, const TensorOptions& o) {
  return ones(t.sym_sizes(), like(t, o));
}
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& o) {
  return full(t.sym_sizes(), v, like(t, o));
}

Tensor Tensor::new_empty(SymIntList size, const TensorOptions& o) const {
  return empty(std::move(size), like(*this, o));
}
Tensor Tensor::new_zeros(SymIntList size, const TensorOptions& o) const {
  return zeros(std::move(size), like(*this, o));
}
Tensor Tensor::new_ones(SymIntList size, const TensorOptions& o) const {
  return ones(std::move(size), like(*this, o));
}
Tensor Tensor::new_full(SymIntList size, const Scalar& v, const TensorOptions& o) const {
  return full(std::move(size), v, like(*this, o));
}
Tensor Tensor::new_empty_strided(SymIntList size, SymIntList stride, const TensorOptions& o) const {
  return empty_strided(std::move(size), std::move(stride), like(*this, o));
}
// A copy of `data` (detached) with this tensor's dtype and device, as torch's new_tensor.
Tensor Tensor::new_tensor(const Tensor& data) const {
  return data.detach().to(device(), dtype(), false, true);
}

Tensor scalar_tensor(const Scalar& s, const TensorOptions& o) {
  TensorOptions opts =
      o.has_dtype() ? o : o.dtype(s.is_floating_point() ? get_default_dtype() : s.dtype());
  return full({}, s, opts);
}

Tensor wrapped_scalar(const Scalar& s) {
  Tensor t = full({}, s, TensorOptions(s.dtype()).device(Device(kCPU)));
  t.impl()->set_wrapped_number(true);
  return t;
}

namespace {
template <class V>
Tensor from_values(const V& values, SymShape shape, ScalarType natural, const TensorOptions& o) {
  ScalarType dt = o.has_dtype() ? o.dtype() : natural;
  Tensor t = empty(std::move(shape), TensorOptions(dt).device(Device(kCPU)));
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.data_ptr());
    size_t i = 0;
    for (auto v : values) {
      using E = decltype(v);
      if constexpr (std::is_same_v<T, bool>)
        p[i++] = static_cast<bool>(v);
      else if constexpr (std::is_integral_v<T> && std::is_integral_v<E>)
        p[i++] = static_cast<T>(v);
      else
        p[i++] = static_cast<T>(static_cast<double>(v));  // exact for integers to 2^53
    }
  });
  if (o.has_device() && !o.device().is_cpu()) t = t.to(o.device());
  return finish(t, o);
}
ScalarType float_default() { return get_default_dtype(); }
}  // namespace

Tensor tensor(const std::vector<double>& v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, float_default(), o);
}
Tensor tensor(std::initializer_list<double> v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, float_default(), o);
}
Tensor tensor(std::initializer_list<float> v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, float_default(), o);
}
Tensor tensor(const std::vector<float>& v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, float_default(), o);
}
Tensor tensor(std::initializer_list<int> v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, kInt64, o);
}
Tensor tensor(std::initializer_list<int64_t> v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, kInt64, o);
}
Tensor tensor(const std::vector<int64_t>& v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, kInt64, o);
}
Tensor tensor(const std::vector<int>& v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, kInt64, o);
}
Tensor tensor(std::initializer_list<bool> v, const TensorOptions& o) {
  return from_values(v, {static_cast<int64_t>(v.size())}, kBool, o);
}
namespace {
template <class T>
struct is_init_list : std::false_type {};
template <class T>
struct is_init_list<std::initializer_list<T>> : std::true_type {};

// Appends the leaves of a nested list to `flat`, recording each level's length in `shape` and
// checking that siblings agree.
template <class T, class Leaf>
void flatten_nested(std::initializer_list<T> list, size_t depth, std::vector<int64_t>& shape,
                    std::vector<Leaf>& flat) {
  const auto n = static_cast<int64_t>(list.size());
  if (shape.size() == depth) shape.push_back(n);
  KILN_CHECK(shape[depth] == n, "tensor: Expected all sub-lists at depth ", depth,
             " to have length ", shape[depth], ", got one of length ", n);
  for (const T& item : list) {
    if constexpr (is_init_list<T>::value)
      flatten_nested(item, depth + 1, shape, flat);
    else
      flat.push_back(item);
  }
}

template <class Leaf, class List>
Tensor from_nested(List list, ScalarType natural, const TensorOptions& o) {
  std::vector<int64_t> shape;
  std::vector<Leaf> flat;
  flatten_nested(list, 0, shape, flat);
  return from_values(flat, SymShape(shape.begin(), shape.end()), natural, o);
}
}  // namespace
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, const TensorOptions& o) {
  return from_nested<double>(rows, float_default(), o);
}
Tensor tensor(std::initializer_list<std::initializer_list<int>> rows, const TensorOptions& o) {
  return from_nested<int>(rows, kInt64, o);
}
Tensor tensor(NestedList3<double> planes, const TensorOptions& o) {
  return from_nested<double>(planes, float_default(), o);
}
Tensor tensor(NestedList3<int> planes, const TensorOptions& o) {
  return from_nested<int>(planes, kInt64, o);
}
Tensor tensor(NestedList4<double> blocks, const TensorOptions& o) {
  return from_nested<double>(blocks, float_default(), o);
}
Tensor tensor(NestedList4<int> blocks, const TensorOptions& o) {
  return from_nested<int>(blocks, kInt64, o);
}
Tensor tensor(double value, const TensorOptions& o) {
  return from_values(std::vector<double>{value}, {}, float_default(), o);
}
Tensor tensor(int64_t value, const TensorOptions& o) {
  return from_values(std::vector<int64_t>{value}, {}, kInt64, o);
}
Tensor tensor(int value, const TensorOptions& o) {
  return from_values(std::vector<int64_t>{value}, {}, kInt64, o);
}

namespace {
// from_blob does not go through the dispatcher, so it names itself in core errors.
Tensor wrap_blob(void* data, IntArrayRef sizes, IntArrayRef strides,
                 std::function<void(void*)> deleter, const TensorOptions& o) {
  KILN_CHECK(sizes.size() == strides.size(), "from_blob: got ", sizes.size(), " sizes and ",
             strides.size(), " strides");
  SymShape sz(sizes.begin(), sizes.end()), st(strides.begin(), strides.end());
  try {
    const int64_t nbytes = layout_nbytes(sz, st, 0, element_size(o.dtype()));
    auto storage = std::make_shared<StorageImpl>(data, static_cast<size_t>(nbytes), o.device(),
                                                 std::move(deleter));
    return finish(Tensor(std::make_shared<TensorImpl>(std::move(storage), o.dtype(), std::move(sz),
                                                      std::move(st))),
                  o);
  } catch (...) {
    detail::rethrow_in("from_blob", "");
  }
}
}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o) {
  return wrap_blob(data, sizes, strides, nullptr, o);
}
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& o) {
  return from_blob(data, sizes, std::function<void(void*)>(), o);
}
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 const TensorOptions& o) {
  std::vector<int64_t> strides;
  try {
    strides = contiguous_strides(sizes.vec());
  } catch (...) {
    detail::rethrow_in("from_blob", "");
  }
  return wrap_blob(data, sizes, strides, std::move(deleter), o);
}

Tensor clone(const Tensor& t) {
  static const OpDef& op = get_op("clone");
  return call_op1(op, {t}, {});
}
Tensor to(const Tensor& t, Device device, ScalarType dtype, bool non_blocking) {
  static const OpDef& op = get_op("_to_copy");
  if (non_blocking && device.is_cpu() && !t.is_cpu() &&
      !(GradMode::is_enabled() && t.requires_grad()))
    if (Tensor out = empty_pinned_if_available(t.sizes(), dtype, t.device()); out.defined())
      return out.copy_(t, /*non_blocking=*/true);  // as PyTorch: into pinned memory
  if (non_blocking) return call_op1(op, {t}, {dtype, device, true});
  return call_op1(op, {t}, {dtype, device});
}
Tensor to(const Tensor& t, ScalarType dtype) { return to(t, t.device(), dtype); }
Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking) {
  static const OpDef& op = get_op("copy_");
  if (non_blocking) {
    call_op(op, {self, src}, {true});
  } else {
    call_op(op, {self, src}, {});
  }
  return self;
}
Tensor& fill_(Tensor& self, const Scalar& v) {
  static const OpDef& op = get_op("fill_");
  call_op(op, {self}, {v});
  return self;
}
Tensor& zero_(Tensor& self) { return fill_(self, 0); }

// ---- Tensor methods ----
Tensor Tensor::to(ScalarType dtype, bool, bool copy) const {
  if (dtype == this->dtype() && !copy) return *this;
  return kiln::to(*this, device(), dtype);
}
Tensor Tensor::to(Device d, bool non_blocking, bool copy) const {
  if (d == device() && !copy) return *this;
  return kiln::to(*this, d, dtype(), non_blocking);
}
Tensor Tensor::to(Device d, ScalarType dt, bool non_blocking, bool copy) const {
  if (d == device() && dt == dtype() && !copy) return *this;
  return kiln::to(*this, d, dt, non_blocking);
}
Tensor Tensor::to(const TensorOptions& o, bool nb, bool copy) const {
  Tensor r =
      to(o.has_device() ? o.device() : device(), o.has_dtype() ? o.dtype() : dtype(), nb, copy);
  if (o.requires_grad()) r.requires_grad_(true);
  return r;
}
Tensor Tensor::to(const Tensor& other) const { return to(other.device(), other.dtype()); }
Tensor Tensor::contiguous(MemoryFormat format) const { return kiln::contiguous(*this, format); }
Tensor Tensor::clone() const { return kiln::clone(*this); }
Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) const {
  return kiln::copy_(const_cast<Tensor&>(*this), src, non_blocking);
}
Tensor& Tensor::fill_(const Scalar& v) const { return kiln::fill_(const_cast<Tensor&>(*this), v); }
Tensor& Tensor::fill_(const Tensor& v) const {
  KILN_CHECK(v.dim() == 0, "fill_: only supports 0-dimension value tensor but got tensor with ",
             v.dim(), " dimensions");
  return kiln::fill_(const_cast<Tensor&>(*this), v.item());
}
Tensor& Tensor::zero_() const { return kiln::zero_(const_cast<Tensor&>(*this)); }

}  // namespace kiln
