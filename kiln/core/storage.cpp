#include "kiln/core/storage.h"

#include <cstring>

#include "kiln/core/device_backend.h"
#include "kiln/core/error.h"
#include "kiln/core/pending_write.h"

namespace kiln {
namespace {

Allocator* g_allocators[kNumDeviceTypes] = {};

}  // namespace

Allocator* get_allocator(DeviceType t) {
  if (Allocator* a = g_allocators[static_cast<int>(t)]) return a;
  if (t == DeviceType::CPU) return cpu_allocator();
  DeviceBackend* backend = device_backend(t);
  KILN_CHECK(backend, "allocate: no ", device_type_name(t),
             " backend is loaded (Kiln was built without it, or its library failed to load)");
  return backend->allocator();
}

void set_allocator(DeviceType t, Allocator* a) { g_allocators[static_cast<int>(t)] = a; }

StorageImpl::StorageImpl(size_t nbytes, Device device)
    : nbytes_(nbytes), device_(device.resolved()), allocator_(get_allocator(device.type())) {
  DeviceIndexGuard on(device_);
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

std::shared_ptr<StorageImpl> StorageImpl::pinned(size_t nbytes, Allocator* host_allocator) {
  std::shared_ptr<StorageImpl> s(new StorageImpl());
  s->device_ = Device(kCPU);
  s->nbytes_ = nbytes;
  s->allocator_ = host_allocator;
  s->pinned_ = true;
  s->data_ = host_allocator->allocate(nbytes);
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
