// Reading and writing safetensors files with many tensors (Google Benchmark):
//
//   build/bench/io_bench [--benchmark_filter=Load]
//
// Each file holds N one-element float32 tensors named "layer.<i>.weight", written by Kiln; the
// header of the 100,000-tensor file is 7.9 MB. Loading it is what a checkpoint with very many
// tensors, or a hostile file, asks of the header parser (the nlohmann-based reader this replaced
// took 192 s on it). Time per file; items/s = tensors per second. Figures: bench/RESULTS.md.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "kiln/io/safetensors.h"
#include "kiln/ops/creation.h"

namespace {

std::map<std::string, kiln::Tensor> many_tensors(int64_t n) {
  std::map<std::string, kiln::Tensor> tensors;
  for (int64_t i = 0; i < n; ++i) {
    tensors.emplace("layer." + std::to_string(i) + ".weight",
                    kiln::full({1}, static_cast<double>(i), kiln::TensorOptions(kiln::kFloat32)));
  }
  return tensors;
}

std::string file_path(int64_t n) {
  return (std::filesystem::temp_directory_path() / ("kiln_io_bench_" + std::to_string(::getpid()) +
                                                    "_" + std::to_string(n) + ".safetensors"))
      .string();
}

void BM_LoadSafetensorsFile(benchmark::State& state) {
  const std::string path = file_path(state.range(0));
  kiln::io::save_safetensors(many_tensors(state.range(0)), path);
  for (auto _ : state) {
    kiln::io::SafetensorsFile f = kiln::io::load_safetensors(path);
    benchmark::DoNotOptimize(f.tensors.size());
  }
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  state.SetItemsProcessed(state.iterations() * state.range(0));
  std::filesystem::remove(path);
}
BENCHMARK(BM_LoadSafetensorsFile)
    ->Arg(1'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond);

void BM_SaveSafetensorsFile(benchmark::State& state) {
  const std::string path = file_path(state.range(0));
  auto tensors = many_tensors(state.range(0));
  for (auto _ : state) kiln::io::save_safetensors(tensors, path);
  state.SetItemsProcessed(state.iterations() * state.range(0));
  std::filesystem::remove(path);
}
BENCHMARK(BM_SaveSafetensorsFile)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
