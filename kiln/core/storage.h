#pragma once
// Storage: a reference-counted buffer from a device Allocator. Views share one Storage; its
// version counter lets autograd detect in-place changes to tensors it saved; a pending write
// (kiln/core/pending_write.h) makes access to its data wait for an asynchronous writer.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include "kiln/core/device.h"

namespace kiln {

class PendingWrite;

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  // nbytes is what allocate was asked for.
  virtual void deallocate(void* p, size_t nbytes) = 0;
};
// The allocator for a device type; CPU returns 64-byte aligned memory.
Allocator* get_allocator(DeviceType t);
// The default CPU allocator (kiln/core/cpu_allocator.cpp).
Allocator* cpu_allocator();
void set_allocator(DeviceType t, Allocator* a);
constexpr size_t kCpuAlignment = 64;

class StorageImpl {
 public:
  // Allocates nbytes on `device`.
  StorageImpl(size_t nbytes, Device device);
  // Wraps memory Kiln does not own; `deleter` (may be empty) runs when the storage dies.
  StorageImpl(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  // A storage without memory: what meta tensors (shapes only) have.
  static std::shared_ptr<StorageImpl> meta(Device device);
  // nbytes of page-locked host memory from a device backend's host allocator
  // (Tensor::pin_memory): a CPU storage that the device copies to and from asynchronously.
  static std::shared_ptr<StorageImpl> pinned(size_t nbytes, Allocator* host_allocator);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool is_meta() const { return meta_; }
  bool is_pinned() const { return pinned_; }
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  // Grows the buffer to nbytes, keeping its contents (Tensor::resize_). Only storage Kiln
  // allocated can grow; every tensor on this storage sees the new buffer.
  void grow(size_t nbytes);
  // Marks the data as still being written by `write` (pending_write.cpp): until it is done,
  // wait_for_pending_write() waits for it. A second pending write adds to the first.
  void set_pending_write(std::shared_ptr<PendingWrite> write);
  // What TensorImpl::data() does before every access to the data; throws the write's error.
  void wait_for_pending_write() const {
    if (has_pending_write_.load(std::memory_order_acquire)) finish_pending_write();
  }

 private:
  void finish_pending_write() const;
  StorageImpl() = default;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  bool meta_ = false;
  bool pinned_ = false;
  Allocator* allocator_ = nullptr;
  std::function<void(void*)> deleter_;
  std::atomic<uint32_t> version_{0};
  std::shared_ptr<PendingWrite> pending_write_;  // set by the thread queuing the write
  mutable std::atomic<bool> has_pending_write_{false};
};
using Storage = std::shared_ptr<StorageImpl>;

}  // namespace kiln
