// safetensors files built to hurt the reader: huge and deep headers, many tensors, bytes after the
// JSON, duplicates, bad offsets, bad UTF-8, bad numbers. Each must load or fail with a kiln::Error
// naming the file, in time linear in its size (each case here runs in well under a second; the
// quadratic reader this replaced took minutes on some of them) and with a short message.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/io/safetensors.h"
#include "kiln/ops/creation.h"

namespace kiln {
namespace {

using io::from_safetensors_bytes;

// A file with `header` as its JSON (not padded) and `data_bytes` bytes of data.
std::vector<uint8_t> craft(const std::string& header, size_t data_bytes = 0,
                           uint64_t declared = 0) {
  uint64_t n = declared ? declared : header.size();
  std::vector<uint8_t> bytes(8 + header.size() + data_bytes, 0x5a);
  std::memcpy(bytes.data(), &n, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    from_safetensors_bytes(bytes, "bad.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// The message names the file, contains `text` and quotes no more than a few hundred bytes.
#define EXPECT_LOAD_ERROR(bytes, text)                                                         \
  do {                                                                                         \
    std::string msg = error_of(bytes);                                                         \
    EXPECT_NE(msg.find("load_safetensors: 'bad.safetensors': "), std::string::npos) << msg;    \
    EXPECT_NE(msg.find(text), std::string::npos) << "expected \"" << text << "\" in: " << msg; \
    EXPECT_LT(msg.size(), 600u) << msg.substr(0, 600);                                         \
  } while (0)

// "name":{"dtype":"U8","shape":<shape>,"data_offsets":[begin,end]}. Strings here are built by
// appending: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::string&&.
std::string u8_tensor(const std::string& name, size_t begin, size_t end, const std::string& shape) {
  std::string s = "\"";
  s += name;
  s += "\":{\"dtype\":\"U8\",\"shape\":";
  s += shape;
  s += ",\"data_offsets\":[";
  s += std::to_string(begin);
  s += ',';
  s += std::to_string(end);
  s += "]}";
  return s;
}

// "t<i>"
std::string name_of(int i) {
  std::string s = "t";
  s += std::to_string(i);
  return s;
}

// {entry,entry,...}
std::string object(std::initializer_list<std::string> entries) {
  std::string s = "{";
  for (const std::string& e : entries) {
    if (s.size() > 1) s += ',';
    s += e;
  }
  s += '}';
  return s;
}

// ---- the issue's files ----

TEST(SafetensorsHostile, ShapeWith200000Dimensions) {
  std::string shape = "[1";
  for (int i = 1; i < 200'000; ++i) shape += ",1";
  shape += "]";
  EXPECT_LOAD_ERROR(craft(object({u8_tensor("a", 0, 1, shape)}), 1),
                    "tensor 'a': shape has more than 64 dimensions (the limit)");
}

TEST(SafetensorsHostile, DimensionLimitIsExact) {
  std::string shape64 = "[1", shape65;
  for (int i = 1; i < 64; ++i) shape64 += ",1";
  shape65 = shape64 + ",1]";
  shape64 += "]";
  auto ok = from_safetensors_bytes(craft(object({u8_tensor("a", 0, 1, shape64)}), 1));
  EXPECT_EQ(ok.tensors.at("a").dim(), 64);
  EXPECT_LOAD_ERROR(craft(object({u8_tensor("a", 0, 1, shape65)}), 1), "more than 64");
}

TEST(SafetensorsHostile, HundredThousandZeroSizeTensors) {
  std::string header = "{";
  for (int i = 0; i < 100'000; ++i) {
    if (i) header += ',';
    header += u8_tensor(name_of(i), 0, 0, "[0]");
  }
  header += "}";
  auto loaded = from_safetensors_bytes(craft(header));
  ASSERT_EQ(loaded.tensors.size(), 100'000u);
  EXPECT_EQ(loaded.tensors.at("t99999").numel(), 0);
}

TEST(SafetensorsHostile, FiftyThousandOneByteTensors) {
  std::string header = "{";
  for (int i = 0; i < 50'000; ++i) {
    if (i) header += ',';
    header += u8_tensor(name_of(i), i, i + 1, "[1]");
  }
  header += "}";
  std::vector<uint8_t> bytes = craft(header, 50'000);
  for (int i = 0; i < 50'000; ++i) bytes[8 + header.size() + i] = static_cast<uint8_t>(i * 7);
  auto loaded = from_safetensors_bytes(bytes);
  ASSERT_EQ(loaded.tensors.size(), 50'000u);
  EXPECT_EQ(loaded.tensors.at("t12345").data_ptr<uint8_t>()[0], static_cast<uint8_t>(12345 * 7));
}

TEST(SafetensorsHostile, HeaderAtAndAboveTheSizeLimit) {
  // Exactly 100,000,000 bytes: "{}" padded with spaces is a valid, empty file.
  std::string header = "{}";
  header.resize(100'000'000, ' ');
  auto loaded = from_safetensors_bytes(craft(header));
  EXPECT_TRUE(loaded.tensors.empty());
  header.clear();
  header.shrink_to_fit();
  // One byte more is rejected from the length alone, before anything is read or allocated.
  EXPECT_LOAD_ERROR(craft("{}", 0, 100'000'001),
                    "header length 100000001 exceeds the limit of 100000000 bytes");
  EXPECT_LOAD_ERROR(craft("{}", 0, uint64_t{1} << 63), "exceeds the limit");
}

TEST(SafetensorsHostile, BytesAfterTheJson) {
  EXPECT_LOAD_ERROR(craft(std::string("{}\0\0\0\0\0\0", 8)),
                    "not valid JSON at byte 2: unexpected '\\x00' after the JSON object");
  EXPECT_LOAD_ERROR(craft(std::string("{} \0", 4)), "unexpected '\\x00'");
  EXPECT_LOAD_ERROR(craft("{}}"), "unexpected '}' after the JSON object");
  EXPECT_LOAD_ERROR(craft("{} x"), "unexpected 'x'");
  EXPECT_LOAD_ERROR(craft("{}\f"), "unexpected '\\x0C'");
  // JSON whitespace before and after the object is padding the format allows.
  EXPECT_TRUE(from_safetensors_bytes(craft(" \t\r\n{}\t\r\n ")).tensors.empty());
  EXPECT_LOAD_ERROR(craft(std::string("\0{}", 3)), "not a JSON object");
  EXPECT_LOAD_ERROR(craft(""), "not a JSON object");
}

TEST(SafetensorsHostile, DuplicateKeys) {
  EXPECT_LOAD_ERROR(craft(object({u8_tensor("a", 0, 1, "[1]"), u8_tensor("a", 1, 2, "[1]")}), 2),
                    "duplicate key 'a' in the header");
  // The same name spelled with an escape is the same name.
  EXPECT_LOAD_ERROR(
      craft(object({u8_tensor("a", 0, 1, "[1]"), u8_tensor("\\u0061", 1, 2, "[1]")}), 2),
      "duplicate key 'a'");
  EXPECT_LOAD_ERROR(craft(R"({"__metadata__":{"k":"1","k":"2"}})"),
                    "duplicate key 'k' in __metadata__");
  EXPECT_LOAD_ERROR(craft(R"({"__metadata__":{},"__metadata__":{}})"),
                    "duplicate key '__metadata__'");
  EXPECT_LOAD_ERROR(
      craft(R"({"a":{"dtype":"U8","shape":[1],"dtype":"U8","data_offsets":[0,1]}})", 1),
      "tensor 'a': duplicate field 'dtype'");
}

TEST(SafetensorsHostile, OffsetsMustTileTheData) {
  EXPECT_LOAD_ERROR(craft(object({u8_tensor("a", 0, 2, "[2]"), u8_tensor("b", 1, 3, "[2]")}), 3),
                    "tensor 'b': data_offsets [1, 3] overlap tensor 'a' [0, 2]");
  EXPECT_LOAD_ERROR(craft(object({u8_tensor("a", 0, 1, "[1]"), u8_tensor("b", 2, 3, "[1]")}), 3),
                    "tensor 'b': data_offsets [2, 3] leave a gap of 1 bytes after byte 1");
  EXPECT_LOAD_ERROR(craft(object({u8_tensor("a", 0, 1, "[1]")}), 2),
                    "1 bytes of trailing data after the last tensor");
  EXPECT_LOAD_ERROR(craft(object({u8_tensor("a", 0, 4, "[4]")}), 3),
                    "extend past the end of the data (3 bytes; is the file truncated?)");
  EXPECT_LOAD_ERROR(craft(object({u8_tensor("a", 0, 18446744073709551615ull, "[1]")}), 1),
                    "hold 18446744073709551615 bytes but dtype U8 and shape [1] need 1");
  // Zero-size tensors may share any offset inside the data; listed order does not matter.
  auto ok =
      from_safetensors_bytes(craft(object({u8_tensor("b", 1, 2, "[1]"), u8_tensor("z", 1, 1, "[0]"),
                                           u8_tensor("a", 0, 1, "[1]")}),
                                   2));
  EXPECT_EQ(ok.tensors.size(), 3u);
}

TEST(SafetensorsHostile, TruncatedFiles) {
  auto good = craft(object({u8_tensor("a", 0, 16, "[4, 4]")}), 16);
  for (size_t n : {0, 1, 7, 8, 9, 20}) {
    EXPECT_THROW(from_safetensors_bytes(std::vector<uint8_t>(good.begin(), good.begin() + n)),
                 Error)
        << n;
  }
  EXPECT_LOAD_ERROR(std::vector<uint8_t>(5, 0), "file is too small to hold a safetensors header");
  EXPECT_LOAD_ERROR(std::vector<uint8_t>(good.begin(), good.end() - 1), "is the file truncated?");
  // A huge tensor whose offsets point far past the data: rejected before anything is allocated.
  EXPECT_LOAD_ERROR(craft(R"({"a":{"dtype":"F32","shape":[1000000000000],)"
                          R"("data_offsets":[0,4000000000000]}})",
                          16),
                    "extend past the end of the data (16 bytes; is the file truncated?)");
  EXPECT_LOAD_ERROR(std::vector<uint8_t>(good.begin(), good.begin() + 12),
                    "exceeds the 4 bytes that follow it (is the file truncated?)");
}

TEST(SafetensorsHostile, InvalidUtf8) {
  const std::string bad_name = "{\"\xff\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
  EXPECT_LOAD_ERROR(craft(bad_name), "invalid UTF-8 byte '\\xFF' in a string as a tensor name");
  EXPECT_LOAD_ERROR(craft("{\"__metadata__\":{\"k\":\"caf\xc3\"}}"), "invalid UTF-8 byte");
  EXPECT_LOAD_ERROR(craft("{\"\xc0\x80\":1}"), "invalid UTF-8");          // overlong NUL
  EXPECT_LOAD_ERROR(craft("{\"\xed\xa0\x80\":1}"), "invalid UTF-8");      // a surrogate as UTF-8
  EXPECT_LOAD_ERROR(craft("{\"\xf4\x90\x80\x80\":1}"), "invalid UTF-8");  // above U+10FFFF
  EXPECT_LOAD_ERROR(craft(R"({"\ud800":1})"), "not followed by a low surrogate");
  EXPECT_LOAD_ERROR(craft(R"({"\udc00":1})"), "lone low surrogate");
  EXPECT_LOAD_ERROR(craft(R"({"\x41":1})"), "invalid escape \\x in a string");
  EXPECT_LOAD_ERROR(craft("{\"a\tb\":1}"), "control byte '\\x09' in a string");
  // Well-formed names of every kind load, escapes decoded.
  std::string header =
      object({u8_tensor("caf\xc3\xa9 \\\"q\\\" \\u00e9\\n\\ud83d\\ude00", 0, 0, "[0]")});
  auto ok = from_safetensors_bytes(craft(header));
  EXPECT_EQ(ok.tensors.count("caf\xc3\xa9 \"q\" \xc3\xa9\n\xf0\x9f\x98\x80"), 1u);
}

TEST(SafetensorsHostile, Numbers) {
  auto with_shape = [](const std::string& dim) {
    return craft(object({u8_tensor("a", 0, 0, "[" + dim + "]")}));
  };
  EXPECT_LOAD_ERROR(with_shape("-1"), "a dimension of the shape is negative (-1)");
  EXPECT_LOAD_ERROR(with_shape("-0"), "is negative (-0)");
  EXPECT_LOAD_ERROR(with_shape("2.5"), "must be a non-negative integer, got 2.5");
  EXPECT_LOAD_ERROR(with_shape("1e3"), "must be a non-negative integer, got 1e3");
  EXPECT_LOAD_ERROR(with_shape("01"), "leading zero");
  EXPECT_LOAD_ERROR(with_shape("\"1\""), "must be a non-negative integer, found '\"'");
  EXPECT_LOAD_ERROR(with_shape("18446744073709551616"), "is too large (18446744073709551616)");
  EXPECT_LOAD_ERROR(with_shape("18446744073709551615"),
                    "dimension 18446744073709551615 of the shape is too large");
  EXPECT_LOAD_ERROR(with_shape(std::string(100'000, '7')), "is too large (7777777");
  EXPECT_LOAD_ERROR(with_shape("0, 4611686018427387904, 4"),
                    "has more elements than can be addressed");
  EXPECT_LOAD_ERROR(craft(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20),
                    "hold 20 bytes but dtype F32 and shape [2, 3] need 24");
  EXPECT_LOAD_ERROR(craft(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[8,4]}})", 8),
                    "out of order (begin > end)");
  EXPECT_LOAD_ERROR(craft(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 2),
                    "data_offsets must be a list [begin, end]");
}

TEST(SafetensorsHostile, StructureErrors) {
  EXPECT_LOAD_ERROR(craft("{\"a\""),
                    "not valid JSON at byte 4: expected ':' after a tensor name, found the end");
  EXPECT_LOAD_ERROR(craft("[1, 2]"), "not a JSON object");
  EXPECT_LOAD_ERROR(craft(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},})"),
                    "expected a string as a tensor name, found '}'");
  EXPECT_LOAD_ERROR(craft(R"({"a": {"dtype": "F32", "shape": [1]}})"),
                    "tensor 'a': missing field 'data_offsets'");
  EXPECT_LOAD_ERROR(craft(R"({"a": 3})"), "tensor 'a': expected an object");
  EXPECT_LOAD_ERROR(craft(R"({"a": {"dtype": 5}})"), "tensor 'a': dtype must be a string");
  EXPECT_LOAD_ERROR(craft(R"({"a": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})", 8),
                    "tensor 'a': unsupported dtype \"C64\"");
  EXPECT_LOAD_ERROR(craft(R"({"a": {"shape": 1}})"), "tensor 'a': shape must be a list");
  EXPECT_LOAD_ERROR(craft(R"({"__metadata__": {"k": 1}})"),
                    "__metadata__ value of 'k' must be a string");
  EXPECT_LOAD_ERROR(craft(R"({"__metadata__": [1]})"), "__metadata__ must be an object");
  // "__metadata__": null is no table (the reference accepts it); unknown fields are skipped.
  auto ok = from_safetensors_bytes(
      craft(R"({"__metadata__": null, "a": {"x": {"y": [1, -2.5e-3, true, false, null, "s", {}]},)"
            R"( "dtype": "U8", "shape": [1], "data_offsets": [0, 1], "z": []}})",
            1));
  EXPECT_TRUE(ok.metadata.empty());
  EXPECT_EQ(ok.tensors.size(), 1u);
}

TEST(SafetensorsHostile, BoolBytesOtherThanZeroOrOneReadAsTrue) {
  std::vector<uint8_t> bytes =
      craft(R"({"m":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}})", 4);
  const uint8_t raw[] = {0, 1, 2, 255};
  std::memcpy(bytes.data() + bytes.size() - 4, raw, 4);
  Tensor m = from_safetensors_bytes(bytes).tensors.at("m");
  const auto* got = static_cast<const uint8_t*>(m.data_ptr());
  EXPECT_EQ(std::vector<uint8_t>(got, got + 4), (std::vector<uint8_t>{0, 1, 1, 1}));
}

TEST(SafetensorsHostile, DeepNestingIsBoundedAndIterative) {
  auto nested = [](int depth) {
    return "{\"a\":{\"x\":" + std::string(depth, '[') + std::string(depth, ']') +
           ",\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
  };
  EXPECT_EQ(from_safetensors_bytes(craft(nested(125))).tensors.size(), 1u);  // 127 levels in all
  EXPECT_LOAD_ERROR(craft(nested(126)), "nested deeper than 127 levels");
  EXPECT_LOAD_ERROR(craft(nested(1'000'000)), "nested deeper than 127 levels");
}

// Out of memory while reading is a kiln::OutOfMemoryError naming the file, not a std::bad_alloc:
// a child process whose address space is capped reads a file with a 90 MB header.
TEST(SafetensorsHostile, OutOfMemoryIsAKilnError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the cap allows";
#endif
  const std::string path = ::testing::TempDir() + "kiln_io_oom_" + std::to_string(::getpid());
  {
    std::string header = R"({"__metadata__":{"k":")";
    header.append(90'000'000, 'v');
    header += "\"}}";
    auto bytes = craft(header);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t cap =
        static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (64u << 20);
    rlimit limit{cap, cap};
    ::setrlimit(RLIMIT_AS, &limit);
    try {
      io::load_safetensors(path);
    } catch (const OutOfMemoryError& e) {
      ::_exit(std::string(e.what()).find("load_safetensors: '" + path + "': out of memory") == 0
                  ? 0
                  : 2);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  std::remove(path.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: wrong message, 3: another exception, 4: no error";
}

TEST(SafetensorsHostile, MessagesQuoteLittleOfTheInput) {
  const std::string long_name(1'000'000, 'n');
  std::string msg = error_of(craft("{\"" + long_name + "\":3}"));
  EXPECT_NE(msg.find("tensor 'nnnn"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("... (1000000 bytes)"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 300u);
  std::string shape = "[3";
  for (int i = 1; i < 60; ++i) shape += ",3";
  msg = error_of(craft(object({u8_tensor("a", 0, 1, shape + "]")}), 1));
  EXPECT_NE(msg.find("[3, 3, 3, 3, 3, 3, 3, 3, ... (60 dimensions)]"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln
