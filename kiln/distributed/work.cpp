#include "kiln/distributed/work.h"

#include "kiln/core/error.h"

namespace kiln::distributed {

void Work::wait() {
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

void Work::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  KILN_CHECK(done_cv_.wait_for(lock, timeout, [&] { return done_; }), "Work::wait: ", description_,
             " did not complete within ", timeout.count(), " ms");
  if (error_) std::rethrow_exception(error_);
}

bool Work::is_completed() const {
  std::lock_guard lock(mutex_);
  return done_;
}

bool Work::is_success() const {
  std::lock_guard lock(mutex_);
  return done_ && !error_;
}

int Work::source_rank() const {
  std::lock_guard lock(mutex_);
  return done_ && source_ ? *source_ : -1;
}

void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    error_ = std::move(error);
  }
  done_cv_.notify_all();
}

}  // namespace kiln::distributed
