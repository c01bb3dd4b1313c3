#include "kiln/backend/cuda/host_allocator.h"

#include <bit>

#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/error.h"

namespace kiln::cuda {
namespace {

constexpr size_t kMinBlock = 512;

size_t rounded(size_t nbytes) { return std::bit_ceil(std::max(nbytes, kMinBlock)); }

}  // namespace

bool HostAllocator::ready(Block& b) {
  for (cudaEvent_t e : b.uses) {
    const cudaError_t err = cudaEventQuery(e);
    if (err == cudaErrorNotReady) return false;
    detail::check(err, "pin_memory: waiting for a copy from pinned memory");
  }
  for (cudaEvent_t e : b.uses) cudaEventDestroy(e);
  b.uses.clear();
  return true;
}

void* HostAllocator::allocate(size_t nbytes) {
  const size_t size = rounded(nbytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [first, last] = free_by_size_.equal_range(size);
    for (auto it = first; it != last; ++it) {
      Block& b = blocks_.at(it->second);
      if (!ready(b)) continue;
      const char* p = it->second;
      free_by_size_.erase(it);
      b.in_use = true;
      return const_cast<char*>(p);
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    KILN_FAIL("pin_memory: no CUDA device is available, so there is no pinned memory");
  }
  void* p = nullptr;
  detail::check(cudaHostAlloc(&p, size, cudaHostAllocDefault),
                "pin_memory: cudaHostAlloc of pinned host memory");
  std::lock_guard<std::mutex> lock(mutex_);
  Block& b = blocks_[static_cast<const char*>(p)];
  b.size = size;
  b.in_use = true;
  return p;
}

void HostAllocator::deallocate(void* p, size_t) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(static_cast<const char*>(p));
  KILN_CHECK(it != blocks_.end() && it->second.in_use,
             "pin_memory: freeing memory the pinned allocator did not hand out");
  it->second.in_use = false;
  free_by_size_.emplace(it->second.size, it->first);
}

void HostAllocator::record_use(const void* p, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.upper_bound(static_cast<const char*>(p));
  if (it == blocks_.begin()) return;
  --it;
  if (static_cast<const char*>(p) >= it->first + it->second.size) return;
  cudaEvent_t e;
  detail::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "pin_memory: an event");
  detail::check(cudaEventRecord(e, stream), "pin_memory: recording a copy's event");
  it->second.uses.push_back(e);
}

void HostAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = free_by_size_.begin(); it != free_by_size_.end();) {
    Block& b = blocks_.at(it->second);
    if (!ready(b)) {
      ++it;
      continue;
    }
    cudaFreeHost(const_cast<char*>(it->second));
    blocks_.erase(it->second);
    it = free_by_size_.erase(it);
  }
}

size_t HostAllocator::blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blocks_.size();
}

size_t HostAllocator::cached_blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_by_size_.size();
}

HostAllocator& host_allocator() {
  static auto* a = new HostAllocator();
  return *a;
}

}  // namespace kiln::cuda
