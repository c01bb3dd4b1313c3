#include "kiln/core/storage.h"

#include <sys/mman.h>

#include <cstdlib>

#include "kiln/core/error.h"

namespace kiln {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    // Buffers beyond glibc's largest mmap threshold (32 MB) get fresh pages from the kernel on
    // every allocation, and first touching them is most of the time of a memory-bound op that
    // writes one (an index_select into 256 MB, say). They are aligned to, and advised to be
    // backed by, 2 MB transparent huge pages: one fault per 2 MB instead of per 4 KB. Smaller
    // buffers are left to malloc, which reuses freed memory without faults.
    const size_t align = nbytes > kHugeThreshold ? kHugePage : kCpuAlignment;
    const size_t rounded = nbytes == 0 ? align : (nbytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded);
    KILN_CHECK(p != nullptr, "CPU allocator: out of memory allocating ", nbytes, " bytes");
#ifdef MADV_HUGEPAGE
    if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: errors are fine
#endif
    return p;
  }

 private:
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kHugeThreshold = size_t{32} << 20;
  void deallocate(void* p) override { std::free(p); }
};

// Until the CUDA backend registers itself, asking for CUDA memory is a clear error.
class MissingAllocator final : public Allocator {
 public:
  explicit MissingAllocator(const char* name) : name_(name) {}
  void* allocate(size_t) override {
    KILN_FAIL("allocate: Kiln was built without ", name_, " support or no ", name_,
              " device is present");
  }
  void deallocate(void*) override {}

 private:
  const char* name_;
};

Allocator* g_allocators[kNumDeviceTypes] = {nullptr, nullptr};

}  // namespace

Allocator* get_allocator(DeviceType t) {
  static CpuAllocator cpu;
  static MissingAllocator cuda("CUDA");
  Allocator* a = g_allocators[static_cast<int>(t)];
  if (a) return a;
  return t == DeviceType::CPU ? static_cast<Allocator*>(&cpu) : &cuda;
}

void set_allocator(DeviceType t, Allocator* a) { g_allocators[static_cast<int>(t)] = a; }

StorageImpl::StorageImpl(size_t nbytes, Device device)
    : nbytes_(nbytes), device_(device), allocator_(get_allocator(device.type)) {
  data_ = allocator_->allocate(nbytes);
}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device,
                         std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

std::shared_ptr<StorageImpl> StorageImpl::meta(Device device) {
  std::shared_ptr<StorageImpl> s(new StorageImpl());
  s->device_ = device;
  s->meta_ = true;
  return s;
}

StorageImpl::~StorageImpl() {
  if (allocator_) {
    allocator_->deallocate(data_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace kiln
