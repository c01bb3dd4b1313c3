// Kiln's side of bench/cuda.py: the CUDA backend's eager speed on the cases bench/RESULTS-cuda.md
// records. Prints one line per case, "name seconds-per-call", each the median of `repeats` timed
// runs of `inner` calls between device synchronisations, after warm-up calls (which also take
// the NVRTC compilations and cuBLAS handle creation out of the numbers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "kiln/kiln.h"

using namespace kiln;

double median_seconds(const std::function<void()>& f, int inner, int repeats = 9) {
  for (int i = 0; i < 3; ++i) f();
  cuda::synchronize();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) f();
    cuda::synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                inner);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  if (!cuda::is_available()) {
    std::printf("no CUDA device\n");
    return 1;
  }
  const TensorOptions gpu = TensorOptions(kFloat32).device(kCUDA);
  manual_seed(0);
  {
    const int64_t n = int64_t{1} << 26;  // 256 MiB per float32 operand
    Tensor a = randn({n}).to(kCUDA), b = randn({n}).to(kCUDA);
    std::printf("add_f32_2^26 %.9f\n", median_seconds([&] { Tensor c = a + b; }, 20));
    Tensor h = a.to(kBFloat16);
    std::printf("gelu_bf16_2^26 %.9f\n", median_seconds([&] { Tensor c = gelu(h); }, 20));
    Tensor m = a.view({8192, 8192});
    std::printf("sum_rows_f32_8192^2 %.9f\n", median_seconds([&] { Tensor c = m.sum(1); }, 20));
    std::printf("softmax_f32_8192^2 %.9f\n",
                median_seconds([&] { Tensor c = softmax(m, 1); }, 20));
    Tensor at = a.view({8192, 8192}).t();
    std::printf("copy_transpose_f32_8192^2 %.9f\n",
                median_seconds([&] { Tensor c = at.contiguous(); }, 20));
  }
  {
    Tensor a = randn({8192, 8192}).to(gpu.device()).to(kBFloat16);
    Tensor b = randn({8192, 8192}).to(gpu.device()).to(kBFloat16);
    std::printf("mm_bf16_8192 %.9f\n", median_seconds([&] { Tensor c = a.matmul(b); }, 10));
    Tensor af = a.to(kFloat32), bf = b.to(kFloat32);
    std::printf("mm_f32_4096 %.9f\n",
                median_seconds(
                    [&] { Tensor c = af.narrow(0, 0, 4096).matmul(bf.narrow(1, 0, 4096)); }, 10));
  }
  {
    Tensor x = ones({1}, gpu), y = ones({1}, gpu);
    std::printf("add_1_element %.9f\n", median_seconds([&] { Tensor c = x + y; }, 2000));
  }
  return 0;
}
