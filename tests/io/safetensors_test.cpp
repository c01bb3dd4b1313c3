// safetensors: round trips, the fixture written by Python's package, hostile files, atomic writes.
#include "kiln/io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "kiln/core/error.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using io::from_safetensors_bytes;
using io::load_safetensors;
using io::save_safetensors;
using io::to_safetensors_bytes;

Tensor make(const std::vector<double>& values, std::vector<int64_t> shape, ScalarType dtype) {
  return kiln::tensor(values, TensorOptions(kFloat64)).to(dtype).reshape(shape);
}

std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> s;
  for (const SymInt& d : t.sizes()) s.push_back(d.guard_int());
  return s;
}

// Same dtype, shape and bytes.
void expect_identical(const Tensor& got, const Tensor& want, const std::string& name) {
  ASSERT_TRUE(got.defined()) << name;
  EXPECT_EQ(got.dtype(), want.dtype()) << name;
  ASSERT_EQ(shape_of(got), shape_of(want)) << name;
  Tensor a = got.contiguous(), b = want.contiguous();
  EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), b.nbytes()), 0) << name;
}

// The tensors of tools/fixtures/safetensors_fixture_values.py.
std::map<std::string, Tensor> fixture_tensors() {
  return {
      {"weight_f32", make({1.5, -2.0, 3.25, 0.0, 4.5, -6.75}, {2, 3}, kFloat32)},
      {"bias_f64", make({0.1, -0.2, 1e10}, {3}, kFloat64)},
      {"half_f16", make({1.0, -0.5, 65504.0, 0.0009765625}, {2, 2}, kFloat16)},
      {"bf16", make({1.5, -2.25, 3072.0}, {3}, kBFloat16)},
      {"mask_bool", make({1, 0, 0, 1}, {4}, kBool)},
      {"scalar_i64", make({-7}, {}, kInt64)},
      {"ids_i32", make({1, -2, 2147483647, -2147483648.0}, {2, 2}, kInt32)},
      {"short_i16", make({-32768, 32767}, {2}, kInt16)},
      {"char_i8", make({-128, 0, 127}, {3}, kInt8)},
      {"byte_u8", make({0, 128, 255}, {3}, kUInt8)},
      {"empty_f32", kiln::zeros({0, 3}, TensorOptions(kFloat32))},
  };
}

const std::map<std::string, std::string> kFixtureMetadata = {{"format", "pt"},
                                                             {"producer", "kiln-fixture"}};

std::string fixture_path() {
  return std::string(KILN_TEST_DATA) + "/safetensors/fixture.safetensors";
}

fs::path fresh_dir(const std::string& name) {
  fs::path dir =
      fs::path(::testing::TempDir()) / ("kiln_io_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

size_t count_files(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(Safetensors, RoundTripsEveryDtypeInMemory) {
  std::map<std::string, Tensor> tensors;
  for (ScalarType t :
       {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    tensors["t_" + std::string(dtype_name(t))] = make({0, 1, -2, 3, 100, -1}, {2, 3}, t);
  }
  tensors["zero_dim"] = make({2.5}, {}, kFloat32);
  tensors["zero_size"] = kiln::empty({4, 0, 2}, TensorOptions(kInt16));
  auto bytes = to_safetensors_bytes(tensors, {{"epoch", "3"}});
  auto loaded = from_safetensors_bytes(bytes);
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) expect_identical(loaded.tensors.at(name), t, name);
  EXPECT_EQ(loaded.metadata, (std::map<std::string, std::string>{{"epoch", "3"}}));
}

TEST(Safetensors, HeaderIsPaddedToEightBytesAndDataAligned) {
  auto bytes =
      to_safetensors_bytes({{"a", make({1}, {1}, kUInt8)}, {"b", make({1}, {1}, kFloat64)}});
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n));
  // The 8-byte tensor comes first so that every tensor is aligned to its element size.
  EXPECT_EQ(header, std::string(R"({"b":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
                                R"("a":{"dtype":"U8","shape":[1],"data_offsets":[8,9]}})") +
                        std::string(n - 106, ' '));
  EXPECT_EQ(bytes.size(), 8 + n + 9);
}

TEST(Safetensors, WritesNonContiguousTensorsRowMajor) {
  Tensor base = make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32);
  Tensor t = base.t();
  ASSERT_FALSE(t.is_contiguous());
  Tensor strided =
      make({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}, kInt64).narrow(0, 1, 8).view({4, 2}).select(1, 1);
  auto loaded = from_safetensors_bytes(to_safetensors_bytes({{"t", t}, {"s", strided}}));
  expect_identical(loaded.tensors.at("t"), make({1, 4, 2, 5, 3, 6}, {3, 2}, kFloat32), "t");
  expect_identical(loaded.tensors.at("s"), make({2, 4, 6, 8}, {4}, kInt64), "s");
}

TEST(Safetensors, SavesAndLoadsFiles) {
  fs::path dir = fresh_dir("roundtrip");
  auto tensors = fixture_tensors();
  save_safetensors(tensors, (dir / "m.safetensors").string(), kFixtureMetadata);
  auto loaded = load_safetensors((dir / "m.safetensors").string());
  for (const auto& [name, t] : tensors) expect_identical(loaded.tensors.at(name), t, name);
  EXPECT_EQ(loaded.metadata, kFixtureMetadata);
  EXPECT_EQ(count_files(dir), 1u);  // no temporary file left behind
  fs::remove_all(dir);
}

