#pragma once
// detail::PrefetchPool: worker threads that turn numbered requests into numbered results, which
// the consumer takes back in request order. The consumer decides how many requests are in
// flight (DataLoaderOptions::max_jobs), so the number of queued requests and results is
// bounded by it. An exception thrown while producing a result is stored and rethrown to the
// consumer when it takes that result. stop() (and the destructor) wakes and joins the workers;
// a request being worked on is finished first, everything queued is dropped.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace kiln::data::detail {

template <typename Request, typename Result>
class PrefetchPool {
 public:
  using Work = std::function<Result(Request)>;

  PrefetchPool() = default;
  PrefetchPool(const PrefetchPool&) = delete;
  PrefetchPool& operator=(const PrefetchPool&) = delete;
  ~PrefetchPool() { stop(); }

  void start(size_t workers, Work work) {
    stop();
    work_ = std::move(work);
    stopping_ = false;
    next_push_ = next_take_ = 0;
    for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { run(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    request_ready_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
    requests_.clear();
    results_.clear();
  }

  void push(Request request) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.emplace_back(next_push_++, std::move(request));
    }
    request_ready_.notify_one();
  }

  size_t in_flight() const { return static_cast<size_t>(next_push_ - next_take_); }

  // Waits up to `timeout` for the result take() returns next; false if it is not there by then.
  bool wait_for_next(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return result_ready_.wait_for(lock, timeout, [&] { return results_.count(next_take_) > 0; });
  }

  // The result of the oldest request not yet taken (waits for it); rethrows its exception.
  Result take() {
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t id = next_take_++;
    result_ready_.wait(lock, [&] { return results_.count(id) > 0; });
    Outcome outcome = std::move(results_.at(id));
    results_.erase(id);
    lock.unlock();
    if (outcome.error) std::rethrow_exception(outcome.error);
    return std::move(*outcome.value);
  }

 private:
  struct Outcome {
    std::optional<Result> value;
    std::exception_ptr error;
  };

  void run() {
    while (true) {
      std::pair<uint64_t, Request> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        request_ready_.wait(lock, [&] { return stopping_ || !requests_.empty(); });
        if (stopping_) return;
        job = std::move(requests_.front());
        requests_.pop_front();
      }
      Outcome outcome;
      try {
        outcome.value.emplace(work_(std::move(job.second)));
      } catch (...) {
        outcome.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        results_.emplace(job.first, std::move(outcome));
      }
      result_ready_.notify_all();
    }
  }

  Work work_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable request_ready_, result_ready_;
  std::deque<std::pair<uint64_t, Request>> requests_;
  std::map<uint64_t, Outcome> results_;
  uint64_t next_push_ = 0, next_take_ = 0;
  bool stopping_ = false;
};

}  // namespace kiln::data::detail
