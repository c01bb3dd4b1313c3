#include "kiln/backend/cuda/random.h"

#include <cmath>
#include <initializer_list>
#include <utility>
#include <vector>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/generator.h"
#include "kiln/core/grad_mode.h"
#include "kiln/core/philox.h"
#include "kiln/ops/nn/dropout.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

constexpr unsigned kThreads = 256;

// Note [Fused multiply-adds]: libkiln's CPU kernels are compiled for x86-64-v3 with GCC's default
// -ffp-contract=fast, so their a * b + c is one fused rounding; NVRTC compiles these kernels with
// --fmad=false, so the kernels fuse the same expressions explicitly with std::fma.

// What every random kernel shares: element slot k's uniform and bits, and the walk over the
// draw's Philox blocks, one block per thread, as random_cpu::for_each_block walks them.
constexpr const char* kPrelude = R"cuda(
using kiln::philox::Words;

// 53 bits from words 2k and 2k + 1 when an element owns two words, else the top Digits bits of
// word k.
template <int Digits = 24>
__device__ auto uniform_at(const Words& w, int k) {
  if constexpr (kWords == 2)
    return kiln::philox::uniform_double(w.w[2 * k], w.w[2 * k + 1]);
  else
    return kiln::philox::uniform_float<Digits>(w.w[k]);
}

__device__ uint64_t bits_at(const Words& w, int k) {
  return kWords == 2 ? kiln::philox::bits64(w.w[2 * k], w.w[2 * k + 1]) : w.w[k];
}

// body(words, first, count) for each block of the draw of n elements: elements
// first .. first + count - 1 own the block's words.
template <class Body>
__device__ void for_each_block(int64_t n, uint64_t seed, uint64_t offset, const Body& body) {
  const int64_t blocks = (n + kPerBlock - 1) / kPerBlock;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
       b += step) {
    const int64_t first = b * kPerBlock;
    const int count = n - first < kPerBlock ? static_cast<int>(n - first) : kPerBlock;
    body(kiln::philox::block(seed, offset + static_cast<uint64_t>(b)), first, count);
  }
}
)cuda";

// Rounding u * (to - from) + from (fused: Note [Fused multiply-adds]) to T can reach `to`; that
// value becomes `from`.
constexpr const char* kUniform = R"cuda(
extern "C" __global__ void KERNEL(T* out, int64_t n, uint64_t seed, uint64_t offset, double from,
                                  double to) {
  const C lo = static_cast<C>(from), range = static_cast<C>(to - from);
  for_each_block(n, seed, offset, [&](const Words& w, int64_t first, int count) {
    for (int k = 0; k < count; ++k) {
      const C u = uniform_at<kUniformDigits>(w, k);
      const T v = static_cast<T>(std::fma(u, range, lo));
      out[first + k] = static_cast<double>(static_cast<C>(v)) >= to ? static_cast<T>(lo) : v;
    }
  });
}
)cuda";

// Box-Muller on the block's element pairs (2k, 2k + 1); an odd last element still uses the words
// its partner would have had. mean + std * z is fused (Note [Fused multiply-adds]).
constexpr const char* kNormal = R"cuda(
extern "C" __global__ void KERNEL(T* out, int64_t n, uint64_t seed, uint64_t offset, double mean,
                                  double stddev) {
  const C mu = static_cast<C>(mean), sigma = static_cast<C>(stddev);
  for_each_block(n, seed, offset, [&](const Words& w, int64_t first, int count) {
    C z[kPerBlock];
    for (int k = 0; k < kPerBlock; k += 2)
      kiln::philox::box_muller<C>(uniform_at(w, k), uniform_at(w, k + 1), z[k], z[k + 1]);
    for (int k = 0; k < count; ++k) out[first + k] = static_cast<T>(std::fma(sigma, z[k], mu));
  });
}
)cuda";

constexpr const char* kExponential = R"cuda(
extern "C" __global__ void KERNEL(T* out, int64_t n, uint64_t seed, uint64_t offset,
                                  double lambd) {
  const C scale = static_cast<C>(1.0 / lambd);
  for_each_block(n, seed, offset, [&](const Words& w, int64_t first, int count) {
    for (int k = 0; k < count; ++k)
      out[first + k] = static_cast<T>(-std::log1p(-static_cast<C>(uniform_at(w, k))) * scale);
  });
}
)cuda";

