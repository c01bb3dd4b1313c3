// all, any, count_nonzero.
#include "kiln/backend/cpu/reduce.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// Truth of all (kAll) or any element, one byte per output (bool and uint8 outputs alike).
template <class T, bool kAll>
struct LogicalReducer {
  using C = cpu::compute_t<T>;
  using Lane = uint8_t;
  using Acc = uint8_t;
  uint8_t* out;

  Lane lane_init() const { return kAll ? 1 : 0; }
  Lane fold(Lane a, C v) const {
    const uint8_t nonzero = v != C(0);
    return kAll ? (a & nonzero) : (a | nonzero);
  }
  Lane merge(Lane a, Lane b) const { return kAll ? (a & b) : (a | b); }
  Acc acc_init() const { return lane_init(); }
  Acc add_lane(Acc a, Lane l) const { return kAll ? (a & l) : (a | l); }
  Acc combine(Acc a, Acc b) const { return add_lane(a, b); }
  void write(int64_t o, Acc a, int64_t) const { out[o] = a; }
};

template <class T>
struct CountReducer {
  using C = cpu::compute_t<T>;
  using Lane = int64_t;
  using Acc = int64_t;
  int64_t* out;

  Lane lane_init() const { return 0; }
  Lane fold(Lane a, C v) const { return a + (v != C(0) ? 1 : 0); }
  Lane merge(Lane a, Lane b) const { return a + b; }
  Acc acc_init() const { return 0; }
  Acc add_lane(Acc a, Lane l) const { return a + l; }
  Acc combine(Acc a, Acc b) const { return a + b; }
  void write(int64_t o, Acc a, int64_t) const { out[o] = a; }
};

template <bool kAll>
void register_logical(const char* op) {
  register_op(op)
      .schema(std::string(op) + "(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor")
      .meta([op](const std::vector<Tensor>& in, const Attrs& a) {
        const Tensor& x = in[0];
        auto dims = reduce::reduced_dims(op, a.ints(0), x.dim());
        ScalarType dt = x.dtype() == kUInt8 ? kUInt8 : kBool;
        return meta::one_spec(reduce::reduced_shape(x, dims, a.b(1)), dt, x.device());
      })
      .cpu([op](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        auto dims = reduce::reduced_dims(op, a.ints(0), in[0].dim());
        cpu::visit_all(in[0].dtype(), op, [&](auto tag) {
          using T = decltype(tag);
          auto* o = static_cast<uint8_t*>(out[0].data_ptr());
          cpu::reduce_elementwise<T>(in[0], dims, LogicalReducer<T, kAll>{o});
        });
      })
      .samples([](ScalarType dt) {
        using V = std::vector<int64_t>;
        reduce::SampleOptions opt;
        opt.low = -1;
        opt.high = 1.5;
        auto s = reduce::samples(dt, opt, [](const V& dims, bool keepdim) {
          return Attrs{dims, keepdim};
        });
        Tensor z =
            tensor({{0.0, 1.0, 2.0}, {0.0, 0.0, 0.0}, {1.0, -1.0, 0.5}}, TensorOptions(kFloat64))
                .to(dt);
        s.push_back({{z}, {V{1}, false}, "zeros per row"});
        s.push_back({{z}, {V{0}, true}, "zeros per column"});
        return s;
      })
      .error_samples([] {
        return reduce::error_samples({}, [](const std::vector<int64_t>& dims, bool keepdim) {
          return Attrs{dims, keepdim};
        });
      })
      .reference([op](const std::vector<Tensor>& in, const Attrs& a) {
        auto dims = reduce::reduced_dims(op, a.ints(0), in[0].dim());
        return std::vector<Tensor>{reduce::reference(in[0], dims, a.b(1), [](const auto& v) {
          bool r = kAll;
          for (double e : v) r = kAll ? (r && e != 0) : (r || e != 0);
          return r ? 1.0 : 0.0;
        })};
      })
      .dtypes({kFloat64, kFloat32, kBFloat16, kInt64, kInt32, kBool, kUInt8})
      .lowering(std::string("reduction:") + op);
}

