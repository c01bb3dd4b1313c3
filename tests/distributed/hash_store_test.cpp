#include "kiln/distributed/hash_store.h"

#include <gtest/gtest.h>

#include <thread>

#include "kiln/core/error.h"

namespace kiln::distributed {
namespace {

using namespace std::chrono_literals;

TEST(HashStore, OperationsAndWaitingAcrossThreads) {
  HashStore store(2s);
  store.set("a", std::string("x"));
  EXPECT_EQ(store.get_string("a"), "x");
  EXPECT_EQ(store.add("n", 2), 2);
  EXPECT_EQ(store.add("n", 3), 5);
  EXPECT_EQ(store.get_string("n"), "5");
  const std::vector<uint8_t> one{'1'}, two{'2'};
  EXPECT_EQ(store.compare_set("c", {}, one), one);   // missing, expected empty: set
  EXPECT_EQ(store.compare_set("c", two, two), one);  // mismatch: unchanged
  EXPECT_EQ(store.compare_set("c", one, two), two);  // match: set
  EXPECT_EQ(store.num_keys(), 3);
  EXPECT_TRUE(store.delete_key("c"));
  EXPECT_FALSE(store.delete_key("c"));
  EXPECT_FALSE(store.check({"a", "late"}));
  std::thread setter([&] {
    std::this_thread::sleep_for(20ms);
    store.set("late", std::string("y"));
  });
  EXPECT_EQ(store.get_string("late"), "y");
  setter.join();
  EXPECT_TRUE(store.check({"a", "late"}));
}

TEST(HashStore, TimeoutsAndBadCountersAreErrorsNamingTheKeys) {
  HashStore store(50ms);
  try {
    store.get("never");
    FAIL() << "get of a missing key did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"never\" not set within 50 ms"), std::string::npos)
        << e.what();
  }
  store.set("text", std::string("abc"));
  EXPECT_THROW(store.add("text", 1), Error);
}

}  // namespace
}  // namespace kiln::distributed