constexpr const char* kIntegers = R"cuda(
extern "C" __global__ void KERNEL(T* out, int64_t n, uint64_t seed, uint64_t offset, int64_t from,
                                  uint64_t range) {
  for_each_block(n, seed, offset, [&](const Words& w, int64_t first, int count) {
    for (int k = 0; k < count; ++k) {
      const auto v = static_cast<int64_t>(static_cast<uint64_t>(from) + bits_at(w, k) % range);
      out[first + k] = static_cast<T>(static_cast<C>(v));
    }
  });
}
)cuda";

constexpr const char* kBernoulli = R"cuda(
extern "C" __global__ void KERNEL(T* out, int64_t n, uint64_t seed, uint64_t offset, double p) {
  for_each_block(n, seed, offset, [&](const Words& w, int64_t first, int count) {
    for (int k = 0; k < count; ++k) {
      const double u = uniform_at(w, k);
      out[first + k] = static_cast<T>(u < p ? 1 : 0);
    }
  });
}
)cuda";

constexpr const char* kBernoulliTensor = R"cuda(
extern "C" __global__ void KERNEL(T* out, int64_t n, uint64_t seed, uint64_t offset,
                                  const T* probs) {
  for_each_block(n, seed, offset, [&](const Words& w, int64_t first, int count) {
    for (int k = 0; k < count; ++k)
      out[first + k] =
          static_cast<T>(static_cast<C>(uniform_at(w, k)) < static_cast<C>(probs[first + k]) ? 1 : 0);
  });
}
)cuda";

constexpr const char* kDropoutNoise = R"cuda(
extern "C" __global__ void KERNEL(T* out, int64_t n, uint64_t seed, uint64_t offset, double p,
                                  double keep_scale) {
  for_each_block(n, seed, offset, [&](const Words& w, int64_t first, int count) {
    for (int k = 0; k < count; ++k)
      out[first + k] = static_cast<T>(uniform_at(w, k) >= p ? keep_scale : 0.0);
  });
}
)cuda";

// The alpha variants' (x + alpha) * m + offset is fused (Note [Fused multiply-adds]).
constexpr const char* kDropoutApply = R"cuda(
extern "C" __global__ void KERNEL(const T* x, const T* noise, T* out, int64_t n, int64_t inner,
                                  double alpha, double offset) {
  const C a = static_cast<C>(alpha), b = static_cast<C>(offset);
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const C v = static_cast<C>(x[i]), m = static_cast<C>(noise[i / inner]);
    out[i] = static_cast<T>(kAlphaDropout ? std::fma(v + a, m, b) : v * m);
  }
}
)cuda";

struct KernelText {
  const char* name;
  const char* body;
};

KernelText kernel_text(RandomKernel kind) {
  switch (kind) {
    case RandomKernel::Uniform:
      return {"uniform", kUniform};
    case RandomKernel::Normal:
      return {"normal", kNormal};
    case RandomKernel::Exponential:
      return {"exponential", kExponential};
    case RandomKernel::Integers:
      return {"integers", kIntegers};
    case RandomKernel::Bernoulli:
      return {"bernoulli", kBernoulli};
    case RandomKernel::BernoulliTensor:
      return {"bernoulli_tensor", kBernoulliTensor};
    case RandomKernel::DropoutNoise:
      return {"dropout_noise", kDropoutNoise};
  }
  KILN_FAIL("cuda: unknown random kernel");
}

// The bits uniform_ draws for a dtype, so that the value is exact in it.
int significand_bits(ScalarType dt) { return dt == kFloat16 ? 11 : dt == kBFloat16 ? 8 : 24; }

// The kernel `name` from `body`, after the includes and `constants` (dtypes and constants).
std::string source(const char* include, const std::string& constants, const std::string& body,
                   const std::string& name) {
  return std::string("#include <cmath>\n#include <cstdint>\n\n#include \"") + include + "\"\n\n" +
         constants + named_kernel(body, name);
}

std::string element_types(ScalarType dtype) {
  return "using T = " + compiler::storage_type(dtype) +
         ";\nusing C = " + compiler::compute_type(dtype) + ";\n";
}

}  // namespace

