// Note [idx format]: a big-endian uint32 magic (2051 for images, 2049 for labels), a big-endian
// uint32 count, for images big-endian uint32 rows and cols, then count (* rows * cols) bytes.
// The file size must match exactly, checked before anything is allocated.
#include "kiln/data/mnist.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kiln/core/error.h"
#include "kiln/io/atomic_file.h"
#include "kiln/ops/creation.h"

namespace kiln::data::datasets {
namespace {

constexpr uint32_t kImageMagic = 2051;
constexpr uint32_t kLabelMagic = 2049;

uint32_t read_be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void append_be32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
}

// An idx file's header fields and its payload, as a uint8 tensor of `payload_shape`.
struct IdxFile {
  std::vector<uint32_t> dims;
  Tensor payload;
};

IdxFile read_idx(const std::string& path, uint32_t magic, size_t ndims) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  KILN_CHECK(in.good(), "MNIST: cannot open '", path, "' (", std::strerror(errno),
             "); expected the uncompressed idx files of the MNIST dataset there");
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  const uint64_t header_size = 4 * (1 + ndims);
  unsigned char header[16] = {};
  in.read(reinterpret_cast<char*>(header),
          static_cast<std::streamsize>(std::min<uint64_t>(file_size, header_size)));
  if (file_size >= 4) {
    uint32_t got_magic = read_be32(header);
    KILN_CHECK(got_magic == magic, "MNIST: '", path, "' has magic number ", got_magic,
               ", expected ", magic, " (not an idx ", magic == kImageMagic ? "image" : "label",
               " file)");
  }
  KILN_CHECK(file_size >= header_size, "MNIST: '", path, "' is truncated: ", file_size,
             " bytes, shorter than the ", header_size, "-byte idx header");
  in.clear();
  IdxFile f;
  uint64_t payload = 1;
  for (size_t i = 0; i < ndims; ++i) {
    f.dims.push_back(read_be32(header + 4 * (i + 1)));
    payload *= f.dims.back();  // at most (2^32)^3 / ... : checked against the file size below
    KILN_CHECK(payload <= file_size, "MNIST: '", path, "' is truncated: its header announces more ",
               "data than the file's ", file_size, " bytes");
  }
  KILN_CHECK(header_size + payload == file_size, "MNIST: '", path, "' is ",
             header_size + payload > file_size ? "truncated" : "longer than its header says", ": ",
             file_size, " bytes, expected ", header_size + payload);
  std::vector<int64_t> shape(f.dims.begin(), f.dims.end());
  f.payload = kiln::empty(shape, TensorOptions(kUInt8));
  in.read(static_cast<char*>(f.payload.data_ptr()), static_cast<std::streamsize>(payload));
  KILN_CHECK(in.good(), "MNIST: reading '", path, "' failed");
  return f;
}

std::string join(const std::string& root, const std::string& file) {
  return (std::filesystem::path(root) / file).string();
}

void write_file(const std::string& path, const std::string& header, const Tensor& payload) {
  io::AtomicFileWriter out(path);
  out.write(header.data(), header.size());
  if (payload.nbytes() > 0) out.write(payload.data_ptr(), payload.nbytes());
  out.commit();
}

}  // namespace

std::string MNIST::images_file(Mode mode) {
  return mode == Mode::kTrain ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte";
}
std::string MNIST::labels_file(Mode mode) {
  return mode == Mode::kTrain ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte";
}

MNIST::MNIST(const std::string& root, Mode mode) : is_train_(mode == Mode::kTrain) {
  const std::string image_path = join(root, images_file(mode));
  const std::string label_path = join(root, labels_file(mode));
  IdxFile images = read_idx(image_path, kImageMagic, 3);
  IdxFile labels = read_idx(label_path, kLabelMagic, 1);
  KILN_CHECK(images.dims[0] == labels.dims[0], "MNIST: '", image_path, "' holds ", images.dims[0],
             " images but '", label_path, "' holds ", labels.dims[0], " labels");
  images_ = images.payload.unsqueeze(1).to(kFloat32).div(255.0);
  targets_ = labels.payload.to(kInt64);
}

Example<> MNIST::get(size_t index) {
  KILN_CHECK(index < static_cast<size_t>(images_.size(0)), "MNIST: index ", index,
             " is out of range for ", images_.size(0), " examples");
  auto i = static_cast<int64_t>(index);
  return {images_[i], targets_[i]};
}

std::optional<size_t> MNIST::size() const { return static_cast<size_t>(images_.size(0)); }

void write_mnist_idx(const std::string& root, const Tensor& images, const Tensor& labels,
                     MNIST::Mode mode) {
  KILN_CHECK(images.defined() && images.dtype() == kUInt8 &&
                 (images.dim() == 3 || (images.dim() == 4 && images.size(1) == 1)),
             "write_mnist_idx: images must be uint8 [N, rows, cols] or [N, 1, rows, cols]");
  KILN_CHECK(labels.defined() && labels.dim() == 1 && is_integral(labels.dtype()),
             "write_mnist_idx: labels must be a 1-D integer tensor");
  Tensor pixels = images.dim() == 4 ? images.select(1, 0) : images;
  const int64_t n = pixels.size(0);
  KILN_CHECK(labels.size(0) == n, "write_mnist_idx: ", n, " images but ", labels.size(0),
             " labels");
  KILN_CHECK(n == 0 || (labels.min().item().to<int64_t>() >= 0 &&
                        labels.max().item().to<int64_t>() <= 255),
             "write_mnist_idx: labels must lie in 0..255");
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  KILN_CHECK(!ec, "write_mnist_idx: cannot create directory '", root, "': ", ec.message());
  std::string image_header, label_header;
  append_be32(image_header, kImageMagic);
  for (int64_t d = 0; d < 3; ++d) append_be32(image_header, static_cast<uint32_t>(pixels.size(d)));
  append_be32(label_header, kLabelMagic);
  append_be32(label_header, static_cast<uint32_t>(n));
  write_file(join(root, MNIST::images_file(mode)), image_header, pixels.contiguous());
  write_file(join(root, MNIST::labels_file(mode)), label_header, labels.to(kUInt8).contiguous());
}

}  // namespace kiln::data::datasets