[[maybe_unused]] const bool registered = [] {
  register_logical<true>("all");
  register_logical<false>("any");
  return true;
}();

}  // namespace

KILN_REGISTER_OP(count_nonzero)
    .schema("count_nonzero(Tensor self, int[] dim=[]) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      auto dims = reduce::reduced_dims("count_nonzero", a.ints(0), in[0].dim());
      return meta::one_spec(reduce::reduced_shape(in[0], dims, false), kInt64, in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      auto dims = reduce::reduced_dims("count_nonzero", a.ints(0), in[0].dim());
      cpu::visit_all(in[0].dtype(), "count_nonzero", [&](auto tag) {
        using T = decltype(tag);
        cpu::reduce_elementwise<T>(in[0], dims, CountReducer<T>{out[0].data_ptr<int64_t>()});
      });
    })
    .samples([](ScalarType dt) {
      using V = std::vector<int64_t>;
      reduce::SampleOptions opt;
      opt.low = -1;
      opt.high = 1.5;
      auto s = reduce::samples(dt, opt, [](const V& dims, bool) { return Attrs{dims}; });
      Tensor z = tensor({{0.0, 1.0, 2.0}, {0.0, 0.0, 0.0}}, TensorOptions(kFloat64)).to(dt);
      s.push_back({{z}, {V{1}}, "zeros per row"});
      return s;
    })
    .error_samples([] {
      return reduce::error_samples(
          {}, [](const std::vector<int64_t>& dims, bool) { return Attrs{dims}; });
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      auto dims = reduce::reduced_dims("count_nonzero", a.ints(0), in[0].dim());
      return std::vector<Tensor>{reduce::reference(in[0], dims, false, [](const auto& v) {
        double n = 0;
        for (double e : v) n += e != 0;
        return n;
      })};
    })
    .dtypes({kFloat64, kFloat32, kBFloat16, kInt64, kInt32, kBool})
    .lowering("reduction:count_nonzero");

namespace {
Tensor call_logical(const char* name, const Tensor& self, std::vector<int64_t> dims, bool keepdim) {
  return call_op1(get_op(name), {self}, {std::move(dims), keepdim});
}
}  // namespace

Tensor all(const Tensor& self) { return call_logical("all", self, {}, false); }
Tensor all(const Tensor& self, int64_t dim, bool keepdim) {
  return call_logical("all", self, {dim}, keepdim);
}
Tensor all(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call_logical("all", self, dim.vec(), keepdim);
}
Tensor any(const Tensor& self) { return call_logical("any", self, {}, false); }
Tensor any(const Tensor& self, int64_t dim, bool keepdim) {
  return call_logical("any", self, {dim}, keepdim);
}
Tensor any(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call_logical("any", self, dim.vec(), keepdim);
}
Tensor count_nonzero(const Tensor& self, IntArrayRef dim) {
  static const OpDef& op = get_op("count_nonzero");
  return call_op1(op, {self}, {dim.vec()});
}
Tensor count_nonzero(const Tensor& self, int64_t dim) {
  return count_nonzero(self, IntArrayRef(dim));
}

Tensor Tensor::all() const { return kiln::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return kiln::all(*this, dim, keepdim); }
Tensor Tensor::all(IntArrayRef dim, bool keepdim) const { return kiln::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return kiln::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return kiln::any(*this, dim, keepdim); }
Tensor Tensor::any(IntArrayRef dim, bool keepdim) const { return kiln::any(*this, dim, keepdim); }
Tensor Tensor::count_nonzero(IntArrayRef dim) const { return kiln::count_nonzero(*this, dim); }
Tensor Tensor::count_nonzero(int64_t dim) const { return kiln::count_nonzero(*this, dim); }

}  // namespace kiln
