// kiln::save / kiln::load of a Tensor, a std::vector<Tensor> and a std::shared_ptr<Module>
// (libtorch's torch::save / torch::load spellings), as safetensors files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "kiln/io/checkpoint.h"
#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class TensorFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kiln_tensor_file_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(TensorFile, TensorRoundTripsWithDtypeAndShape) {
  Tensor t = arange(6, TensorOptions(kInt32)).reshape({2, 3}).t();  // non-contiguous
  save(t, path("t.pt"));
  Tensor back;
  load(back, path("t.pt"));
  EXPECT_EQ(back.scalar_type(), kInt32);
  EXPECT_EQ(back.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(back.equal(t));
  // The file is plain safetensors: one tensor named "0".
  io::SafetensorsFile file = io::load_safetensors(path("t.pt"));
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_TRUE(file.tensors.at("0").equal(t));
}

TEST_F(TensorFile, VectorKeepsItsOrderPastTenElements) {
  std::vector<Tensor> tensors;
  for (int i = 0; i < 12; ++i) tensors.push_back(full({i % 3 + 1}, i, TensorOptions(kFloat64)));
  save(tensors, path("v.pt"));
  std::vector<Tensor> back = {ones({1})};
  load(back, path("v.pt"));
  ASSERT_EQ(back.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(back[i].numel(), i % 3 + 1);
    EXPECT_DOUBLE_EQ(back[i].sum().item<double>(), static_cast<double>(i * (i % 3 + 1)));
  }
}

TEST_F(TensorFile, LoadingTheWrongKindOfFileNamesIt) {
  save(std::vector<Tensor>{ones({1}), zeros({1})}, path("two.pt"));
  Tensor t;
  try {
    load(t, path("two.pt"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 2 tensors, expected one"), std::string::npos)
        << e.what();
  }
  nn::Linear linear(2, 2);
  save(linear, path("linear.pt"));
  std::vector<Tensor> tensors;
  try {
    load(tensors, path("linear.pt"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a Kiln tensors file"), std::string::npos)
        << e.what();
  }
}

struct Net : nn::Module {
  Net() {
    fc = register_module("fc", nn::Linear(3, 2));
    register_buffer("steps", zeros({1}));
  }
  nn::Linear fc{nullptr};
};

TEST_F(TensorFile, ModuleInASharedPtr) {
  auto net = std::make_shared<Net>();
  net->named_buffers()["steps"].fill_(5);
  save(net, path("net.pt"));
  auto other = std::make_shared<Net>();
  load(other, path("net.pt"));
  EXPECT_TRUE(other->fc->weight.equal(net->fc->weight));
  EXPECT_TRUE(other->fc->bias.equal(net->fc->bias));
  EXPECT_DOUBLE_EQ(other->named_buffers()["steps"].item<double>(), 5.0);
}

}  // namespace
}  // namespace kiln
