// MNIST idx files: round trip through write_mnist_idx, malformed files, the libtorch pipeline.
#include "kiln/data/mnist.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kiln/core/error.h"
#include "kiln/data/data.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using data::datasets::MNIST;

fs::path fresh_dir(const std::string& name) {
  fs::path dir =
      fs::path(::testing::TempDir()) / ("kiln_mnist_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

Tensor random_images(int64_t n) {
  Generator gen(5);
  return kiln::randint(0, 256, {n, 28, 28}, &gen, TensorOptions(kUInt8));
}

std::string error_of(const std::string& root, MNIST::Mode mode = MNIST::Mode::kTrain) {
  try {
    MNIST m(root, mode);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

void write_bytes(const fs::path& p, const std::vector<unsigned char>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

TEST(MNIST, IdxRoundTrip) {
  fs::path root = fresh_dir("roundtrip");
  Tensor images = random_images(6);
  Tensor labels = kiln::tensor(std::vector<int64_t>{0, 9, 3, 3, 7, 1});
  data::datasets::write_mnist_idx(root.string(), images, labels);
  data::datasets::write_mnist_idx(root.string(), images.narrow(0, 0, 2).unsqueeze(1),
                                  labels.narrow(0, 0, 2), MNIST::Mode::kTest);
  EXPECT_EQ(fs::file_size(root / "train-images-idx3-ubyte"), 16u + 6 * 784);
  EXPECT_EQ(fs::file_size(root / "train-labels-idx1-ubyte"), 8u + 6);

  MNIST train(root.string());
  EXPECT_TRUE(train.is_train());
  ASSERT_EQ(train.size().value(), 6u);
  EXPECT_EQ(train.images().dtype(), kFloat32);
  EXPECT_EQ(train.images().sizes()[1], 1);
  EXPECT_EQ(train.images().sizes()[3], 28);
  EXPECT_EQ(train.targets().dtype(), kInt64);
  Tensor img = train.images().contiguous();
  const uint8_t* raw = images.data_ptr<uint8_t>();
  for (int64_t i = 0; i < 6 * 784; i += 97)
    EXPECT_FLOAT_EQ(img.data_ptr<float>()[i], raw[i] / 255.0f);
  auto e = train.get(4);
  EXPECT_EQ(e.target.data_ptr<int64_t>()[0], 7);
  EXPECT_EQ(e.data.sizes().size(), 3u);
  EXPECT_THROW(train.get(6), Error);

  MNIST test(root.string(), MNIST::Mode::kTest);
  EXPECT_FALSE(test.is_train());
  EXPECT_EQ(test.size().value(), 2u);
  EXPECT_EQ(test.targets().data_ptr<int64_t>()[1], 9);
  fs::remove_all(root);
}

TEST(MNIST, MissingFilesNameTheFile) {
  fs::path root = fresh_dir("missing");
  std::string msg = error_of(root.string());
  EXPECT_NE(msg.find((root / "train-images-idx3-ubyte").string() + "' (No such file"),
            std::string::npos)
      << msg;
  msg = error_of(root.string(), MNIST::Mode::kTest);
  EXPECT_NE(msg.find("t10k-images-idx3-ubyte"), std::string::npos) << msg;
}

TEST(MNIST, MalformedFiles) {
  fs::path root = fresh_dir("malformed");
  data::datasets::write_mnist_idx(root.string(), random_images(3),
                                  kiln::tensor(std::vector<int64_t>{1, 2, 3}));
  const fs::path images = root / "train-images-idx3-ubyte",
                 labels = root / "train-labels-idx1-ubyte";

  // Labels for 2 examples, images for 3.
  write_bytes(labels, {0, 0, 8, 1, 0, 0, 0, 2, 5, 6});
  std::string msg = error_of(root.string());
  EXPECT_NE(msg.find("train-images-idx3-ubyte' holds 3 images but '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train-labels-idx1-ubyte' holds 2 labels"), std::string::npos) << msg;

  // Bad magic (a label file where images belong).
  write_bytes(labels, {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3});
  fs::copy_file(labels, images, fs::copy_options::overwrite_existing);
  msg = error_of(root.string());
  EXPECT_NE(msg.find("train-images-idx3-ubyte' has magic number 2049, expected 2051"),
            std::string::npos)
      << msg;

  // Truncated payload, truncated header, extra bytes, and a header announcing absurd sizes.
  data::datasets::write_mnist_idx(root.string(), random_images(3),
                                  kiln::tensor(std::vector<int64_t>{1, 2, 3}));
  fs::resize_file(images, 16 + 3 * 784 - 1);
  msg = error_of(root.string());
  EXPECT_NE(msg.find("is truncated: 2367 bytes, expected 2368"), std::string::npos) << msg;
  fs::resize_file(images, 10);
  msg = error_of(root.string());
  EXPECT_NE(msg.find("is truncated: 10 bytes, shorter than the 16-byte idx header"),
            std::string::npos)
      << msg;
  write_bytes(labels, {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3, 4});
  data::datasets::write_mnist_idx(root.string(), random_images(3),
                                  kiln::tensor(std::vector<int64_t>{1, 2, 3}));
  write_bytes(labels, {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3, 4});
  msg = error_of(root.string());
  EXPECT_NE(msg.find("train-labels-idx1-ubyte' is longer than its header says"), std::string::npos)
      << msg;
  write_bytes(images,
              {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  msg = error_of(root.string());
  EXPECT_NE(msg.find("announces more data than the file's 16 bytes"), std::string::npos) << msg;
  fs::remove_all(root);
}

TEST(MNIST, WriteRejectsBadInputs) {
  fs::path root = fresh_dir("badwrite");
  EXPECT_THROW(data::datasets::write_mnist_idx(root.string(), random_images(2).to(kFloat32),
                                               kiln::tensor(std::vector<int64_t>{1, 2})),
               Error);
  EXPECT_THROW(data::datasets::write_mnist_idx(root.string(), random_images(2),
                                               kiln::tensor(std::vector<int64_t>{1, 2, 3})),
               Error);
  EXPECT_THROW(data::datasets::write_mnist_idx(root.string(), random_images(2),
                                               kiln::tensor(std::vector<int64_t>{1, 256})),
               Error);
}

// The shape of libtorch's mnist example: dataset.map(Normalize).map(Stack), a loader with a
// sampler type and a batch size, range-for over *loader with batch.data / batch.target.
TEST(MNIST, LibtorchExamplePipeline) {
  fs::path root = fresh_dir("pipeline");
  data::datasets::write_mnist_idx(root.string(), random_images(10),
                                  kiln::tensor(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  auto train_dataset = data::datasets::MNIST(root.string())
                           .map(data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader =
      data::make_data_loader<data::samplers::SequentialSampler>(std::move(train_dataset), 4);
  size_t seen = 0;
  int64_t target_sum = 0;
  for (auto& batch : *train_loader) {
    EXPECT_EQ(batch.data.dim(), 4);
    EXPECT_EQ(batch.data.size(1), 1);
    seen += static_cast<size_t>(batch.data.size(0));
    target_sum += batch.target.sum().item().to<int64_t>();
    float v = batch.data.contiguous().data_ptr<float>()[0];
    EXPECT_GE(v, -0.1307f / 0.3081f - 1e-5f);
    EXPECT_LE(v, (1.0f - 0.1307f) / 0.3081f + 1e-5f);
  }
  EXPECT_EQ(seen, train_dataset_size);
  EXPECT_EQ(target_sum, 45);
  auto test_loader =
      data::make_data_loader(data::datasets::MNIST(root.string()).map(data::transforms::Stack<>()),
                             data::DataLoaderOptions().batch_size(3).workers(2));
  seen = 0;
  for (const auto& batch : *test_loader) seen += static_cast<size_t>(batch.target.size(0));
  EXPECT_EQ(seen, 10u);
  fs::remove_all(root);
}

}  // namespace
}  // namespace kiln
