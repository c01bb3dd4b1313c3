#pragma once
// What the CUDA tests share: skipping without a GPU, an error's message, the ops that took the
// CPU fallback, and compiling a generated kernel's source.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/core/cpu_fallback.h"
#include "kiln/kiln.h"

#define REQUIRE_GPU()                \
  if (!::kiln::cuda::is_available()) \
  GTEST_SKIP() << "no CUDA device (kiln::cuda::is_available() is false)"

namespace kiln::testing {

// The message of the kiln::Error f throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Whether `op` ran through the CPU fallback on CUDA in this process.
inline bool fell_back(const std::string& op) {
  const std::vector<std::string> ops = cpu_fallback_ops();
  return std::find(ops.begin(), ops.end(), op + " on cuda") != ops.end();
}

// A generated kernel's source compiles with NVRTC to PTX defining `name` (no GPU needed), and
// its checks record and return: a trap would leave the CUDA context unusable.
inline void expect_ptx_compiles(const std::string& source, const std::string& name) {
  SCOPED_TRACE(name);
  std::string ptx;
  try {
    ptx = cuda::compile_to_ptx(source, name, "compute_90");
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
    return;
  }
  EXPECT_NE(ptx.find(".entry " + name + "("), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("trap;"), std::string::npos) << ptx;
}

}  // namespace kiln::testing
