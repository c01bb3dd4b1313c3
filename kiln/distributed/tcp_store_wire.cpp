#include "kiln/distributed/tcp_store_wire.h"

#include <utility>

#include "kiln/core/error.h"

namespace kiln::distributed::net {

uint64_t read_little_endian(const uint8_t* data, int width) {
  uint64_t value = 0;
  for (int i = 0; i < width; ++i) value |= uint64_t{data[i]} << (8 * i);
  return value;
}

FrameWriter& FrameWriter::bytes(const uint8_t* data, size_t size) {
  KILN_CHECK(size <= kMaxFrameBytes, "TCPStore: a value of ", size, " bytes is over the limit of ",
             kMaxFrameBytes);
  put_little_endian(size, 4);
  bytes_.insert(bytes_.end(), data, data + size);
  return *this;
}

FrameWriter& FrameWriter::strs(const std::vector<std::string>& values) {
  i64(static_cast<int64_t>(values.size()));
  for (const std::string& value : values) str(value);
  return *this;
}

std::vector<uint8_t> FrameWriter::finish() {
  const size_t size = bytes_.size() - 4;
  KILN_CHECK(size <= kMaxFrameBytes, "TCPStore: a message of ", size,
             " bytes is over the limit of ", kMaxFrameBytes);
  for (int i = 0; i < 4; ++i) bytes_[i] = static_cast<uint8_t>(size >> (8 * i));
  return std::move(bytes_);
}

std::vector<uint8_t> FrameReader::bytes() {
  const size_t size = read_little_endian(take(4), 4);
  const uint8_t* data = take(size);
  return std::vector<uint8_t>(data, data + size);
}

std::string FrameReader::str() {
  const size_t size = read_little_endian(take(4), 4);
  const uint8_t* data = take(size);
  return std::string(reinterpret_cast<const char*>(data), size);
}

std::vector<std::string> FrameReader::strs() {
  const int64_t count = i64();
  // Each string takes at least its 4-byte length, which bounds a count from a corrupt frame.
  KILN_CHECK(count >= 0 && static_cast<uint64_t>(count) <= (size_ - pos_) / 4,
             "TCPStore: malformed message (a list of ", count, " keys)");
  std::vector<std::string> values;
  values.reserve(count);
  for (int64_t i = 0; i < count; ++i) values.push_back(str());
  return values;
}

const uint8_t* FrameReader::take(size_t size) {
  KILN_CHECK(size <= size_ - pos_, "TCPStore: malformed message (it ends after ", size_, " bytes)");
  const uint8_t* start = data_ + pos_;
  pos_ += size;
  return start;
}

}  // namespace kiln::distributed::net
