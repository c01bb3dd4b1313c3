// A storage with a pending write: every access to its data, through any view, waits for the
// writer; the writer's own thread does not; a failed write fails every access.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "kiln/core/pending_write.h"
#include "kiln/core/tensor_impl.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

// A write that another thread finishes, successfully or with an error.
class Latch : public PendingWrite {
 public:
  void wait_for_write() override {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return done_; });
    KILN_CHECK(error_.empty(), error_);
  }
  void finish(std::string error = "") {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      error_ = std::move(error);
    }
    done_cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::string error_;
};

TEST(PendingWrite, EveryAccessThroughAnyViewWaitsForTheWriter) {
  const Tensor t = zeros({6});
  const auto write = std::make_shared<Latch>();
  t.impl()->storage()->set_pending_write(write);
  const Tensor view = t.slice(0, 2, 4);  // shares the storage, so shares the wait
  std::thread writer([&] {
    const PendingWriteWorkerGuard worker;  // the writer's own accesses do not wait
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    t.fill_(7.0);
    write->finish();
  });
  EXPECT_TRUE((view + 1).equal(full({2}, 8.0)));  // without the wait, 1.0 or a torn mix
  EXPECT_EQ(t[5].item<float>(), 7.0f);
  writer.join();
}

TEST(PendingWrite, AFailedWriteFailsEveryAccess) {
  const Tensor t = zeros({3});
  const auto write = std::make_shared<Latch>();
  t.impl()->storage()->set_pending_write(write);
  write->finish("the collective failed");
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      (void)t.sum();
      FAIL() << "an access to a failed write's data did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the collective failed"), std::string::npos);
    }
  }
}

TEST(PendingWrite, ASecondPendingWriteAddsToTheFirst) {
  const Tensor t = zeros({2});
  const auto first = std::make_shared<Latch>(), second = std::make_shared<Latch>();
  t.impl()->storage()->set_pending_write(first);
  t.impl()->storage()->set_pending_write(second);
  second->finish();
  std::thread writer([&] {
    const PendingWriteWorkerGuard worker;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    t.fill_(3.0);
    first->finish();
  });
  EXPECT_TRUE(t.equal(full({2}, 3.0)));
  writer.join();
}

}  // namespace
}  // namespace kiln
