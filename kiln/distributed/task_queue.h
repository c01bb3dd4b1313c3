#pragma once
// One thread that runs tasks in the order they were pushed, each finishing its Work with what it
// threw. A process group runs its collectives on one, so that they happen in call order on every
// rank while the caller goes on (async_op).
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kiln/distributed/work.h"

namespace kiln::distributed {

class TaskQueue {
 public:
  // `where` names the queue's owner in error messages ("group 'default' (rank 0 of 2)").
  explicit TaskQueue(std::string where);
  // Runs the tasks already pushed, then stops.
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // Queues task; a kiln::Error it throws reaches Work::wait as it is, another exception as a
  // kiln::Error naming `what` and the owner.
  std::shared_ptr<Work> push(std::string what, std::function<void()> task);

 private:
  void run();

  const std::string where_;
  std::mutex mutex_;
  std::condition_variable pushed_cv_;
  std::deque<std::pair<std::shared_ptr<Work>, std::function<void()>>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kiln::distributed
