// Kiln's side of bench/gemm_dtypes.py: square matrix products [n, n] @ [n, n] on the CPU in
// float32, bfloat16 and float16. Prints "dtype n milliseconds-per-product", the median of 7
// timings of a loop lasting about 0.2 s, after a warm-up call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "kiln/kiln.h"

using namespace kiln;

int main() {
  for (auto [name, dtype] : {std::pair<const char*, ScalarType>{"float32", kFloat32},
                             {"bfloat16", kBFloat16},
                             {"float16", kFloat16}}) {
    for (int64_t n : {256, 1024, 2048}) {
      const Tensor a = randn({n, n}).to(dtype), b = randn({n, n}).to(dtype);
      Tensor c = a.matmul(b);
      using Clock = std::chrono::steady_clock;
      auto seconds = [](Clock::time_point t) {
        return std::chrono::duration<double>(Clock::now() - t).count();
      };
      const Clock::time_point probe = Clock::now();
      c = a.matmul(b);
      const int calls = std::max(1, static_cast<int>(0.2 / std::max(seconds(probe), 1e-6)));
      std::vector<double> ms;
      for (int r = 0; r < 7; ++r) {
        const Clock::time_point start = Clock::now();
        for (int i = 0; i < calls; ++i) c = a.matmul(b);
        ms.push_back(seconds(start) / calls * 1e3);
      }
      std::nth_element(ms.begin(), ms.begin() + 3, ms.end());
      std::printf("%s %lld %.4f\n", name, static_cast<long long>(n), ms[3]);
    }
  }
}
