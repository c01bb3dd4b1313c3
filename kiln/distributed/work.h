#pragma once
// The handle of a collective that runs on its group's worker thread (c10d's Work): wait() blocks
// until it is done and rethrows its error; wait(timeout) gives up with a kiln::Error instead. A
// functional collective's result waits for its Work at first use (kiln/core/pending_write.h).
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "kiln/core/pending_write.h"

namespace kiln::distributed {

class Work : public PendingWrite {
 public:
  explicit Work(std::string description) : description_(std::move(description)) {}

  // Blocks until the collective has finished; rethrows what it threw.
  void wait();
  // As wait(), or a kiln::Error naming the collective when it has not finished within timeout.
  void wait(std::chrono::milliseconds timeout);
  void wait_for_write() override { wait(); }
  bool is_completed() const;
  bool is_success() const;
  const std::string& description() const { return description_; }
  // The rank a completed recv got its message from (-1 for other work).
  int source_rank() const;

  // Called once by the worker that ran the collective (error: null on success).
  void finish(std::exception_ptr error);
  // Where the worker writes the sender's rank (recv only).
  void set_source(std::shared_ptr<const int> source) { source_ = std::move(source); }

 private:
  const std::string description_;
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::shared_ptr<const int> source_;
};

}  // namespace kiln::distributed
