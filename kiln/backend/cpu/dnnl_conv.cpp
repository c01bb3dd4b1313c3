#include "kiln/backend/cpu/dnnl_conv.h"

#include <atomic>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <tuple>

namespace kiln::cpu::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

enum class Kind { Forward, BackwardData, BackwardWeight };

std::optional<memory::data_type> dnnl_type(ScalarType t) {
  if (t == kFloat32) return memory::data_type::f32;
  if (t == kBFloat16) return memory::data_type::bf16;
  return std::nullopt;
}

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::dims spatial(const ConvGeometry& g, const int64_t* v, int64_t offset = 0) {
  memory::dims d;
  for (int i = 3 - g.nd; i < 3; ++i) d.push_back(v[i] + offset);
  return d;
}

memory::dims cat(memory::dims a, const memory::dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The user's (contiguous) layouts: activations N, C, spatial; weights [G,] O, I, spatial.
struct Descs {
  memory::desc src, weights, dst;
};

Descs user_descs(const ConvGeometry& g, memory::data_type t) {
  static constexpr Tag act[] = {Tag::ncw, Tag::nchw, Tag::ncdhw};
  static constexpr Tag wei[] = {Tag::oiw, Tag::oihw, Tag::oidhw};
  static constexpr Tag gwei[] = {Tag::goiw, Tag::goihw, Tag::goidhw};
  const memory::dims k = spatial(g, g.kernel);
  memory::dims wdims =
      g.groups == 1 ? cat({g.out_channels, g.in_channels}, k)
                    : cat({g.groups, g.out_channels / g.groups, g.in_channels / g.groups}, k);
  return {memory::desc(cat({g.batch, g.in_channels}, spatial(g, g.in)), t, act[g.nd - 1]),
          memory::desc(wdims, t, g.groups == 1 ? wei[g.nd - 1] : gwei[g.nd - 1]),
          memory::desc(cat({g.batch, g.out_channels}, spatial(g, g.out)), t, act[g.nd - 1])};
}

// One cached primitive with the layouts it wants.
struct Entry {
  dnnl::primitive prim;
  memory::desc src, weights, dst;  // src/weights/dst or their diff_ counterparts
};

struct Key {
  ConvGeometry g;
  ScalarType dtype;
  Kind kind;
  bool operator<(const Key& o) const {
    auto tie = [](const Key& k) {
      const ConvGeometry& g = k.g;
      return std::tuple(
          static_cast<int>(k.dtype), static_cast<int>(k.kind), g.nd, g.batch, g.in_channels,
          g.out_channels, g.groups,
          std::tuple(g.in[0], g.in[1], g.in[2], g.out[0], g.out[1], g.out[2]),
          std::tuple(g.kernel[0], g.kernel[1], g.kernel[2], g.stride[0], g.stride[1], g.stride[2]),
          std::tuple(g.pad[0], g.pad[1], g.pad[2], g.dilation[0], g.dilation[1], g.dilation[2]));
    };
    return tie(*this) < tie(o);
  }
};

std::optional<Entry> make_entry(const Key& key) {
  const ConvGeometry& g = key.g;
  std::optional<memory::data_type> t = dnnl_type(key.dtype);
  if (!t) return std::nullopt;
  try {
    const Descs u = user_descs(g, *t);
    auto any = [](const memory::desc& d) {
      return memory::desc(d.dims(), d.data_type(), Tag::any);
    };
    const memory::dims strides = spatial(g, g.stride), dil = spatial(g, g.dilation, -1);
    const memory::dims pad_l = spatial(g, g.pad);
    memory::dims pad_r;
    for (int i = 3 - g.nd; i < 3; ++i) pad_r.push_back(g.pad_high(i));
    const auto algo = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, any(u.src),
                                        any(u.weights), any(u.dst), strides, dil, pad_l, pad_r),
        cpu_engine());
    auto is_ref = [](const char* impl) { return std::string_view(impl).starts_with("ref"); };
    switch (key.kind) {
      case Kind::Forward:
        if (is_ref(fwd.impl_info_str())) return std::nullopt;
        return Entry{dnnl::convolution_forward(fwd), fwd.src_desc(), fwd.weights_desc(),
                     fwd.dst_desc()};
      case Kind::BackwardData: {
        dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(algo, any(u.src), any(u.weights), any(u.dst),
                                                  strides, dil, pad_l, pad_r),
            cpu_engine(), fwd);
        if (is_ref(pd.impl_info_str())) return std::nullopt;
        return Entry{dnnl::convolution_backward_data(pd), pd.diff_src_desc(), pd.weights_desc(),
                     pd.diff_dst_desc()};
      }
      case Kind::BackwardWeight: {
        dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(algo, any(u.src), any(u.weights), any(u.dst),
                                                     strides, dil, pad_l, pad_r),
            cpu_engine(), fwd);
        if (is_ref(pd.impl_info_str())) return std::nullopt;
        return Entry{dnnl::convolution_backward_weights(pd), pd.src_desc(), pd.diff_weights_desc(),
                     pd.diff_dst_desc()};
      }
    }
  } catch (const dnnl::error&) {
  }
  return std::nullopt;
}