TEST(SafetensorsFixture, ReadsFileWrittenByPythonPackage) {
  auto loaded = load_safetensors(fixture_path());
  auto want = fixture_tensors();
  ASSERT_EQ(loaded.tensors.size(), want.size());
  for (const auto& [name, t] : want) expect_identical(loaded.tensors.at(name), t, name);
  EXPECT_EQ(loaded.metadata, kFixtureMetadata);
  // Spot-check decoded values, independent of how the expected tensors were built.
  EXPECT_EQ(loaded.tensors.at("bf16").to(kFloat64).data_ptr<double>()[1], -2.25);
  EXPECT_EQ(loaded.tensors.at("half_f16").to(kFloat64).data_ptr<double>()[2], 65504.0);
  EXPECT_EQ(loaded.tensors.at("scalar_i64").dim(), 0);
  EXPECT_EQ(loaded.tensors.at("scalar_i64").data_ptr<int64_t>()[0], -7);
  EXPECT_EQ(loaded.tensors.at("mask_bool").data_ptr<bool>()[3], true);
  EXPECT_EQ(loaded.tensors.at("ids_i32").data_ptr<int32_t>()[3], -2147483647 - 1);
}

// Writes the fixture's tensors (plus a transposed one) with Kiln for
// tools/fixtures/check_kiln_safetensors.py: to $KILN_SAFETENSORS_OUT when set.
TEST(SafetensorsFixture, WritesFileForPython) {
  fs::path dir = fresh_dir("for_python");
  const char* env = std::getenv("KILN_SAFETENSORS_OUT");
  std::string path = env ? env : (dir / "kiln.safetensors").string();
  auto tensors = fixture_tensors();
  tensors["transposed_f32"] = tensors.at("weight_f32").t();
  save_safetensors(tensors, path, kFixtureMetadata);
  auto loaded = load_safetensors(path);
  for (const auto& [name, t] : tensors) expect_identical(loaded.tensors.at(name), t, name);
  fs::remove_all(dir);
}

// ---- damaged files (safetensors_hostile_test.cpp has the crafted ones) ----

TEST(SafetensorsHostile, EveryTruncationAndCorruptionFailsCleanly) {
  auto bytes = to_safetensors_bytes(fixture_tensors(), kFixtureMetadata);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<int64_t>(n));
    EXPECT_THROW(from_safetensors_bytes(cut), Error) << "truncated to " << n << " bytes";
  }
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bad = bytes;
    for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    try {
      from_safetensors_bytes(bad);  // a flip inside tensor data still loads
    } catch (const Error&) {
    }
  }
}

TEST(SafetensorsHostile, FileErrorsNameThePath) {
  fs::path dir = fresh_dir("hostile");
  std::string path = (dir / "cut.safetensors").string();
  save_safetensors(fixture_tensors(), path);
  fs::resize_file(path, fs::file_size(path) - 3);
  try {
    load_safetensors(path);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("load_safetensors: '" + path + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  }
  try {
    load_safetensors((dir / "missing.safetensors").string());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.safetensors': cannot open: No such file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_safetensors(dir.string()), Error);  // a directory
  fs::remove_all(dir);
}

// ---- atomic writes ----

TEST(SafetensorsAtomicWrite, ReplacesExistingFileCompletely) {
  fs::path dir = fresh_dir("replace");
  std::string path = (dir / "ckpt.safetensors").string();
  save_safetensors({{"a", make({1, 2, 3}, {3}, kFloat32)}}, path);
  save_safetensors({{"b", make({4}, {1}, kInt64)}}, path);
  auto loaded = load_safetensors(path);
  ASSERT_EQ(loaded.tensors.size(), 1u);
  expect_identical(loaded.tensors.at("b"), make({4}, {1}, kInt64), "b");
  EXPECT_EQ(count_files(dir), 1u);
  fs::remove_all(dir);
}

TEST(SafetensorsAtomicWrite, FailedWriteLeavesTargetUnchanged) {
  fs::path dir = fresh_dir("failed");
  std::string path = (dir / "ckpt.safetensors").string();
  save_safetensors({{"a", make({1, 2, 3}, {3}, kFloat32)}}, path);
  const std::string before = read_all(path);

  // A tensor that cannot be written: nothing is touched.
  EXPECT_THROW(save_safetensors({{"a", make({9}, {1}, kFloat32)}, {"bad", Tensor()}}, path), Error);
  EXPECT_EQ(read_all(path), before);
  EXPECT_EQ(count_files(dir), 1u);

  // The rename fails (the target is a directory): the temporary file is removed.
  fs::create_directories(dir / "taken.safetensors" / "inside");
  try {
    save_safetensors({{"a", make({9}, {1}, kFloat32)}}, (dir / "taken.safetensors").string());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rename into place failed"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::is_directory(dir / "taken.safetensors" / "inside"));
  EXPECT_EQ(count_files(dir), 2u);
  EXPECT_EQ(read_all(path), before);
  fs::remove_all(dir);
}

TEST(SafetensorsAtomicWrite, UnwritableDirectoryGivesClearError) {
  fs::path dir = fresh_dir("unwritable");
  std::ofstream(dir / "plain_file") << "x";
  std::string path = (dir / "plain_file" / "ckpt.safetensors").string();  // parent is a file
  try {
    save_safetensors({{"a", make({1}, {1}, kFloat32)}}, path);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("save: cannot write '" + path + "': cannot create temporary file"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("Not a directory"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_all(dir / "plain_file"), "x");
  fs::remove_all(dir);
}

TEST(Safetensors, RejectsReservedNameAndUnknownDtypeNames) {
  EXPECT_THROW(to_safetensors_bytes({{"__metadata__", make({1}, {1}, kFloat32)}}), Error);
  EXPECT_EQ(io::safetensors_dtype_from_name("BF16"), kBFloat16);
  EXPECT_EQ(io::safetensors_dtype_name(kBool), "BOOL");
  EXPECT_THROW(io::safetensors_dtype_from_name("F8_E4M3"), Error);
}

}  // namespace
}  // namespace kiln
