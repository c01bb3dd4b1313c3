#include "kiln/core/cpu_fallback.h"

#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <set>

#include "kiln/core/device_backend.h"
#include "kiln/core/error.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

std::mutex g_logged_mutex;
std::set<std::string>& logged() {
  static std::set<std::string> s;
  return s;
}

void note_fallback(const OpDef& op, Device device) {
  std::string key = op.name + " on " + device_type_name(device.type());
  std::lock_guard<std::mutex> lock(g_logged_mutex);
  if (logged().insert(key).second)
    std::cerr << "kiln: " << op.name << " runs through the CPU fallback on "
              << device_type_name(device.type())
              << " (no kernel for this call there; its tensors are copied to the host and back)\n";
}

Tensor with_storage(const Tensor& t, Storage storage) {
  const TensorImpl& i = *t.impl();
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), i.dtype(), i.sym_sizes(),
                                             i.sym_strides(), i.sym_storage_offset()));
}

// Host copies of device storages, one per device storage, so tensors that alias on the device
// alias on the host too.
class HostMirror {
 public:
  explicit HostMirror(DeviceBackend& backend) : backend_(backend) {}

  Tensor host(const Tensor& t, bool copy_in) {
    if (!t.defined() || t.is_cpu()) return t;
    StorageImpl* s = t.impl()->storage().get();
    auto it = storages_.find(s);
    if (it == storages_.end()) {
      Entry e{t.impl()->storage(), std::make_shared<StorageImpl>(s->nbytes(), Device(kCPU)), {}};
      if (copy_in && s->nbytes() > 0) {
        s->wait_for_pending_write();  // raw storage access: the one wait TensorImpl::data() does
        backend_.copy_bytes(e.host->data(), Device(kCPU), s->data(), s->device(), s->nbytes());
        const auto* bytes = static_cast<const char*>(e.host->data());
        e.before.assign(bytes, bytes + s->nbytes());
      }
      it = storages_.emplace(s, std::move(e)).first;
    }
    return with_storage(t, it->second.host);
  }

  // Copies back the storages of `outs` and every input storage the kernel changed.
  void copy_back(const std::vector<Tensor>& outs) {
    std::set<const StorageImpl*> written;
    for (const auto& t : outs)
      if (t.defined() && !t.is_cpu()) written.insert(t.impl()->storage().get());
    for (auto& [device_storage, e] : storages_) {
      e.host->wait_for_pending_write();  // an asynchronous kernel's result
      const size_t n = device_storage->nbytes();
      const bool changed = written.count(device_storage) > 0 ||
                           (!e.before.empty() && std::memcmp(e.before.data(), e.host->data(), n));
      if (changed && n > 0)
        backend_.copy_bytes(device_storage->data(), device_storage->device(), e.host->data(),
                            Device(kCPU), n);
    }
  }

 private:
  struct Entry {
    Storage device;
    Storage host;
    std::vector<char> before;  // the bytes copied in, to find inputs the kernel changed
  };
  DeviceBackend& backend_;
  std::map<const StorageImpl*, Entry> storages_;
};

Tensor to_device(const Tensor& host, Device device, DeviceBackend& backend) {
  const size_t n = host.impl()->storage()->nbytes();
  auto storage = std::make_shared<StorageImpl>(n, device);
  host.impl()->storage()->wait_for_pending_write();
  if (n > 0)
    backend.copy_bytes(storage->data(), storage->device(), host.impl()->storage()->data(),
                       Device(kCPU), n);
  return with_storage(host, std::move(storage));
}

}  // namespace

void run_on_cpu(const OpDef& op, Device device, const std::vector<Tensor>& inputs,
                std::vector<Tensor>& outs, const Attrs& attrs) {
  DeviceBackend& backend = require_device_backend(device.type(), op.name.c_str());
  KILN_CHECK(backend.cpu_fallback() && op.has_kernel(kCPU), op.name, ": no kernel for device ",
             device);
  note_fallback(op, device);
  HostMirror mirror(backend);
  std::vector<Tensor> host_in, host_out;
  for (const auto& t : inputs) host_in.push_back(mirror.host(t, /*copy_in=*/true));
  for (const auto& t : outs) host_out.push_back(mirror.host(t, /*copy_in=*/false));
  op.kernels[static_cast<int>(kCPU)](host_in, host_out, attrs);
  if (op.dynamic_output) {
    outs.clear();
    for (const auto& t : host_out) outs.push_back(t.defined() ? to_device(t, device, backend) : t);
  }
  mirror.copy_back(outs);
}

std::vector<std::string> cpu_fallback_ops() {
  std::lock_guard<std::mutex> lock(g_logged_mutex);
  return {logged().begin(), logged().end()};
}

}  // namespace kiln
