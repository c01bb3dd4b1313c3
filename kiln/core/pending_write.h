#pragma once
// A write into a storage still in flight on another thread: the result of an asynchronous
// functional collective, which the caller may use at once. Any access to the storage's data
// through a tensor (TensorImpl::data(), and so every kernel, data_ptr(), item(), printing)
// waits for it first: "waited at first use", as PyTorch's AsyncCollectiveTensor is.
namespace kiln {

class PendingWrite {
 public:
  virtual ~PendingWrite() = default;
  // Returns once the write is done; throws its error, on every call, if it failed.
  virtual void wait_for_write() = 0;
};

// Marks the current thread, while alive, as one that carries out pending writes (a process
// group's worker): its own accesses do not wait, or it would wait for itself. The code that
// queues a write makes sure that the worker reads nothing another thread is still writing.
class PendingWriteWorkerGuard {
 public:
  PendingWriteWorkerGuard();
  ~PendingWriteWorkerGuard();
  PendingWriteWorkerGuard(const PendingWriteWorkerGuard&) = delete;
  PendingWriteWorkerGuard& operator=(const PendingWriteWorkerGuard&) = delete;
  static bool active();

 private:
  bool previous_;
};

}  // namespace kiln
