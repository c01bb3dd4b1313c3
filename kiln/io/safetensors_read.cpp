// Reading safetensors: the header is parsed and validated first (safetensors_header.cpp, see
// Note [Hostile files] there), so the tensors allocated here sum to at most the data section.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kiln/io/safetensors.h"
#include "kiln/io/safetensors_header.h"
#include "kiln/io/safetensors_quantized.h"
#include "kiln/ops/creation.h"

namespace kiln::io {
namespace {

using detail::Header;
using detail::Reporter;

detail::Reporter reporter_for(const std::string& source) {
  return Reporter("load_safetensors: '" + source + "': ");
}

// A bool byte other than 0 or 1 would be undefined behaviour wherever it is read as a C++ bool:
// any nonzero byte is true.
void normalize_bools(Tensor& t) {
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (size_t i = 0, n = t.nbytes(); i < n; ++i) p[i] = p[i] != 0;
}

// Allocates each tensor and fills it with `read(offset in the source, destination, bytes)`.
template <class Read>
SafetensorsFile make_tensors(Header& h, const Reporter& r, const Read& read) {
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  for (detail::TensorEntry& e : h.entries) {  // sorted by name: every insertion is at the end
    Tensor t = kiln::empty(e.shape, TensorOptions(e.dtype));
    if (e.end > e.begin) read(h.data_start + e.begin, t.data_ptr(), e.end - e.begin);
    if (e.dtype == kBool) normalize_bools(t);
    out.tensors.emplace_hint(out.tensors.end(), std::move(e.name), std::move(t));
  }
  detail::attach_quantizers(out, r);
  return out;
}

class FileHandle {
 public:
  FileHandle(const std::string& path, const Reporter& r)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    KILN_IO_CHECK(r, fd_ >= 0, "cannot open: ", std::strerror(errno));
  }
  ~FileHandle() { ::close(fd_); }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Reads exactly `n` bytes at `offset`.
void read_exactly(int fd, uint64_t offset, void* dst, size_t n, const Reporter& r) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    KILN_IO_CHECK(r, got >= 0, "read failed: ", std::strerror(errno));
    KILN_IO_CHECK(r, got > 0, "the file shrank while it was being read");
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

SafetensorsFile load_file(const std::string& path, const Reporter& r) {
  FileHandle file(path, r);
  struct stat st;
  KILN_IO_CHECK(r, ::fstat(file.fd(), &st) == 0, "cannot stat: ", std::strerror(errno));
  KILN_IO_CHECK(r, S_ISREG(st.st_mode), "not a regular file");
  const auto total = static_cast<uint64_t>(st.st_size);

  uint64_t declared = 0;
  if (total >= 8) read_exactly(file.fd(), 0, &declared, 8, r);
  const uint64_t n = detail::checked_header_length(declared, total, r);
  std::string text(n, '\0');
  read_exactly(file.fd(), 8, text.data(), n, r);
  Header h = detail::parse_header(text, total - 8 - n, r);
  h.data_start = 8 + n;
  text = std::string();  // the header's memory is not needed while the data is read
  return make_tensors(h, r, [&](uint64_t offset, void* dst, size_t bytes) {
    read_exactly(file.fd(), offset, dst, bytes, r);
  });
}

}  // namespace

SafetensorsFile from_safetensors_bytes(const uint8_t* data, size_t size,
                                       const std::string& source) {
  const Reporter r = reporter_for(source);
  return r.run([&] {
    Header h = detail::parse_header_bytes(data, size, r);
    return make_tensors(
        h, r, [&](uint64_t offset, void* dst, size_t n) { std::memcpy(dst, data + offset, n); });
  });
}

SafetensorsFile from_safetensors_bytes(const std::vector<uint8_t>& bytes,
                                       const std::string& source) {
  return from_safetensors_bytes(bytes.data(), bytes.size(), source);
}

SafetensorsFile load_safetensors(const std::string& path) {
  const Reporter r = reporter_for(path);
  return r.run([&] { return load_file(path, r); });
}

}  // namespace kiln::io
