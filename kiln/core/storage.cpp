#include "kiln/core/storage.h"

#include <cstring>

#include "kiln/core/error.h"

namespace kiln {
namespace {

// Until the CUDA backend registers itself, asking for CUDA memory is a clear error.
class MissingAllocator final : public Allocator {
 public:
  explicit MissingAllocator(const char* name) : name_(name) {}
  void* allocate(size_t) override {
    KILN_FAIL("allocate: Kiln was built without ", name_, " support or no ", name_,
              " device is present");
  }
  void deallocate(void*, size_t) override {}

 private:
  const char* name_;
};

Allocator* g_allocators[kNumDeviceTypes] = {nullptr, nullptr};

}  // namespace

Allocator* get_allocator(DeviceType t) {
  static MissingAllocator cuda("CUDA");
  Allocator* a = g_allocators[static_cast<int>(t)];
  if (a) return a;
  return t == DeviceType::CPU ? cpu_allocator() : &cuda;
}

void set_allocator(DeviceType t, Allocator* a) { g_allocators[static_cast<int>(t)] = a; }

StorageImpl::StorageImpl(size_t nbytes, Device device)
    : nbytes_(nbytes), device_(device), allocator_(get_allocator(device.type())) {
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

void StorageImpl::grow(size_t nbytes) {
  if (nbytes <= nbytes_) return;
  if (meta_) {
    nbytes_ = nbytes;
    return;
  }
  KILN_CHECK(allocator_ != nullptr,
             "resize_: the tensor's storage wraps memory Kiln does not own (", nbytes_,
             " bytes), so it cannot grow to ", nbytes, " bytes");
  KILN_CHECK(device_.is_cpu(), "resize_: growing a storage on ", device_, " is not supported");
  void* bigger = allocator_->allocate(nbytes);
  if (nbytes_ > 0) std::memcpy(bigger, data_, nbytes_);
  allocator_->deallocate(data_, nbytes_);
  data_ = bigger;
  nbytes_ = nbytes;
}

StorageImpl::~StorageImpl() {
  if (allocator_) {
    allocator_->deallocate(data_, nbytes_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace kiln
