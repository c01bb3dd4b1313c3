#include "kiln/distributed/task_queue.h"

#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/core/pending_write.h"

namespace kiln::distributed {

TaskQueue::TaskQueue(std::string where) : where_(std::move(where)), thread_([this] { run(); }) {}

TaskQueue::~TaskQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  pushed_cv_.notify_one();
  thread_.join();
}

std::shared_ptr<Work> TaskQueue::push(std::string what, std::function<void()> task) {
  auto work = std::make_shared<Work>(std::move(what));
  {
    std::lock_guard lock(mutex_);
    tasks_.emplace_back(work, std::move(task));
  }
  pushed_cv_.notify_one();
  return work;
}

void TaskQueue::run() {
  NoGradGuard no_grad;  // collectives write into tensors as data, never as graph ops
  const PendingWriteWorkerGuard writer;  // the tensors it writes wait for it, not it for them
  for (;;) {
    std::pair<std::shared_ptr<Work>, std::function<void()>> task;
    {
      std::unique_lock lock(mutex_);
      pushed_cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    try {
      task.second();
      task.first->finish(nullptr);
    } catch (const Error&) {
      task.first->finish(std::current_exception());
    } catch (const std::exception& e) {
      task.first->finish(std::make_exception_ptr(
          Error(task.first->description() + " on " + where_ + " failed: " + e.what())));
    }
  }
}

}  // namespace kiln::distributed
