#include "common/worker_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace rlswarm {
namespace {

using namespace std::chrono_literals;

TEST(WorkerThreadTest, RunsTasksInOrderOnItsOwnThreadAndDrainWaitsForThem) {
  WorkerThread worker;
  std::vector<int> order;  // written by the worker only, read after Drain
  std::thread::id where;
  for (int i = 0; i < 100; ++i) {
    worker.Post([&, i] {
      order.push_back(i);
      where = std::this_thread::get_id();
    });
  }
  worker.Drain();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_NE(where, std::this_thread::get_id());
  EXPECT_TRUE(worker.idle());
}

TEST(WorkerThreadTest, WaitIdleTimesOutWhileATaskRunsAndSucceedsOnceItEnds) {
  WorkerThread worker;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  worker.Post([&] {
    started.set_value();
    released.wait();
  });
  started.get_future().wait();
  EXPECT_FALSE(worker.idle());
  EXPECT_FALSE(worker.WaitIdle(20ms));
  release.set_value();
  EXPECT_TRUE(worker.WaitIdle(10s));
}

TEST(WorkerThreadTest, ReplacingDropsOnlyTasksNotYetStarted) {
  WorkerThread worker;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  std::atomic<int> ran{0};
  worker.Post([&] {
    started.set_value();
    released.wait();
    ran += 1;
  });
  started.get_future().wait();
  worker.Post([&] { ran += 10; });
  worker.Post([&] { ran += 100; });
  EXPECT_EQ(worker.PostReplacingQueued([&] { ran += 1000; }), 2);
  release.set_value();
  worker.Drain();
  EXPECT_EQ(ran.load(), 1001);
}

TEST(WorkerThreadTest, DestructionRunsWhatIsQueuedFirst) {
  std::atomic<int> ran{0};
  {
    WorkerThread worker;
    for (int i = 0; i < 50; ++i) worker.Post([&] { ran += 1; });
  }
  EXPECT_EQ(ran.load(), 50);
}

}  // namespace
}  // namespace rlswarm
