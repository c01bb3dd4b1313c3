#pragma once
// The demo's data: multi-digit addition written as text (the default, self-contained task with a
// measurable held-out accuracy) or a character-level corpus read from any text file.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace gpt {

// "12+07=" followed by the sum's digits reversed ("91" + leading zeros: 12+07=19 -> "910"), so a
// left-to-right model produces the least significant digit first, as people add.
class AdditionTask {
 public:
  AdditionTask(int digits, uint64_t seed, double held_out_fraction = 0.1);
  static constexpr const char* kAlphabet = "0123456789+=";
  int64_t vocab_size() const { return 12; }
  int64_t prompt_length() const { return 2 * digits_ + 2; }
  int64_t answer_length() const { return digits_ + 1; }
  int64_t sequence_length() const { return prompt_length() + answer_length(); }
  int64_t train_size() const { return static_cast<int64_t>(train_.size()); }
  int64_t test_size() const { return static_cast<int64_t>(test_.size()); }

  // (inputs, targets) of a random training batch: targets are inputs shifted by one, with the
  // prompt positions set to -100 (ignored by cross_entropy): the model learns the answers.
  std::pair<kiln::Tensor, kiln::Tensor> batch(int64_t batch_size, std::mt19937_64& rng) const;
  // Prompts (N, prompt_length) and answers (N, answer_length) of held-out problems.
  std::pair<kiln::Tensor, kiln::Tensor> test_set() const;
  std::string decode(const kiln::Tensor& tokens) const;

 private:
  std::vector<int64_t> encode(int64_t a, int64_t b) const;
  int digits_;
  std::vector<std::pair<int64_t, int64_t>> train_, test_;
};

// Random windows of a text file, one token per distinct character.
class CharCorpus {
 public:
  explicit CharCorpus(const std::string& path);
  int64_t vocab_size() const { return static_cast<int64_t>(chars_.size()); }
  std::pair<kiln::Tensor, kiln::Tensor> batch(int64_t batch_size, int64_t block,
                                              std::mt19937_64& rng) const;
  kiln::Tensor encode(const std::string& text) const;
  std::string decode(const kiln::Tensor& tokens) const;

 private:
  std::string chars_;
  std::vector<int64_t> data_;
};

}  // namespace gpt