std::string random_source(RandomKernel kind, ScalarType dtype, int words, const std::string& name) {
  const bool integral_result = kind == RandomKernel::Integers || kind == RandomKernel::Bernoulli;
  KILN_CHECK(integral_result || is_floating_point(dtype), "cuda: no ", kernel_text(kind).name,
             " kernel for ", dtype);
  KILN_CHECK(words == 1 || words == 2, "cuda: random kernels take 1 or 2 words per element, not ",
             words);
  const std::string constants = element_types(dtype) +
                                "constexpr int kWords = " + std::to_string(words) +
                                ";\nconstexpr int kPerBlock = 4 / kWords;\n"
                                "constexpr int kUniformDigits = " +
                                std::to_string(significand_bits(dtype)) + ";\n";
  return source("kiln/core/philox.h", constants, std::string(kPrelude) + kernel_text(kind).body,
                name);
}

std::string dropout_apply_source(ScalarType dtype, bool alpha_dropout, const std::string& name) {
  KILN_CHECK(is_floating_point(dtype), "cuda: no dropout kernel for ", dtype);
  return source("kiln/core/half.h",
                element_types(dtype) +
                    "constexpr bool kAlphaDropout = " + (alpha_dropout ? "true" : "false") + ";\n",
                kDropoutApply, name);
}

