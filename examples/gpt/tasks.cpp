#include "examples/gpt/tasks.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace gpt {

using namespace kiln;

AdditionTask::AdditionTask(int digits, uint64_t seed, double held_out_fraction) : digits_(digits) {
  KILN_CHECK(digits >= 1 && digits <= 6, "addition task: digits must be in [1, 6], got ", digits);
  int64_t limit = 1;
  for (int i = 0; i < digits; ++i) limit *= 10;
  std::vector<std::pair<int64_t, int64_t>> all;
  std::mt19937_64 rng(seed);
  if (limit * limit <= 1'000'000) {
    for (int64_t a = 0; a < limit; ++a)
      for (int64_t b = 0; b < limit; ++b) all.emplace_back(a, b);
  } else {
    std::uniform_int_distribution<int64_t> pick(0, limit - 1);
    for (int i = 0; i < 1'000'000; ++i) all.emplace_back(pick(rng), pick(rng));
  }
  std::shuffle(all.begin(), all.end(), rng);
  const auto held = static_cast<size_t>(static_cast<double>(all.size()) * held_out_fraction);
  test_.assign(all.begin(),
               all.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(held, 2000)));
  train_.assign(all.begin() + static_cast<std::ptrdiff_t>(held), all.end());
}

std::vector<int64_t> AdditionTask::encode(int64_t a, int64_t b) const {
  std::vector<int64_t> out;
  auto put = [&](int64_t v, int n, bool reversed) {
    std::vector<int64_t> d(n);
    for (int i = n - 1; i >= 0; --i, v /= 10) d[i] = v % 10;
    if (reversed) std::reverse(d.begin(), d.end());
    out.insert(out.end(), d.begin(), d.end());
  };
  put(a, digits_, false);
  out.push_back(10);  // '+'
  put(b, digits_, false);
  out.push_back(11);  // '='
  put(a + b, digits_ + 1, true);
  return out;
}

std::pair<Tensor, Tensor> AdditionTask::batch(int64_t batch_size, std::mt19937_64& rng) const {
  const int64_t L = sequence_length();
  std::vector<int64_t> x, y;
  std::uniform_int_distribution<size_t> pick(0, train_.size() - 1);
  for (int64_t i = 0; i < batch_size; ++i) {
    auto [a, b] = train_[pick(rng)];
    std::vector<int64_t> s = encode(a, b);
    x.insert(x.end(), s.begin(), s.end() - 1);
    for (int64_t t = 1; t < L; ++t) y.push_back(t < prompt_length() ? -100 : s[t]);
  }
  return {kiln::tensor(x).view({batch_size, L - 1}), kiln::tensor(y).view({batch_size, L - 1})};
}

std::pair<Tensor, Tensor> AdditionTask::test_set() const {
  std::vector<int64_t> prompts, answers;
  for (auto [a, b] : test_) {
    std::vector<int64_t> s = encode(a, b);
    prompts.insert(prompts.end(), s.begin(), s.begin() + prompt_length());
    answers.insert(answers.end(), s.begin() + prompt_length(), s.end());
  }
  const int64_t n = test_size();
  return {kiln::tensor(prompts).view({n, prompt_length()}),
          kiln::tensor(answers).view({n, answer_length()})};
}

std::string AdditionTask::decode(const Tensor& tokens) const {
  std::string s;
  Tensor t = tokens.contiguous();
  for (int64_t i = 0; i < t.numel(); ++i) s += kAlphabet[t.data_ptr<int64_t>()[i]];
  return s;
}

CharCorpus::CharCorpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), "demo: cannot open text file '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  KILN_CHECK(text.size() > 64, "demo: '", path, "' is too short to train on (", text.size(),
             " bytes)");
  chars_ = text;
  std::sort(chars_.begin(), chars_.end());
  chars_.erase(std::unique(chars_.begin(), chars_.end()), chars_.end());
  data_.reserve(text.size());
  for (char c : text) data_.push_back(static_cast<int64_t>(chars_.find(c)));
}

std::pair<Tensor, Tensor> CharCorpus::batch(int64_t batch_size, int64_t block,
                                            std::mt19937_64& rng) const {
  const int64_t n = static_cast<int64_t>(data_.size());
  block = std::min(block, n - 1);
  std::uniform_int_distribution<int64_t> pick(0, n - block - 1);
  std::vector<int64_t> x, y;
  for (int64_t i = 0; i < batch_size; ++i) {
    const int64_t s = pick(rng);
    x.insert(x.end(), data_.begin() + s, data_.begin() + s + block);
    y.insert(y.end(), data_.begin() + s + 1, data_.begin() + s + block + 1);
  }
  return {kiln::tensor(x).view({batch_size, block}), kiln::tensor(y).view({batch_size, block})};
}

Tensor CharCorpus::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  for (char c : text) {
    const size_t i = chars_.find(c);
    ids.push_back(i == std::string::npos ? 0 : static_cast<int64_t>(i));
  }
  return kiln::tensor(ids).view({1, static_cast<int64_t>(ids.size())});
}

std::string CharCorpus::decode(const Tensor& tokens) const {
  std::string s;
  Tensor t = tokens.contiguous();
  for (int64_t i = 0; i < t.numel(); ++i) s += chars_[t.data_ptr<int64_t>()[i]];
  return s;
}

}  // namespace gpt
