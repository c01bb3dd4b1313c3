// Which form of the generated pointwise kernel reaches the memory's bandwidth
// (bench/RESULTS-cuda.md, "Pointwise kernel variants"): exact gelu in bfloat16 and float32 add
// over 2^26 elements, each generated with 4, 8 or 16 elements per thread, 64-bit strided or
// 32-bit dense offsets, and with or without FMA contraction, launched with as many blocks as
// stay resident. Prints "case unroll dense fma registers-blocks us GB/s" per variant, the median
// of 7 timed runs of 20 launches between events.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/pointwise_source.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"

using namespace kiln;

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

Tensor cuda_meta(int64_t n, ScalarType dt) {
  return Tensor(std::make_shared<TensorImpl>(StorageImpl::meta(Device(kCUDA, 0)), dt,
                                             SymShape{SymInt(n)}, SymShape{}, 0));
}

struct Case {
  const char* name;
  const char* op;
  Attrs attrs;
  ScalarType dt;
  int inputs;
};

}  // namespace

int main() {
  if (!cuda::is_available()) {
    std::printf("no CUDA device\n");
    return 1;
  }
  const int64_t n = int64_t{1} << 26;
  int major = 0, minor = 0, sms = 0;
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), "attr");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), "attr");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attr");
  const std::string arch = cuda::nvrtc_arch(major, minor);
  const Case cases[] = {{"gelu_bf16", "gelu", {std::string("none")}, kBFloat16, 1},
                        {"add_f32", "add", {Scalar(1)}, kFloat32, 2}};
  std::printf("%-10s %6s %5s %3s %9s %9s %8s\n", "case", "unroll", "dense", "fma", "blocks/SM",
              "us", "GB/s");
  for (const Case& c : cases) {
    const OpDef& op = get_op(c.op);
    std::vector<Tensor> metas(c.inputs, cuda_meta(n, c.dt));
    const lowering::ExprPtr e = op.lowering_.pointwise(lowering::Call{metas, c.attrs, c.dt});
    std::vector<Tensor> in;
    for (int k = 0; k < c.inputs; ++k) in.push_back(randn({n}).to(kCUDA).to(c.dt));
    Tensor out = empty({n}, TensorOptions(c.dt).device(kCUDA));
    std::vector<ScalarType> dtypes(c.inputs, c.dt);
    std::vector<bool> host(c.inputs, false);
    const double bytes = static_cast<double>(n) * element_size(c.dt) * (c.inputs + 1);
    for (int unroll : {4, 8, 16}) {
      for (bool dense : {false, true}) {
        for (bool fma : {false, true}) {
          const std::string name = std::string("kiln_variant_") + c.name + "_" +
                                   std::to_string(unroll) + (dense ? "d" : "s") + (fma ? "f" : "");
          const std::string src =
              cuda::pointwise_source(*e, dtypes, c.dt, 1, name, host, dense, unroll);
          const std::string ptx = cuda::compile_to_ptx(src, name, arch, fma);
          cudaLibrary_t lib = nullptr;
          check(cudaLibraryLoadData(&lib, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                "load");
          cudaKernel_t fn = nullptr;
          check(cudaLibraryGetKernel(&fn, lib, name.c_str()), "get kernel");
          // Note [Pointwise kernel ABI]: data, sizes[8], strides[operands][8], numel, scalars.
          std::vector<uint64_t> words = {reinterpret_cast<uintptr_t>(out.data_ptr())};
          for (const Tensor& t : in) words.push_back(reinterpret_cast<uintptr_t>(t.data_ptr()));
          for (int d = 0; d < 8; ++d) words.push_back(d == 0 ? n : 1);
          for (int k = 0; k <= c.inputs; ++k)
            for (int d = 0; d < 8; ++d) words.push_back(d == 0 ? 1 : 0);
          words.push_back(n);
          for (double v : cuda::pointwise_constants(*e)) {
            uint64_t w;
            std::memcpy(&w, &v, 8);
            words.push_back(w);
          }
          const int per_sm = cuda::resident_blocks(fn, 256);
          const int64_t blocks = std::min<int64_t>((n + 255) / 256, int64_t{sms} * per_sm);
          void* params[] = {words.data()};
          auto launch = [&] {
            check(cudaLaunchKernel(reinterpret_cast<const void*>(fn),
                                   dim3(static_cast<unsigned>(blocks)), dim3(256), params, 0,
                                   nullptr),
                  "launch");
          };
          for (int i = 0; i < 3; ++i) launch();
          cudaEvent_t start, end;
          check(cudaEventCreate(&start), "event");
          check(cudaEventCreate(&end), "event");
          std::vector<float> times;
          for (int r = 0; r < 7; ++r) {
            check(cudaEventRecord(start, nullptr), "record");
            for (int i = 0; i < 20; ++i) launch();
            check(cudaEventRecord(end, nullptr), "record");
            check(cudaEventSynchronize(end), "sync");
            float ms = 0;
            check(cudaEventElapsedTime(&ms, start, end), "elapsed");
            times.push_back(ms * 1000 / 20);
          }
          std::sort(times.begin(), times.end());
          const double us = times[times.size() / 2];
          std::printf("%-10s %6d %5d %3d %9d %9.1f %8.1f\n", c.name, unroll, dense ? 1 : 0,
                      fma ? 1 : 0, per_sm, us, bytes / us / 1e3);
          cudaEventDestroy(start);
          cudaEventDestroy(end);
        }
      }
    }
  }
  return 0;
}
