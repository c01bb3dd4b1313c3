#pragma once
// serialize::OutputArchive / InputArchive, libtorch's key-value archives, over Kiln's file format
// (safetensors, kiln/io/safetensors.h). Keys of nested archives are joined with '.', so
// `archive.write("encoder", sub)` then `sub.write("weight", w)` stores "encoder.weight": the same
// names as state_dict(). Tensors are stored as tensors; the other values an IValue holds
// (double, int, bool, string, int list) go to the file's metadata table. Module::save/load and
// Optimizer::save/load write and read through these.
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/autograd/ivalue.h"
#include "kiln/core/tensor.h"

namespace kiln::io {
struct SafetensorsFile;
}

namespace kiln::serialize {

class OutputArchive {
 public:
  OutputArchive();

  // is_buffer is accepted for libtorch's signature; parameters and buffers are stored alike.
  void write(const std::string& key, const Tensor& tensor, bool is_buffer = false);
  void write(const std::string& key, const IValue& value);
  // Everything `nested` holds (now or later) under "key.".
  void write(const std::string& key, OutputArchive& nested);

  void save_to(const std::string& filename) const;
  void save_to(std::ostream& stream) const;
  // func(data, size) receives the bytes and returns how many it took (all of them).
  void save_to(const std::function<size_t(const void*, size_t)>& func) const;

 private:
  struct Entries;
  OutputArchive(std::shared_ptr<Entries> entries, std::string prefix);
  std::map<std::string, std::string> metadata() const;
  std::vector<uint8_t> bytes() const;

  std::shared_ptr<Entries> entries_;
  std::string prefix_;
};

class InputArchive {
 public:
  InputArchive();

  // Reads `key` into `tensor`: a defined tensor keeps its identity and dtype and takes the
  // values (shapes must match); an undefined one becomes the stored tensor.
  void read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  bool try_read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  void read(const std::string& key, IValue& value);
  bool try_read(const std::string& key, IValue& value);
  // `nested` sees the entries under "key.".
  void read(const std::string& key, InputArchive& nested);
  bool try_read(const std::string& key, InputArchive& nested);

  // device: where the tensors go (CPU when not given).
  void load_from(const std::string& filename, std::optional<Device> device = std::nullopt);
  void load_from(std::istream& stream, std::optional<Device> device = std::nullopt);
  void load_from(const char* data, size_t size, std::optional<Device> device = std::nullopt);

  // The keys directly readable here (tensors and values, nested ones with their dotted path).
  std::vector<std::string> keys() const;

 private:
  struct Entries;
  void adopt(io::SafetensorsFile file, std::optional<Device> device);
  std::shared_ptr<const Entries> entries_;
  std::string prefix_;
};

}  // namespace kiln::serialize
