#include "kiln/core/pending_write.h"

#include <memory>
#include <utility>

#include "kiln/core/storage.h"

namespace kiln {
namespace {

thread_local bool t_writes_pending = false;

// Two writes to one storage from different queues: waiting means waiting for both.
class BothWrites : public PendingWrite {
 public:
  BothWrites(std::shared_ptr<PendingWrite> a, std::shared_ptr<PendingWrite> b)
      : a_(std::move(a)), b_(std::move(b)) {}
  void wait_for_write() override {
    a_->wait_for_write();
    b_->wait_for_write();
  }

 private:
  std::shared_ptr<PendingWrite> a_, b_;
};

}  // namespace

PendingWriteWorkerGuard::PendingWriteWorkerGuard() : previous_(t_writes_pending) {
  t_writes_pending = true;
}
PendingWriteWorkerGuard::~PendingWriteWorkerGuard() { t_writes_pending = previous_; }
bool PendingWriteWorkerGuard::active() { return t_writes_pending; }

void StorageImpl::set_pending_write(std::shared_ptr<PendingWrite> write) {
  if (has_pending_write_.load(std::memory_order_acquire))
    write = std::make_shared<BothWrites>(pending_write_, std::move(write));
  pending_write_ = std::move(write);
  has_pending_write_.store(true, std::memory_order_release);
}

void StorageImpl::finish_pending_write() const {
  if (PendingWriteWorkerGuard::active()) return;
  pending_write_->wait_for_write();  // throws, leaving it pending, when the write failed
  has_pending_write_.store(false, std::memory_order_release);
}

}  // namespace kiln
