// load_program on damaged and hostile files: every mutation of a valid program file either loads
// (and then runs or fails with a kiln::Error) or is refused with a kiln::Error. Never a crash,
// another exception, or an allocation beyond the file's size (the sanitizer build runs this too).
#include <gtest/gtest.h>

#include <random>

#include "kiln/kiln.h"

namespace kiln {
namespace {

struct Outcome {
  int loaded = 0, refused = 0, ran = 0;
};

// Loads `bytes`; runs what loads on `input`.
void try_load(const std::vector<uint8_t>& bytes, const Tensor& input, Outcome& o) {
  std::optional<ExportedProgram> p;
  try {
    p.emplace(load_program_from_bytes(bytes.data(), bytes.size(), "fuzz.kpt"));
  } catch (const Error& e) {
    ++o.refused;
    EXPECT_NE(std::string(e.what()).find("fuzz.kpt"), std::string::npos) << e.what();
    return;
  }
  ++o.loaded;
  try {
    NoGradGuard no_grad;
    p->run({input});
    ++o.ran;
  } catch (const Error&) {
  }
}

std::vector<uint8_t> program_bytes() {
  manual_seed(11);
  const Tensor w = randn({4, 6}), b = randn({6});
  auto fn = [w, b](const Tensor& x) {
    Tensor h = softmax(gelu(x.matmul(w) + b), -1);
    h = cond(
        x.sum() > 0, [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2}; },
        [&b](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] - b}; }, {h})[0];
    return cat({h.slice(1, 0, 3), h.narrow(1, 3, 3) * 2}, 0).reshape({-1, 2}).sum(0);
  };
  return export_program(fn, {randn({5, 4})}, {{{0, Dim("batch", 2, 64)}}}).to_bytes();
}

TEST(ProgramFuzz, DamagedBytesAreRefusedOrLoad) {
  const std::vector<uint8_t> valid = program_bytes();
  const Tensor input = randn({7, 4});
  Outcome o;
  try_load(valid, input, o);
  ASSERT_EQ(o.ran, 1);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          bytes[at] = static_cast<uint8_t>(rng());
          break;
        case 2:
          bytes.resize(at);
          break;
        default:
          bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                       static_cast<uint8_t>(rng()));
      }
      if (bytes.empty()) break;
    }
    try_load(bytes, input, o);
  }
  std::printf("damaged files: %d refused, %d loaded, %d ran\n", o.refused, o.loaded, o.ran);
  EXPECT_GT(o.refused, 1000);
}

// The graph's JSON edited token by token and wrapped in a valid file: reaches the program's own
// validation rather than the container's.
TEST(ProgramFuzz, HostileGraphsAreRefusedOrRunSafely) {
  const std::vector<uint8_t> valid = program_bytes();
  const io::SafetensorsFile file = io::from_safetensors_bytes(valid);
  const std::string json = file.metadata.at("kiln.program");
  const Tensor input = randn({7, 4});
  static const char* kNumbers[] = {"-2",
                                   "-1",
                                   "0",
                                   "1",
                                   "2",
                                   "3",
                                   "5",
                                   "17",
                                   "1000",
                                   "9223372036854775807",
                                   "9223372036854775808",
                                   "1.5"};
  static const char* kStrings[] = {"\"\"",
                                   "\"batch\"",
                                   "\"add\"",
                                   "\"float64\"",
                                   "\"cuda:0\"",
                                   "\"batch*batch\"",
                                   "\"(batch//0)\"",
                                   "\"min(batch, 1)\"",
                                   "\"input\"",
                                   "\"node\"",
                                   "\"parameter\"",
                                   "\"nosuchop\"",
                                   "null",
                                   "[]",
                                   "{}",
                                   "true"};
  std::mt19937_64 rng(2);
  Outcome o;
  for (int i = 0; i < 5000; ++i) {
    std::string text = json;
    const int edits = 1 + static_cast<int>(rng() % 2);
    for (int k = 0; k < edits; ++k) {
      // Replace the token at a random position: a number with a number, a string with a string.
      size_t at = rng() % text.size();
      while (at < text.size() &&
             !(std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '"'))
        ++at;
      if (at >= text.size()) continue;
      if (text[at] == '"') {
        const size_t end = text.find('"', at + 1);
        if (end == std::string::npos) continue;
        text.replace(at, end - at + 1, kStrings[rng() % std::size(kStrings)]);
      } else {
        while (at > 0 &&
               (std::isdigit(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '-'))
          --at;
        size_t end = at;
        while (end < text.size() &&
               (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '-'))
          ++end;
        text.replace(at, end - at, kNumbers[rng() % std::size(kNumbers)]);
      }
    }
    std::map<std::string, std::string> metadata = file.metadata;
    metadata["kiln.program"] = text;
    std::vector<uint8_t> bytes;
    try {
      bytes = io::to_safetensors_bytes(file.tensors, metadata);
    } catch (const Error&) {
      continue;
    }
    try_load(bytes, input, o);
  }
  std::printf("hostile graphs: %d refused, %d loaded, %d ran\n", o.refused, o.loaded, o.ran);
  EXPECT_GT(o.refused, 100);
  EXPECT_GT(o.loaded, 10);
}

}  // namespace
}  // namespace kiln
