// kiln aot: a program built into a shared library runs, through the C interface of kiln_model.h,
// as the code that made it runs eagerly: from a plain C program and loaded in this process, with
// the kernels built into it and no compiler.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kiln/compile/codegen/kernel_cache.h"
#include "kiln/compile/logs.h"
#include "kiln/export/kiln_model.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs a shell command; its exit status, and its standard output in `out`.
int shell(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0)
    if (out) out->append(buf, n);
  return pclose(p);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// What aot_main.c feeds the model for a batch: x[i] = ((i * 37) % 101) / 50 - 1.
Tensor c_program_input(int64_t batch) {
  std::vector<float> x(batch * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  return tensor(x).reshape({batch, 8});
}

TEST(Aot, PlainCProgramRunsTheCliBuiltLibraryAsEagerRuns) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(8, 16), nn::GELU(), nn::Linear(16, 4), nn::Tanh());
  const Dim batch("batch", 2, 64);
  const fs::path dir = fresh_dir("kiln_aot_c");
  export_program(model, {randn({4, 8})}, {{{0, batch}}}).save((dir / "model.kpt").string());

  std::string out;
  ASSERT_EQ(shell(std::string(KILN_CLI_PATH) + " aot " + (dir / "model.kpt").string() + " -o " +
                      (dir / "model.so").string() + " 2>&1",
                  &out),
            0)
      << out;
  EXPECT_NE(out.find("generated kernel units"), std::string::npos) << out;
  EXPECT_EQ(out.find("(0 generated"), std::string::npos) << out;
  // A plain C program: compiled as C, linked with the library alone.
  ASSERT_EQ(shell("cc -std=c11 -Wall -Werror " KILN_TEST_CONSUMER_FLAGS " -I" KILN_SOURCE_DIR " " +
                      std::string(KILN_SOURCE_DIR) + "/tests/export/aot_main.c -o " +
                      (dir / "main").string() + " " + (dir / "model.so").string() + " -Wl,-rpath," +
                      dir.string() + " 2>&1",
                  &out),
            0)
      << out;
  // No compiler (KILN_CXX names none), an empty kernel cache, and every fallback logged.
  const std::string env = "KILN_CXX=/nonexistent/c++ KILN_CACHE_DIR=" + (dir / "cache").string() +
                          " KILN_LOGS=perf,recompiles ";
  out.clear();
  ASSERT_EQ(shell(env + (dir / "main").string() + " " + (dir / "out.bin").string() +
                      " 2 5 1 64 2>" + (dir / "err.txt").string(),
                  &out),
            0)
      << out << read_text(dir / "err.txt");
  EXPECT_NE(out.find("input 0: dtype 8, sizes [2..64, 8]"), std::string::npos) << out;
  EXPECT_NE(out.find("output 0: dtype 8, sizes [2..64, 4]"), std::string::npos) << out;
  EXPECT_NE(out.find("input 7: kiln_model_input_info: the model has 1 inputs; index 7 is out"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("refused: Expected input at inputs[0].shape[0] to be >= 2, but got 1"),
            std::string::npos)
      << out;
  const std::string err = read_text(dir / "err.txt");
  EXPECT_EQ(err.find("lack"), std::string::npos) << err;  // every graph ran on built kernels
  EXPECT_EQ(err.find("recompiling"), std::string::npos) << err;
  // A process whose eager kernels run at the baseline level still generates the library's level
  // and finds its kernels.
  std::string avx2;
  ASSERT_EQ(shell("KILN_CPU_CAPABILITY=avx2 " + env + (dir / "main").string() + " " +
                      (dir / "out_avx2.bin").string() + " 3 2>&1",
                  &avx2),
            0)
      << avx2;
  EXPECT_NE(avx2.find("batch 3: 1 outputs"), std::string::npos) << avx2;
  EXPECT_EQ(avx2.find("lack"), std::string::npos) << avx2;

  std::ifstream f(dir / "out.bin", std::ios::binary);
  NoGradGuard no_grad;
  for (int64_t b : {2, 5, 64}) {
    int64_t ndim = 0;
    ASSERT_TRUE(f.read(reinterpret_cast<char*>(&ndim), sizeof ndim)) << b;
    ASSERT_EQ(ndim, 2) << b;
    int64_t sizes[2];
    f.read(reinterpret_cast<char*>(sizes), sizeof sizes);
    ASSERT_EQ(sizes[0], b);
    ASSERT_EQ(sizes[1], 4);
    std::vector<float> y(b * 4);
    f.read(reinterpret_cast<char*>(y.data()), static_cast<std::streamsize>(y.size() * 4));
    const Tensor expected = model->forward(c_program_input(b));
    EXPECT_TRUE(allclose(tensor(y).reshape({b, 4}), expected, 1e-5, 1e-6)) << b;
  }
  fs::remove_all(dir);
}

