// Writing safetensors: names and metadata that JSON cannot hold raw, strings that are not UTF-8
// (a kiln::Error naming the file and the string, never a JSON library's exception), many tensors,
// and the limits a reader enforces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "kiln/core/error.h"
#include "kiln/io/checkpoint.h"
#include "kiln/io/safetensors.h"
#include "kiln/nn/module.h"
#include "kiln/ops/creation.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir =
      fs::path(::testing::TempDir()) / ("kiln_io_write_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs `save` and returns the kiln::Error's message; fails the test on any other outcome.
template <class F>
std::string error_of(F&& save) {
  try {
    save();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a kiln::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

Tensor one() { return kiln::ones({1}, TensorOptions(kFloat32)); }

TEST(SafetensorsWrite, InvalidUtf8IsAKilnErrorNamingFileAndString) {
  fs::path dir = fresh_dir("utf8");
  const std::string path = (dir / "m.safetensors").string();
  std::string msg = error_of([&] { io::save_safetensors({{"w\xff", one()}}, path); });
  EXPECT_NE(msg.find("save_safetensors: '" + path + "': tensor name 'w\\xFF' is not valid UTF-8"),
            std::string::npos)
      << msg;
  msg = error_of([&] { io::save_safetensors({{"w", one()}}, path, {{"k\xc0\x80", "v"}}); });
  EXPECT_NE(msg.find("'" + path + "': metadata key 'k\\xC0\\x80' is not valid UTF-8"),
            std::string::npos)
      << msg;
  msg = error_of([&] { io::save_safetensors({{"w", one()}}, path, {{"step", "\xed\xa0\x80"}}); });
  EXPECT_NE(
      msg.find("'" + path + "': the value of metadata key 'step' is not valid UTF-8 (byte 0)"),
      std::string::npos)
      << msg;
  msg = error_of([&] { io::to_safetensors_bytes({{"\xff", one()}}); });
  EXPECT_NE(msg.find("to_safetensors_bytes: tensor name '\\xFF' is not valid UTF-8"),
            std::string::npos)
      << msg;
  EXPECT_TRUE(fs::is_empty(dir));  // nothing was created
  fs::remove_all(dir);
}

TEST(SafetensorsWrite, CheckpointOfModuleWithBadNameNamesTheFile) {
  struct Bad : nn::Module {
    Bad() { register_parameter("weight\xfe", kiln::zeros({2})); }
  };
  Bad bad;
  fs::path dir = fresh_dir("module");
  const std::string path = (dir / "bad.safetensors").string();
  std::string msg = error_of([&] { kiln::save(bad, path); });
  EXPECT_NE(msg.find("'" + path + "': tensor name 'weight\\xFE' is not valid UTF-8"),
            std::string::npos)
      << msg;
  msg = error_of([&] { io::save_checkpoint(path, bad); });
  EXPECT_NE(msg.find("'" + path + "'"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(SafetensorsWrite, NamesAndMetadataNeedingEscapesRoundTrip) {
  const std::string names[] = {"quote\"back\\slash",
                               "ctrl\x01\x1f\n\t\r\b\f",
                               "caf\xc3\xa9",
                               "emoji \xf0\x9f\x98\x80",
                               std::string("nul\0inside", 10),
                               "/slash",
                               ""};
  std::map<std::string, Tensor> tensors;
  int i = 0;
  for (const std::string& name : names) {
    tensors[name] = kiln::full({2}, i++, TensorOptions(kInt32));
  }
  const std::map<std::string, std::string> metadata = {{"json", "{\"a\": [1, \"\\u\"]}"},
                                                       {"ctrl\x7f", "line\nbreak\x02"}};
  auto loaded = io::from_safetensors_bytes(io::to_safetensors_bytes(tensors, metadata));
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_EQ(loaded.tensors.count(name), 1u) << name;
    EXPECT_EQ(loaded.tensors.at(name).data_ptr<int32_t>()[1], t.data_ptr<int32_t>()[1]);
  }
  EXPECT_EQ(loaded.metadata, metadata);
}

TEST(SafetensorsWrite, HundredThousandTensorsWriteAndLoad) {
  std::map<std::string, Tensor> tensors;
  for (int i = 0; i < 100'000; ++i) {
    tensors.emplace("layer." + std::to_string(i), kiln::full({1}, i % 251, TensorOptions(kUInt8)));
  }
  auto loaded = io::from_safetensors_bytes(io::to_safetensors_bytes(tensors));
  ASSERT_EQ(loaded.tensors.size(), 100'000u);
  EXPECT_EQ(loaded.tensors.at("layer.99999").data_ptr<uint8_t>()[0], 99'999 % 251);
}

TEST(SafetensorsWrite, RefusesWhatReadersReject) {
  Tensor deep = kiln::zeros(std::vector<int64_t>(65, 1));
  std::string msg = error_of([&] { io::to_safetensors_bytes({{"deep", deep}}); });
  EXPECT_NE(msg.find("tensor 'deep' has 65 dimensions, over the limit of 64"), std::string::npos)
      << msg;
  Tensor ok = kiln::zeros(std::vector<int64_t>(64, 1));
  EXPECT_EQ(io::from_safetensors_bytes(io::to_safetensors_bytes({{"ok", ok}})).tensors.size(), 1u);
  // A 100 MB header is the format's limit: metadata that would exceed it is refused.
  msg = error_of([&] { io::to_safetensors_bytes({}, {{"big", std::string(100'000'000, 'x')}}); });
  EXPECT_NE(msg.find("over the format's limit of 100000000"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln
