// The CUDA backend's generated pointwise kernels, without a GPU: registry ops' lowerings rendered
// to CUDA source and compiled by NVRTC to PTX; the PTX cache in memory and on disk; NVRTC's
// errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/pointwise_source.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"

namespace fs = std::filesystem;

namespace kiln {
namespace {

const char* const kArchs[] = {"compute_80", "compute_90"};

// A CUDA tensor as the builders see it (shape and dtype only).
Tensor cuda_meta(std::vector<int64_t> sizes, ScalarType dt) {
  return Tensor(std::make_shared<TensorImpl>(StorageImpl::meta(Device(kCUDA, 0)), dt,
                                             SymShape(sizes.begin(), sizes.end()), SymShape{}, 0));
}

// What the CUDA kernel generates for one call of an op: its lowering's expression and the
// kernel's source. 0-dim CPU tensors are host scalars, everything else lives on the device.
struct Generated {
  lowering::ExprPtr expr;
  ScalarType output = ScalarType::Undefined;
  std::vector<ScalarType> dtypes;
  std::vector<bool> host;
  std::string name, source;
};

Generated generate(const char* op_name, const std::vector<Tensor>& inputs,
                   const Attrs& attrs = {}) {
  const OpDef& op = get_op(op_name);
  EXPECT_EQ(op.lowering_.kind, lowering::Lowering::Kind::Pointwise) << op_name;
  Generated g;
  std::vector<Tensor> metas;
  for (const Tensor& t : inputs) {
    const bool host = t.defined() && t.is_cpu() && t.dim() == 0;
    g.host.push_back(host);
    g.dtypes.push_back(t.defined() ? t.dtype() : ScalarType::Undefined);
    metas.push_back(!t.defined() || host ? t : cuda_meta(t.sizes().vec(), t.dtype()));
  }
  const TensorSpec spec = op.meta_(metas, attrs).at(0);
  g.output = spec.dtype;
  g.expr = op.lowering_.pointwise(lowering::Call{metas, attrs, g.output});
  if (!g.expr) return g;
  g.name = std::string("kiln_test_") + op_name;
  g.source = cuda::pointwise_source(*g.expr, g.dtypes, g.output,
                                    static_cast<int>(spec.sizes.size()), g.name, g.host);
  return g;
}

// Compiles for every architecture of kArchs and checks the kernel is in the PTX.
void expect_compiles(const std::string& source, const std::string& name) {
  for (const char* arch : kArchs) {
    std::string ptx;
    try {
      ptx = cuda::compile_to_ptx(source, name, arch);
    } catch (const Error& e) {
      ADD_FAILURE() << arch << ": " << e.what();
      continue;
    }
    EXPECT_NE(ptx.find(".entry " + name + "("), std::string::npos) << arch << "\n" << ptx;
    EXPECT_NE(ptx.find(".target sm_" + std::string(arch + 8)), std::string::npos) << arch;
  }
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(CudaPointwiseSource, AddWithAlphaBroadcasts) {
  const Tensor a = empty({4, 5}), b = empty({5});
  Generated g = generate("add", {a, b}, {Scalar(2)});
  ASSERT_TRUE(g.expr);
  EXPECT_EQ(g.output, kFloat32);
  // alpha is a kernel argument, not a literal: other alphas reuse the kernel.
  EXPECT_EQ(cuda::pointwise_constants(*g.expr), std::vector<double>{2});
  EXPECT_TRUE(contains(g.source, "static_cast<float>(args.scalars[0].f)")) << g.source;
  EXPECT_TRUE(contains(g.source, "kiln::scalar::Add{}(x0, kiln::scalar::Mul{}(")) << g.source;
  EXPECT_TRUE(contains(g.source, "char* data[3];")) << g.source;
  Generated other = generate("add", {a, b}, {Scalar(-0.5)});
  EXPECT_EQ(other.source, g.source);
  EXPECT_EQ(cuda::pointwise_structure(*other.expr), cuda::pointwise_structure(*g.expr));
  EXPECT_EQ(cuda::pointwise_constants(*other.expr), std::vector<double>{-0.5});
  expect_compiles(g.source, g.name);
}

TEST(CudaPointwiseSource, MulByAWrappedScalarReadsItFromTheArguments) {
  Generated g = generate("mul", {empty({3, 4}), wrapped_scalar(2.5)});
  ASSERT_TRUE(g.expr);
  EXPECT_EQ(g.output, kFloat32);
  EXPECT_EQ(g.host, (std::vector<bool>{false, true}));
  // The float64 number is converted to float32 as eager converts it, and it is not indexed.
  EXPECT_TRUE(contains(g.source, "const double x1 = static_cast<double>(args.scalars[0].f);"))
      << g.source;
  EXPECT_TRUE(contains(g.source, "kiln::scalar::Mul{}(x0, static_cast<float>(x1))")) << g.source;
  EXPECT_FALSE(contains(g.source, "args.data[2]")) << g.source;
  expect_compiles(g.source, g.name);

  Generated i = generate("mul", {empty({3}, kInt32), wrapped_scalar(3)});
  ASSERT_TRUE(i.expr);
  EXPECT_EQ(i.output, kInt32);
  EXPECT_TRUE(contains(i.source, "static_cast<int64_t>(args.scalars[0].i)")) << i.source;
  expect_compiles(i.source, i.name);
}

TEST(CudaPointwiseSource, GeluExactAndTanh) {
  Generated exact = generate("gelu", {empty({8, 16})}, {std::string("none")});
  ASSERT_TRUE(exact.expr);
  EXPECT_TRUE(contains(exact.source, "kiln::scalar::Gelu{}(x0)")) << exact.source;
  expect_compiles(exact.source, exact.name);
  Generated tanh = generate("gelu", {empty({8, 16}, kFloat16)}, {std::string("tanh")});
  ASSERT_TRUE(tanh.expr);
  EXPECT_TRUE(contains(tanh.source, "kiln::scalar::GeluTanh{}(x0)")) << tanh.source;
  EXPECT_TRUE(contains(tanh.source, "const kiln::Half*")) << tanh.source;
  expect_compiles(tanh.source, tanh.name);
}

TEST(CudaPointwiseSource, WhereOfMixedDtypesBroadcasts) {
  Generated g =
      generate("where", {empty({2, 1, 5}, kBool), empty({3, 5}), empty({2, 3, 1}, kFloat64)});
  ASSERT_TRUE(g.expr);
  EXPECT_EQ(g.output, kFloat64);
  EXPECT_TRUE(contains(g.source, "const bool x0")) << g.source;
  EXPECT_TRUE(contains(g.source, "kiln::scalar::Where{}(x0, static_cast<double>(x1), x2)"))
      << g.source;
  expect_compiles(g.source, g.name);
}

TEST(CudaPointwiseSource, BFloat16AddLoadsAsFloatAndStoresRounded) {
  Generated g = generate("add", {empty({6}, kBFloat16), empty({6}, kBFloat16)}, {Scalar(1)});
  ASSERT_TRUE(g.expr);
  EXPECT_EQ(g.output, kBFloat16);
  EXPECT_TRUE(contains(g.source,
                       "const float x0 = static_cast<float>(reinterpret_cast<const "
                       "kiln::BFloat16*>(args.data[1])[o1]);"))
      << g.source;
  EXPECT_TRUE(contains(g.source,
                       "reinterpret_cast<kiln::BFloat16*>(args.data[0])[o0] = "
                       "static_cast<kiln::BFloat16>(y);"))
      << g.source;
  expect_compiles(g.source, g.name);
}

// Kernels over one dim load enough elements per thread to keep about 8 bytes of loads in
// flight: 4 for float32 add and bfloat16 gelu, 8 for a 1-byte bool input.
TEST(CudaPointwiseSource, NarrowDtypesKeepMoreElementsInFlightPerThread) {
  auto unroll = [](const Generated& g) {
    int u = 0;
    while (contains(g.source, "const bool ok_" + std::to_string(u) + " ")) ++u;
    return u;
  };
  const Generated add = generate("add", {empty({64}), empty({64})}, {Scalar(1)});
  const Generated gelu16 = generate("gelu", {empty({64}, kBFloat16)}, {std::string("none")});
  const Generated bools = generate("logical_not", {empty({64}, kBool)});
  EXPECT_EQ(unroll(add), 4) << add.source;
  EXPECT_EQ(unroll(gelu16), 4) << gelu16.source;
  EXPECT_EQ(unroll(bools), 8) << bools.source;
  EXPECT_TRUE(contains(bools.source, "* 8;")) << bools.source;
  expect_compiles(bools.source, bools.name);
}

TEST(CudaPointwiseSource, IntegerFloorDivide) {
  // Eager checks integer divisors for zero (it reads values), so the registry's lowering leaves
  // integer floor division to the op's kernel; the functor itself compiles for the device.
  Generated g = generate("div", {empty({4}, kInt64), empty({4}, kInt64)}, {std::string("floor")});
  EXPECT_FALSE(g.expr);
  auto e = lowering::call("DivFloor", {}, {lowering::input(0, kInt64), lowering::input(1, kInt64)},
                          kInt64);
  const std::string src =
      cuda::pointwise_source(*e, {kInt64, kInt64}, kInt64, 1, "kiln_test_floor_divide");
  EXPECT_TRUE(contains(src, "kiln::scalar::DivFloor{}(x0, x1)")) << src;
  expect_compiles(src, "kiln_test_floor_divide");

  Generated f = generate("div", {empty({4}), empty({4})}, {std::string("floor")});
  ASSERT_TRUE(f.expr);
  expect_compiles(f.source, f.name);
}

TEST(CudaPointwiseSource, ComparisonsProduceBool) {
  Generated lt = generate("lt", {empty({3, 4}, kInt32), empty({4}, kFloat16)});
  ASSERT_TRUE(lt.expr);
  EXPECT_EQ(lt.output, kBool);
  // Compared in the promoted dtype (float16, computed in float).
  EXPECT_TRUE(contains(lt.source, "kiln::scalar::Lt{}(static_cast<float>(x0), x1)")) << lt.source;
  EXPECT_TRUE(contains(lt.source, "reinterpret_cast<bool*>(args.data[0])[o0]")) << lt.source;
  expect_compiles(lt.source, lt.name);
  Generated eq = generate("eq", {empty({5}, kInt64), wrapped_scalar(3)});
  ASSERT_TRUE(eq.expr);
  EXPECT_EQ(eq.output, kBool);
  expect_compiles(eq.source, eq.name);
}

TEST(CudaPointwiseSource, ZeroAndEightDims) {
  auto e = lowering::call("Sub", {}, {lowering::input(0, kFloat64), lowering::input(1, kFloat64)},
                          kFloat64);
  for (int ndim : {0, 1, 3, 8}) {
    const std::string name = "kiln_test_sub_" + std::to_string(ndim);
    const std::string src = cuda::pointwise_source(*e, {kFloat64, kFloat32}, kFloat32, ndim, name);
    expect_compiles(src, name);
  }
  EXPECT_THROW(cuda::pointwise_source(*e, {kFloat64, kFloat64}, kFloat64, 9, "k"), Error);
}

// Every pointwise lowering of the registry, for the dtypes its op-table tests run, renders to
// source that NVRTC compiles: scalar.h's functors are one definition for both devices. Kernels
// are compiled 64 to a program (each in its own namespace) to keep the test short.
TEST(CudaPointwiseSource, EveryRegistryLoweringCompiles) {
  std::set<std::string> bodies;  // sources without their #include line
  int ops = 0;
  for (const OpDef* op : all_ops()) {
    if (op->lowering_.kind != lowering::Lowering::Kind::Pointwise || !op->samples_) continue;
    ++ops;
    for (ScalarType dt : op->dtypes_) {
      for (const OpSample& s : op->samples_(dt)) {
        Generated g;
        try {
          g = generate(op->name.c_str(), s.inputs, s.attrs);
        } catch (const Error&) {
          continue;  // a sample the meta function rejects for CUDA tensors
        }
        if (!g.expr) continue;
        const std::string src =
            cuda::pointwise_source(*g.expr, g.dtypes, g.output, 1, "kiln_test", g.host);
        bodies.insert(src.substr(src.find('\n') + 1));
      }
    }
  }
  EXPECT_GT(ops, 50);
  EXPECT_GT(bodies.size(), 100u);
  std::vector<std::string> all(bodies.begin(), bodies.end());
  for (size_t first = 0; first < all.size(); first += 64) {
    std::string program = "#include \"kiln/backend/scalar.h\"\n";
    const size_t last = std::min(all.size(), first + 64);
    for (size_t i = first; i < last; ++i) {
      std::string body = all[i];
      const std::string name = "kiln_test_" + std::to_string(i);
      body.replace(body.find("kiln_test("), 9, name);
      program += "namespace k" + std::to_string(i) + " {\n" + body + "}\n";
    }
    try {
      const std::string ptx = cuda::compile_to_ptx(program, "kiln_test_registry", "compute_90");
      for (size_t i = first; i < last; ++i)
        EXPECT_NE(ptx.find(".entry kiln_test_" + std::to_string(i) + "("), std::string::npos);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(CudaPointwiseSource, InvalidSourceRaisesWithNvrtcLog) {
  const std::string src =
      "extern \"C\" __global__ void kiln_test_broken(float* x) { x[0] = undefined_thing; }\n";
  try {
    cuda::compile_to_ptx(src, "kiln_test_broken", "compute_90");
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "kiln_test_broken")) << msg;
    EXPECT_TRUE(contains(msg, "identifier \"undefined_thing\" is undefined")) << msg;
    EXPECT_TRUE(contains(msg, "compute_90")) << msg;
  }
}

TEST(CudaPointwiseSource, ArchitectureOfADevice) {
  EXPECT_EQ(cuda::nvrtc_arch(9, 0), "compute_90");
  EXPECT_EQ(cuda::nvrtc_arch(8, 0), "compute_80");
  EXPECT_EQ(cuda::nvrtc_arch(8, 6), "compute_86");
  // A device newer than NVRTC knows gets the newest PTX it can JIT.
  EXPECT_EQ(cuda::nvrtc_arch(99, 0).rfind("compute_", 0), 0u);
  EXPECT_THROW(cuda::nvrtc_arch(3, 5), Error);
  EXPECT_GE(cuda::nvrtc_version(), 12000);
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CudaPointwiseSource, PtxIsCachedInMemoryAndOnDisk) {
  const fs::path dir = fs::temp_directory_path() / ("kiln_ptx_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  ScopedEnv env("KILN_CACHE_DIR", dir.string());
  const std::string src = "extern \"C\" __global__ void kiln_test_cached(float* x) { x[0] = " +
                          std::to_string(getpid()) + ".f; }\n";
  auto stats = cuda::ptx_cache_stats();
  const std::string ptx = cuda::compile_to_ptx(src, "kiln_test_cached", "compute_90");
  EXPECT_EQ(cuda::ptx_cache_stats().compiles, stats.compiles + 1);

  EXPECT_EQ(cuda::compile_to_ptx(src, "kiln_test_cached", "compute_90"), ptx);
  EXPECT_EQ(cuda::ptx_cache_stats().memory_hits, stats.memory_hits + 1);

  // Another architecture is another entry.
  cuda::compile_to_ptx(src, "kiln_test_cached", "compute_80");
  EXPECT_EQ(cuda::ptx_cache_stats().compiles, stats.compiles + 2);

  std::vector<fs::path> entries;
  for (const auto& f : fs::directory_iterator(dir / "cuda")) entries.push_back(f.path());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(cuda::ptx_cache_dir(), (dir / "cuda").string());

  cuda::clear_ptx_memory_cache();
  EXPECT_EQ(cuda::compile_to_ptx(src, "kiln_test_cached", "compute_90"), ptx);
  EXPECT_EQ(cuda::ptx_cache_stats().disk_hits, stats.disk_hits + 1);
  EXPECT_EQ(cuda::ptx_cache_stats().compiles, stats.compiles + 2);

  // A damaged entry is compiled again.
  cuda::clear_ptx_memory_cache();
  for (const auto& p : entries) std::ofstream(p, std::ios::app) << "garbage";
  EXPECT_EQ(cuda::compile_to_ptx(src, "kiln_test_cached", "compute_90"), ptx);
  EXPECT_EQ(cuda::ptx_cache_stats().compiles, stats.compiles + 3);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