// Entries live for the process (the set of shapes a program uses is small).
const Entry* lookup(const Key& key) {
  static std::mutex mu;
  static std::map<Key, std::optional<Entry>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_entry(key)).first;
  return it->second ? &*it->second : nullptr;
}

// A user buffer in the layout the primitive wants: the buffer itself, or a reordered copy.
struct Operand {
  memory user, prim;
  bool reordered() const { return user.get_desc() != prim.get_desc(); }
};

Operand operand(const memory::desc& user_desc, const memory::desc& want, const void* data) {
  memory user(user_desc, cpu_engine(), const_cast<void*>(data));
  if (user_desc == want) return {user, user};
  return {user, memory(want, cpu_engine())};
}

// Runs `e` with arguments (a, b) -> c, where the slots name which of src/weights/dst each is.
bool run(const Key& key, int a_arg, const void* a, int b_arg, const void* b, int c_arg, void* c) {
  const Entry* e = lookup(key);
  if (e == nullptr) return false;
  const Descs u = user_descs(key.g, *dnnl_type(key.dtype));
  auto pick = [&](int arg, const Descs& d,
                  const Entry& en) -> std::pair<memory::desc, memory::desc> {
    switch (arg) {
      case DNNL_ARG_SRC:
      case DNNL_ARG_DIFF_SRC:
        return {d.src, en.src};
      case DNNL_ARG_WEIGHTS:
      case DNNL_ARG_DIFF_WEIGHTS:
        return {d.weights, en.weights};
      default:
        return {d.dst, en.dst};
    }
  };
  try {
    dnnl::stream stream(cpu_engine());
    auto [ua, pa] = pick(a_arg, u, *e);
    auto [ub, pb] = pick(b_arg, u, *e);
    auto [uc, pc] = pick(c_arg, u, *e);
    Operand A = operand(ua, pa, a), B = operand(ub, pb, b), C = operand(uc, pc, c);
    if (A.reordered()) dnnl::reorder(A.user, A.prim).execute(stream, A.user, A.prim);
    if (B.reordered()) dnnl::reorder(B.user, B.prim).execute(stream, B.user, B.prim);
    e->prim.execute(stream, {{a_arg, A.prim}, {b_arg, B.prim}, {c_arg, C.prim}});
    if (C.reordered()) dnnl::reorder(C.prim, C.user).execute(stream, C.prim, C.user);
    stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

bool has_conv(ScalarType dtype) {
  enum : int { kUnknown = 0, kNo = 1, kYes = 2 };
  static std::atomic<int> known[kNumScalarTypes];
  std::atomic<int>& slot = known[static_cast<int>(dtype)];
  int v = slot.load(std::memory_order_relaxed);
  if (v == kUnknown) {
    ConvGeometry g;
    g.batch = 2;
    g.in_channels = g.out_channels = 16;
    g.in[1] = g.in[2] = 8;
    g.out[1] = g.out[2] = 6;
    g.kernel[1] = g.kernel[2] = 3;
    v = dnnl_type(dtype) && lookup({g, dtype, Kind::Forward}) ? kYes : kNo;
    slot.store(v, std::memory_order_relaxed);
  }
  return v == kYes;
}

bool conv_forward(const ConvGeometry& g, ScalarType dt, const void* x, const void* w, void* y) {
  return has_conv(dt) &&
         run({g, dt, Kind::Forward}, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DST, y);
}
bool conv_backward_data(const ConvGeometry& g, ScalarType dt, const void* gy, const void* w,
                        void* gx) {
  return has_conv(dt) && run({g, dt, Kind::BackwardData}, DNNL_ARG_DIFF_DST, gy, DNNL_ARG_WEIGHTS,
                             w, DNNL_ARG_DIFF_SRC, gx);
}
bool conv_backward_weight(const ConvGeometry& g, ScalarType dt, const void* gy, const void* x,
                          void* gw) {
  return has_conv(dt) && run({g, dt, Kind::BackwardWeight}, DNNL_ARG_DIFF_DST, gy, DNNL_ARG_SRC, x,
                             DNNL_ARG_DIFF_WEIGHTS, gw);
}

}  // namespace kiln::cpu::onednn
