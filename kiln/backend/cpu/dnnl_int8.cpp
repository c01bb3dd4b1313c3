#include "kiln/backend/cpu/dnnl_int8.h"

#include <array>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cpu::onednn {
namespace {

using dnnl::memory;
using Type = memory::data_type;
using Tag = memory::format_tag;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool is_reference(const char* impl) { return std::string_view(impl).starts_with("ref"); }

// Scales per output channel (dim 1 of the destination) and the source's zero point. oneDNN 2.6
// has int8 convolutions only for scales known when the primitive is made, and its AMX/VNNI
// matmuls (2.5x its gemm) likewise, so the scales are part of the primitive and of its cache key;
// the zero point is given at execution.
dnnl::primitive_attr int8_attr(const std::vector<float>& scales) {
  dnnl::primitive_attr attr;
  attr.set_output_scales(1 << 1, scales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  return attr;
}

// A primitive with the layouts it chose, made once per shape (making one runs its JIT).
struct Entry {
  dnnl::primitive prim;
  memory::desc src, weights, dst;
};

template <class Key, class Make>
std::optional<Entry> cached(const Key& key, Make&& make) {
  static std::mutex mutex;
  static std::map<Key, std::optional<Entry>> cache;
  constexpr size_t kCapacity = 1024;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kCapacity) cache.clear();
  std::optional<Entry> made;
  try {
    made = make();
  } catch (const dnnl::error&) {
    made.reset();
  }
  return cache.emplace(key, made).first->second;
}

// Runs `e`, reordering from and to the callers' layouts where the primitive chose others.
bool run(const Entry& e, const memory::desc& user_src, const void* x, const memory::desc& user_w,
         const void* w, int64_t channels, const float* bias, const memory::desc& user_dst, float* y,
         int32_t src_zero_point) {
  try {
    const dnnl::engine& engine = cpu_engine();
    dnnl::stream stream(engine);
    auto in = [&](const memory::desc& want, const memory::desc& have, const void* data) {
      memory user(have, engine, const_cast<void*>(data));
      if (want == have) return user;
      memory m(want, engine);
      dnnl::reorder(user, m).execute(stream, user, m);
      return m;
    };
    memory src = in(e.src, user_src, x), wei = in(e.weights, user_w, w);
    memory user_y(user_dst, engine, y);
    memory dst = e.dst == user_dst ? user_y : memory(e.dst, engine);
    memory bias_m(memory::desc({channels}, Type::f32, Tag::a), engine, const_cast<float*>(bias));
    memory zero_point(memory::desc({1}, Type::s32, Tag::a), engine, &src_zero_point);
    e.prim.execute(stream, {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_WEIGHTS, wei},
                            {DNNL_ARG_BIAS, bias_m},
                            {DNNL_ARG_DST, dst},
                            {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zero_point}});
    if (!(e.dst == user_dst)) dnnl::reorder(dst, user_y).execute(stream, dst, user_y);
    stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

bool int8_linear(int64_t m, int64_t n, int64_t k, const uint8_t* x, int32_t x_zero_point,
                 const int8_t* w, const float* scales, const float* bias, float* y) {
  const memory::desc src({m, k}, Type::u8, Tag::ab), wei({k, n}, Type::s8, Tag::ba),
      dst({m, n}, Type::f32, Tag::ab);
  std::vector<float> s(scales, scales + n);
  using Key = std::pair<std::array<int64_t, 3>, std::vector<float>>;
  const std::optional<Entry> e = cached(Key{{m, n, k}, s}, [&]() {
    const memory::desc b({1, n}, Type::f32, Tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, b, dst), int8_attr(s),
                                    cpu_engine());
    if (is_reference(pd.impl_info_str())) return std::optional<Entry>();
    return std::optional<Entry>(
        Entry{dnnl::matmul(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc()});
  });
  if (!e) return false;
  return run(*e, src, x, wei, w, n, bias, dst, y, x_zero_point);
}

bool int8_conv(const ConvGeometry& g, const uint8_t* x, int32_t x_zero_point, const int8_t* w,
               const float* scales, const float* bias, float* y) {
  if (g.nd != 2) return false;
  const memory::dims src_dims{g.batch, g.in_channels, g.in[1], g.in[2]},
      dst_dims{g.batch, g.out_channels, g.out[1], g.out[2]};
  const memory::dims w_dims =
      g.groups == 1 ? memory::dims{g.out_channels, g.in_channels, g.kernel[1], g.kernel[2]}
                    : memory::dims{g.groups, g.out_channels / g.groups, g.in_channels / g.groups,
                                   g.kernel[1], g.kernel[2]};
  const memory::desc src(src_dims, Type::u8, Tag::nchw), dst(dst_dims, Type::f32, Tag::nchw),
      wei(w_dims, Type::s8, g.groups == 1 ? Tag::oihw : Tag::goihw);
  std::vector<float> s(scales, scales + g.out_channels);
  using Key = std::pair<std::array<int64_t, 14>, std::vector<float>>;
  const Key key{
      {g.batch, g.in_channels, g.out_channels, g.groups, g.in[1], g.in[2], g.out[1], g.out[2],
       g.kernel[1], g.kernel[2], g.stride[1], g.stride[2], g.dilation[1], g.dilation[2]},
      s};
  const std::optional<Entry> e = cached(key, [&]() {
    auto any = [](const memory::desc& d) {
      return memory::desc(d.dims(), d.data_type(), Tag::any);
    };
    const memory::desc b({g.out_channels}, Type::f32, Tag::a);
    dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, any(src), any(wei), b,
                                        any(dst), {g.stride[1], g.stride[2]},
                                        {g.dilation[1] - 1, g.dilation[2] - 1},
                                        {g.pad[1], g.pad[2]}, {g.pad_high(1), g.pad_high(2)}),
        int8_attr(s), cpu_engine());
    if (is_reference(pd.impl_info_str())) return std::optional<Entry>();
    return std::optional<Entry>(
        Entry{dnnl::convolution_forward(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc()});
  });
  if (!e) return false;
  return run(*e, src, x, wei, w, g.out_channels, bias, dst, y, x_zero_point);
}

}  // namespace kiln::cpu::onednn
