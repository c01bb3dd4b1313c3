#pragma once
// The wire format. Every message is a frame: a 4-byte length, then that many bytes. A request
// starts with its Op and a reply with its Status; the fields follow, integers as 8 bytes and
// strings as a 4-byte length and the bytes, all little-endian. A client sends one request and
// reads its reply before the next; get and wait carry their timeout, so the server answers them
// when the keys are set or with kTimeout, and the connection stays in step either way.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::distributed::net {

enum class Op : uint8_t { kSet = 1, kGet, kAdd, kCompareSet, kDeleteKey, kCheck, kWait, kNumKeys };
enum class Status : uint8_t { kOk = 1, kTimeout, kError };

constexpr size_t kMaxFrameBytes = size_t{1} << 30;
// Keys the store keeps for itself; num_keys() leaves them out.
constexpr std::string_view kInternalKeyPrefix = "__kiln_tcp_store/";
inline const std::string kJoinedKey = std::string(kInternalKeyPrefix) + "joined";
inline const std::string kAllJoinedKey = std::string(kInternalKeyPrefix) + "all_joined";

uint64_t read_little_endian(const uint8_t* data, int width);

// Builds one frame; finish() fills in its length and hands over its bytes.
class FrameWriter {
 public:
  FrameWriter() : bytes_(4, 0) {}
  FrameWriter& u8(uint8_t value) {
    bytes_.push_back(value);
    return *this;
  }
  FrameWriter& op(Op value) { return u8(static_cast<uint8_t>(value)); }
  FrameWriter& status(Status value) { return u8(static_cast<uint8_t>(value)); }
  FrameWriter& i64(int64_t value) {
    put_little_endian(static_cast<uint64_t>(value), 8);
    return *this;
  }
  FrameWriter& bytes(const uint8_t* data, size_t size);
  FrameWriter& bytes(const std::vector<uint8_t>& value) {
    return bytes(value.data(), value.size());
  }
  FrameWriter& str(const std::string& value) {
    return bytes(reinterpret_cast<const uint8_t*>(value.data()), value.size());
  }
  FrameWriter& strs(const std::vector<std::string>& values);
  std::vector<uint8_t> finish();

 private:
  void put_little_endian(uint64_t value, int width) {
    for (int i = 0; i < width; ++i) bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  }
  std::vector<uint8_t> bytes_;
};

// Reads the fields of one frame's body; throws kiln::Error when the frame ends too soon.
class FrameReader {
 public:
  FrameReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  explicit FrameReader(const std::vector<uint8_t>& body) : FrameReader(body.data(), body.size()) {}
  uint8_t u8() { return *take(1); }
  int64_t i64() { return static_cast<int64_t>(read_little_endian(take(8), 8)); }
  std::vector<uint8_t> bytes();
  std::string str();
  std::vector<std::string> strs();

 private:
  const uint8_t* take(size_t size);
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace kiln::distributed::net