// A model library opened as a program that uses several opens each (kiln_model.h).
struct ModelLibrary {
  void* handle;
  explicit ModelLibrary(const fs::path& so) : handle(dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
  ~ModelLibrary() {
    if (handle) dlclose(handle);
  }
  // The library's function `name`, declared as F in kiln_model.h.
  template <class F>
  F* fn(const char* name) const {
    F* f = reinterpret_cast<F*>(dlsym(handle, name));
    EXPECT_NE(f, nullptr) << name;
    return f;
  }
};

TEST(Aot, LoadedLibraryRunsATransformerLayerAtEveryLengthInRange) {
  manual_seed(3);
  auto layer = nn::TransformerEncoderLayer(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  layer->eval();
  auto fn = [&](const Tensor& x) { return layer->forward(x); };
  const Dim seq("seq", 2, 100), batch("batch", 2, 16);
  const ExportedProgram p = export_program(fn, {randn({5, 3, 8})}, {{{0, seq}, {1, batch}}});
  const fs::path dir = fresh_dir("kiln_aot_layer");
  EXPECT_GE(aot_compile(p, (dir / "layer.so").string()), 1);

  const ModelLibrary lib(dir / "layer.so");
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  auto create = lib.fn<decltype(kiln_model_create)>("kiln_model_create");
  auto destroy = lib.fn<decltype(kiln_model_destroy)>("kiln_model_destroy");
  auto last_error = lib.fn<decltype(kiln_last_error)>("kiln_last_error");
  auto input_info = lib.fn<decltype(kiln_model_input_info)>("kiln_model_input_info");
  auto run = lib.fn<decltype(kiln_model_run)>("kiln_model_run");
  auto num_outputs = lib.fn<decltype(kiln_result_num_outputs)>("kiln_result_num_outputs");
  auto output = lib.fn<decltype(kiln_result_output)>("kiln_result_output");
  auto destroy_result = lib.fn<decltype(kiln_result_destroy)>("kiln_result_destroy");
  ASSERT_TRUE(create && destroy && last_error && input_info && run && num_outputs && output &&
              destroy_result);
  // The library never builds kernels: no compile, and no graph left to the eager kernels.
  const int64_t compiles = compiler::cache_stats().compiles;
  compiler::set_logs("perf");
  ::testing::internal::CaptureStderr();
  KilnModel* model = nullptr;
  ASSERT_EQ(create(&model), 0) << last_error();
  KilnTensorInfo info;
  ASSERT_EQ(input_info(model, 0, &info), 0);
  EXPECT_EQ(info.ndim, 3);
  EXPECT_EQ(std::vector<int64_t>(info.sizes, info.sizes + 3), (std::vector<int64_t>{-1, -1, 8}));
  EXPECT_EQ(std::vector<int64_t>(info.min, info.min + 3), (std::vector<int64_t>{2, 2, 8}));
  EXPECT_EQ(std::vector<int64_t>(info.max, info.max + 3), (std::vector<int64_t>{100, 16, 8}));

  NoGradGuard no_grad;
  for (auto [s, b] : {std::pair<int64_t, int64_t>{2, 2}, {9, 3}, {100, 16}}) {
    Tensor x = randn({s, b, 8});
    const int64_t sizes[3] = {s, b, 8};
    const KilnTensor in{x.data_ptr(), KILN_FLOAT32, 3, sizes};
    KilnResult* r = nullptr;
    ASSERT_EQ(run(model, &in, 1, &r), 0) << last_error();
    ASSERT_EQ(num_outputs(r), 1u);
    KilnTensor y;
    ASSERT_EQ(output(r, 0, &y), 0);
    ASSERT_EQ(y.ndim, 3);
    const Tensor got = from_blob(y.data, {y.sizes[0], y.sizes[1], y.sizes[2]}).clone();
    destroy_result(r);
    EXPECT_TRUE(allclose(got, fn(x), 1e-5, 1e-5)) << s << "x" << b;
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  compiler::set_logs("");
  EXPECT_EQ(compiler::cache_stats().compiles, compiles);
  EXPECT_EQ(err.find("lack"), std::string::npos) << err;

  // Bad calls are errors with a message, never a crash.
  float data[24] = {};
  const int64_t sizes[3] = {3, 1, 8};
  KilnResult* r = nullptr;
  const KilnTensor wrong_dtype{data, KILN_FLOAT64, 3, sizes};
  EXPECT_NE(run(model, &wrong_dtype, 1, &r), 0);
  EXPECT_STREQ(last_error(), "Expected input at inputs[0].dtype to be float32, but got float64");
  const KilnTensor bad_dtype{data, 42, 3, sizes};
  EXPECT_NE(run(model, &bad_dtype, 1, &r), 0);
  EXPECT_NE(std::string(last_error()).find("unknown dtype 42"), std::string::npos);
  EXPECT_NE(run(model, nullptr, 1, &r), 0);
  EXPECT_EQ(r, nullptr);
  destroy(model);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
