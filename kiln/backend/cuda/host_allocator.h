#pragma once
// Pinned (page-locked) host memory for the CUDA backend, as PyTorch's CachingHostAllocator:
// blocks from cudaHostAlloc, rounded up to a power of two and cached when freed. An asynchronous
// copy records an event for the block it reads or writes (record_use), and a freed block is
// handed out again only once its events have completed, so a new tensor never shares memory
// with a copy still in flight.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "kiln/core/storage.h"

namespace kiln::cuda {

class HostAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override;
  void deallocate(void* p, size_t nbytes) override;

  // The work queued on `stream` so far reads or writes the block that holds p.
  void record_use(const void* p, cudaStream_t stream);
  // Returns the cached blocks whose events have completed to the driver.
  void empty_cache();
  // Blocks held (in use or cached) and bytes of them (tests, stats).
  size_t blocks() const;
  size_t cached_blocks() const;

 private:
  struct Block {
    size_t size = 0;
    bool in_use = false;
    std::vector<cudaEvent_t> uses;  // events of asynchronous work on the block
  };
  // Whether the block's recorded work is done (its events are then released).
  static bool ready(Block& b);

  mutable std::mutex mutex_;
  std::map<const char*, Block> blocks_;              // base address -> block
  std::multimap<size_t, const char*> free_by_size_;  // cached blocks
};

// The backend's one host allocator (never destroyed: pinned tensors may outlive static
// destruction).
HostAllocator& host_allocator();

}  // namespace kiln::cuda