namespace {

using Tensors = std::vector<Tensor>;

// Words per element of a floating draw: 53-bit uniforms for float64.
int value_words(const Tensor& t) { return t.dtype() == kFloat64 ? 2 : 1; }

// Fills `out` with the draw of `kind`, whose arguments follow (out, n, seed, offset) in `args`.
// The Philox blocks come from gen (out's device's default generator when null) exactly as the
// CPU kernel reserves them; elements go in row-major order, through a contiguous temporary when
// out is not contiguous.
void draw(const char* op, RandomKernel kind, const Tensor& out, int words, Generator* gen,
          std::initializer_list<void*> args) {
  const int dev = device_of(out);
  const int64_t n = out.numel();
  const uint64_t blocks = philox::blocks_for(n, words);
  const PhiloxStream stream = generator_or_default(gen, Device(kCUDA, dev)).reserve(blocks);
  if (n == 0) return;
  const Tensor dst = out.is_contiguous() ? out : empty(out.sizes(), out.options());
  const std::string name = std::string("kiln_random_") + kernel_text(kind).name + "_" +
                           std::string(dtype_name(out.dtype())) + "_w" + std::to_string(words);
  const cudaKernel_t fn =
      generated_kernel(dev, name, [&] { return random_source(kind, out.dtype(), words, name); });
  void* data = dst.data_ptr();
  int64_t count = n;
  uint64_t seed = stream.seed, offset = stream.offset;
  std::vector<void*> params = {&data, &count, &seed, &offset};
  params.insert(params.end(), args.begin(), args.end());
  launch_kernel(op, fn, grid_stride_blocks(dev, static_cast<int64_t>(blocks), kThreads),
                dim3(kThreads), params.data());
  if (!dst.is_same(out)) out.copy_(dst);
}

void uniform(const char* op, const Tensor& out, double from, double to, Generator* gen) {
  draw(op, RandomKernel::Uniform, out, value_words(out), gen, {&from, &to});
}

void normal(const char* op, const Tensor& out, double mean, double stddev, Generator* gen) {
  draw(op, RandomKernel::Normal, out, value_words(out), gen, {&mean, &stddev});
}

// from + (bits mod (to - from)), with 32 bits per element when the range fits, else 64.
void integers(const char* op, const Tensor& out, int64_t from, int64_t to, Generator* gen) {
  uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  const int words = range <= (uint64_t{1} << 32) ? 1 : 2;
  draw(op, RandomKernel::Integers, out, words, gen, {&from, &range});
}

// bernoulli(probs): the CPU kernel raises the error for a probability outside [0, 1] (or NaN)
// before it draws, so such a call goes to it.
void bernoulli_tensor(const char* op, const Tensors& in, Tensors& out, const Attrs& a) {
  const Tensor probs = in[0].contiguous();
  if (!probs.ge(0).logical_and(probs.le(1)).all().item<bool>())
    return cpu_fallback(get_op(op), in, out, a);
  const void* p = probs.data_ptr();
  draw(op, RandomKernel::BernoulliTensor, out[0], value_words(out[0]), a.generator(0), {&p});
}

// (input, p, mode, generator) -> (out, noise): noise = keep_scale where u >= p, else 0, one value
// per element (per (sample, channel) for the feature modes); out = input * noise, or
// (input + alpha') * noise + alpha' * keep_scale * (p - 1) for the alpha modes.
void dropout(const char* op, const Tensors& in, Tensors& out, const Attrs& a) {
  double p = a.f(0);
  const int64_t mode = a.i(1);
  const bool alpha = dropout_util::is_alpha(mode);
  double scale = dropout_util::keep_scale(p, mode);
  draw(op, RandomKernel::DropoutNoise, out[1], 1, a.generator(2), {&p, &scale});
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  const Tensor x = in[0].contiguous(), noise = out[1].contiguous();
  const Tensor dst = y.is_contiguous() ? y : empty(y.sizes(), y.options());
  const int dev = device_of(y);
  const std::string name = std::string("kiln_dropout_apply_") + std::string(dtype_name(y.dtype())) +
                           (alpha ? "_alpha" : "_plain");
  const cudaKernel_t fn =
      generated_kernel(dev, name, [&] { return dropout_apply_source(y.dtype(), alpha, name); });
  const void *xp = x.data_ptr(), *mp = noise.data_ptr();
  void* yp = dst.data_ptr();
  int64_t n = y.numel(), inner = n / noise.numel();
  double shift = alpha ? dropout_util::kAlphaPrime : 0.0;
  double offset = alpha ? dropout_util::alpha_shift(p, mode) : 0.0;
  void* params[] = {&xp, &mp, &yp, &n, &inner, &shift, &offset};
  launch_kernel(op, fn, grid_stride_blocks(dev, n, kThreads), dim3(kThreads), params);
  if (!dst.is_same(y)) y.copy_(dst);
}

using RandomFn = void (*)(const char* op, const Tensors& in, Tensors& out, const Attrs& a);

// op's CUDA kernel: fn when every tensor is on the output's device, else the CPU fallback.
KernelFn random_kernel(const char* op, RandomFn fn) {
  return [op, fn](const Tensors& in, Tensors& out, const Attrs& a) {
    const int dev = device_of(out[0]);
    if (!on_device(in, dev) || !on_device(out, dev)) return cpu_fallback(get_op(op), in, out, a);
    NoGradGuard no_grad;
    fn(op, in, out, a);
  };
}

// The registry entries' calls: in-place fills write in[0], factories out[0].
void uniform_op(const char* op, const Tensors& in, Tensors&, const Attrs& a) {
  uniform(op, in[0], a.f(0), a.f(1), a.generator(2));
}
void rand_op(const char* op, const Tensors&, Tensors& out, const Attrs& a) {
  uniform(op, out[0], 0, 1, a.generator(1));
}
void normal_op(const char* op, const Tensors& in, Tensors&, const Attrs& a) {
  normal(op, in[0], a.f(0), a.f(1), a.generator(2));
}
void randn_op(const char* op, const Tensors&, Tensors& out, const Attrs& a) {
  normal(op, out[0], 0, 1, a.generator(1));
}
void exponential_op(const char* op, const Tensors& in, Tensors&, const Attrs& a) {
  double lambd = a.f(0);
  draw(op, RandomKernel::Exponential, in[0], value_words(in[0]), a.generator(1), {&lambd});
}
void random_op(const char* op, const Tensors& in, Tensors&, const Attrs& a) {
  integers(op, in[0], a.i(0), a.i(1), a.generator(2));
}
void randint_op(const char* op, const Tensors&, Tensors& out, const Attrs& a) {
  integers(op, out[0], a.i(0), a.i(1), a.generator(3));
}
// The uniforms have self's precision: 53 bits for float64, else 24.
void bernoulli_scalar_op(const char* op, const Tensors& in, Tensors&, const Attrs& a) {
  double p = a.f(0);
  draw(op, RandomKernel::Bernoulli, in[0], value_words(in[0]), a.generator(1), {&p});
}

}  // namespace

void register_random_kernels() {
  const std::pair<const char*, RandomFn> ops[] = {
      {"uniform_", uniform_op},         {"rand", rand_op},
      {"normal_", normal_op},           {"randn", randn_op},
      {"exponential_", exponential_op}, {"random_", random_op},
      {"randint", randint_op},          {"bernoulli_", bernoulli_scalar_op},
      {"bernoulli", bernoulli_tensor},  {"native_dropout", dropout},
  };
  for (const auto& [op, fn] : ops) set_kernel(op, kCUDA, random_kernel(op, fn));
}

}  // namespace kiln::cuda
