#pragma once
// at::globalContext(): libtorch's process-wide switches. Kiln has no cuDNN, cuBLAS or TF32 path
// yet, so those flags are kept and reported but change nothing; Kiln's CPU kernels already give
// the same bits run to run at a fixed thread count, so deterministic mode has nothing to switch
// off. setFlushDenormal acts, as libtorch's does on x86: it sets the FTZ and DAZ bits of the
// calling thread's MXCSR.
#include <xmmintrin.h>

#include <string>

#include "kiln/core/error.h"

namespace at {

class Context {
 public:
  void setDeterministicAlgorithms(bool enabled, bool warn_only = false) {
    deterministic_ = enabled;
    deterministic_warn_only_ = warn_only;
  }
  bool deterministicAlgorithms() const { return deterministic_; }
  bool deterministicAlgorithmsWarnOnly() const { return deterministic_warn_only_; }
  void setDeterministicCuDNN(bool b) { deterministic_cudnn_ = b; }
  bool deterministicCuDNN() const { return deterministic_cudnn_; }
  void setBenchmarkCuDNN(bool b) { benchmark_cudnn_ = b; }
  bool benchmarkCuDNN() const { return benchmark_cudnn_; }
  void setUserEnabledCuDNN(bool b) { enabled_cudnn_ = b; }
  bool userEnabledCuDNN() const { return enabled_cudnn_; }
  void setAllowTF32CuBLAS(bool b) { tf32_cublas_ = b; }
  bool allowTF32CuBLAS() const { return tf32_cublas_; }
  void setAllowTF32CuDNN(bool b) { tf32_cudnn_ = b; }
  bool allowTF32CuDNN() const { return tf32_cudnn_; }
  // "highest", "high" or "medium", as torch.set_float32_matmul_precision.
  void setFloat32MatmulPrecision(const std::string& precision) {
    KILN_CHECK(precision == "highest" || precision == "high" || precision == "medium",
               "setFloat32MatmulPrecision: expected \"highest\", \"high\" or \"medium\", got \"",
               precision, "\"");
    matmul_precision_ = precision;
  }
  std::string float32MatmulPrecision() const { return matmul_precision_; }
  // Returns whether the CPU supports it (always true on x86-64, Kiln's only CPU).
  bool setFlushDenormal(bool on) {
    constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
    const unsigned csr = _mm_getcsr() & ~(kFlushToZero | kDenormalsAreZero);
    _mm_setcsr(on ? csr | kFlushToZero | kDenormalsAreZero : csr);
    return true;
  }
  static bool hasCUDA() { return false; }
  static bool hasCuDNN() { return false; }
  static bool hasMKL() { return false; }
  static bool hasOpenMP() { return true; }
  static bool hasLAPACK() { return false; }

 private:
  bool deterministic_ = false, deterministic_warn_only_ = false, deterministic_cudnn_ = false;
  bool benchmark_cudnn_ = false, enabled_cudnn_ = true, tf32_cublas_ = false, tf32_cudnn_ = true;
  std::string matmul_precision_ = "highest";
};

inline Context& globalContext() {
  static Context context;
  return context;
}

}  // namespace at
