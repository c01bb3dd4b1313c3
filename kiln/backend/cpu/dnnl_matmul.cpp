#include "kiln/backend/cpu/dnnl_matmul.h"

#include <array>
#include <atomic>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

namespace kiln::cpu::onednn {
namespace {

using DnnlType = dnnl::memory::data_type;

std::optional<DnnlType> dnnl_type(ScalarType t) {
  switch (t) {
    case kFloat32:
      return DnnlType::f32;
    case kBFloat16:
      return DnnlType::bf16;
    case kFloat16:
      return DnnlType::f16;
    case kInt8:
      return DnnlType::s8;
    case kInt32:
      return DnnlType::s32;
    default:
      return std::nullopt;
  }
}

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// Strides of size-1 dims are arbitrary in Kiln but oneDNN's implementations recognise layouts by
// them, so such dims get the stride a dense layout would give them.
dnnl::memory::dims normalized_strides(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (rows == 1) rs = cs == 1 ? std::max<int64_t>(cols, 1) : 1;
  if (cols == 1) cs = rs == 1 ? std::max<int64_t>(rows, 1) : 1;
  if (rows == 1 && cols == 1) rs = cs = 1;
  return {rows * cols, rs, cs};
}

// A batch of matrices; a repeated matrix (batch stride 0) is a batch of one that oneDNN broadcasts.
dnnl::memory::desc matrix_desc(DnnlType type, int64_t batch, int64_t rows, int64_t cols,
                               const MatrixRef& r) {
  dnnl::memory::dims strides = normalized_strides(rows, cols, r.row_stride, r.col_stride);
  const bool repeated = batch == 1 || r.batch_stride == 0;
  if (!repeated) strides[0] = r.batch_stride;
  return dnnl::memory::desc({repeated ? 1 : batch, rows, cols}, type, strides);
}

std::optional<dnnl::matmul::primitive_desc> make_primitive_desc(const GemmArgs& g) {
  std::optional<DnnlType> type = dnnl_type(g.dtype), c_type = dnnl_type(g.out_dtype());
  if (!type || !c_type || g.dtype == kInt32) return std::nullopt;
  try {
    dnnl::memory::desc a = matrix_desc(*type, g.batch, g.m, g.k, g.a);
    dnnl::memory::desc b = matrix_desc(*type, g.batch, g.k, g.n, g.b);
    dnnl::memory::dims c_strides = {g.batch == 1 ? g.m * g.ldc : g.c_batch_stride,
                                    g.m == 1 ? std::max<int64_t>(g.n, 1) : g.ldc, 1};
    dnnl::memory::desc c({g.batch, g.m, g.n}, *c_type, c_strides);
    dnnl::primitive_attr attr;
    if (g.alpha != 1) attr.set_output_scales(0, {static_cast<float>(g.alpha)});
    if (g.beta != 0) {
      dnnl::post_ops ops;
      ops.append_sum(static_cast<float>(g.beta));
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, cpu_engine());
    // The reference implementation is correct but far slower than converting to float32.
    if (std::string_view(pd.impl_info_str()).starts_with("ref")) return std::nullopt;
    return pd;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

// The primitive for a product's shape, layout and scaling, made once: making one (its
// implementation search and JIT) takes about 80 us, which a 32 x 32 product would pay on every
// call. nullopt: oneDNN has only its reference implementation for it.
struct Matmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};
std::optional<Matmul> cached_primitive(const GemmArgs& g) {
  using Key = std::pair<std::array<int64_t, 14>, std::array<double, 2>>;
  const Key key = {{static_cast<int64_t>(g.dtype), static_cast<int64_t>(g.out_dtype()), g.batch,
                    g.m, g.n, g.k, g.a.row_stride, g.a.col_stride, g.a.batch_stride, g.b.row_stride,
                    g.b.col_stride, g.b.batch_stride, g.c_batch_stride, g.ldc},
                   {g.alpha, g.beta}};
  static std::mutex mutex;
  static std::map<Key, std::optional<Matmul>> cache;
  constexpr size_t kCapacity = 1024;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kCapacity) cache.clear();
  std::optional<Matmul> made;
  if (std::optional<dnnl::matmul::primitive_desc> pd = make_primitive_desc(g))
    made = Matmul{*pd, dnnl::matmul(*pd)};
  return cache.emplace(key, made).first->second;
}

}  // namespace

bool has_matmul(ScalarType dtype) {
  enum : int { kUnknown = 0, kNo = 1, kYes = 2 };
  static std::atomic<int> known[kNumScalarTypes];  // zero-initialised: kUnknown
  std::atomic<int>& slot = known[static_cast<int>(dtype)];
  int v = slot.load(std::memory_order_relaxed);
  if (v == kUnknown) {
    GemmArgs probe;
    probe.dtype = dtype;
    if (dtype == kInt8) probe.c_dtype = kInt32;  // _int_mm's product
    probe.m = probe.n = probe.k = 16;
    probe.a = {nullptr, 256, 16, 1};
    probe.b = {nullptr, 256, 16, 1};
    probe.c_batch_stride = 256;
    probe.ldc = 16;
    v = make_primitive_desc(probe).has_value() ? kYes : kNo;
    slot.store(v, std::memory_order_relaxed);
  }
  return v == kYes;
}

bool matmul(const GemmArgs& g) {
  if (!has_matmul(g.dtype)) return false;
  try {
    const std::optional<Matmul> m = cached_primitive(g);
    if (!m) return false;
    const dnnl::matmul::primitive_desc& pd = m->pd;
    const dnnl::engine& engine = cpu_engine();
    dnnl::memory a(pd.src_desc(), engine, const_cast<void*>(g.a.data));
    dnnl::memory b(pd.weights_desc(), engine, const_cast<void*>(g.b.data));
    dnnl::memory c(pd.dst_desc(), engine, g.c);
    dnnl::stream stream(engine);
    m->primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace kiln::cpu::onednn
