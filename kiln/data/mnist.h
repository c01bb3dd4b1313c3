#pragma once
// The MNIST dataset in its idx files, as torch::data::datasets::MNIST: `root` holds
// train-images-idx3-ubyte / train-labels-idx1-ubyte (Mode::kTrain) or t10k-images-idx3-ubyte /
// t10k-labels-idx1-ubyte (Mode::kTest), uncompressed. Images become float32 [N, 1, rows, cols]
// in [0, 1], labels int64 [N]. Missing or malformed files (bad magic number, truncated, image
// and label counts that differ) give a kiln::Error naming the file.
#include <string>

#include "kiln/data/dataset.h"

namespace kiln::data::datasets {

class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };

  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  bool is_train() const noexcept { return is_train_; }
  const Tensor& images() const noexcept { return images_; }
  const Tensor& targets() const noexcept { return targets_; }

  static std::string images_file(Mode mode);  // "train-images-idx3-ubyte", ...
  static std::string labels_file(Mode mode);

 private:
  Tensor images_, targets_;
  bool is_train_;
};

// Writes `images` (uint8 [N, rows, cols] or [N, 1, rows, cols]) and `labels` (any integer dtype,
// values 0..255, [N]) as the idx files MNIST(root, mode) reads, creating `root` if needed. Each
// file is written atomically.
void write_mnist_idx(const std::string& root, const Tensor& images, const Tensor& labels,
                     MNIST::Mode mode = MNIST::Mode::kTrain);

}  // namespace kiln::data::datasets
