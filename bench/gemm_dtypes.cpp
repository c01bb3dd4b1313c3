// Kiln's side of bench/gemm_dtypes.py: square matrix products [n, n] @ [n, n] on the CPU in
// float32, bfloat16 and float16, and int8 into int32 (_int_mm). Prints "dtype n
// milliseconds-per-product", the median of 7 timings of a loop lasting about 0.2 s, after a warm-up
// call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "kiln/kiln.h"

using namespace kiln;

int main() {
  for (auto [name, dtype] : {std::pair<const char*, ScalarType>{"float32", kFloat32},
                             {"bfloat16", kBFloat16},
                             {"float16", kFloat16},
                             {"int8", kInt8}}) {
    for (int64_t n : {256, 1024, 2048}) {
      const bool int8 = dtype == kInt8;
      auto operand = [&] {
        return int8 ? randint(-128, 128, {n, n}).to(kInt8) : randn({n, n}).to(dtype);
      };
      const Tensor a = operand(), b = operand();
      auto product = [&] { return int8 ? _int_mm(a, b) : a.matmul(b); };
      Tensor c = product();
      using Clock = std::chrono::steady_clock;
      auto seconds = [](Clock::time_point t) {
        return std::chrono::duration<double>(Clock::now() - t).count();
      };
      const Clock::time_point probe = Clock::now();
      c = product();
      const int calls = std::max(1, static_cast<int>(0.2 / std::max(seconds(probe), 1e-6)));
      std::vector<double> ms;
      for (int r = 0; r < 7; ++r) {
        const Clock::time_point start = Clock::now();
        for (int i = 0; i < calls; ++i) c = product();
        ms.push_back(seconds(start) / calls * 1e3);
      }
      std::nth_element(ms.begin(), ms.begin() + 3, ms.end());
      std::printf("%s %lld %.4f\n", name, static_cast<long long>(n), ms[3]);
    }
  }
}
