#include "common/thread_annotations.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace rlswarm {
namespace {

using Clock = std::chrono::steady_clock;

// Whether another thread finds `mu` taken (std::mutex::try_lock from the
// owning thread would be undefined).
bool HeldByAnotherThread(Mutex& mu) {
  bool taken = false;
  std::thread other([&] {
    if (mu.TryLock()) {
      mu.Unlock();
      taken = true;
    }
  });
  other.join();
  return !taken;
}

// A flag one thread sets and another waits for, as the libraries use CondVar.
struct Flag {
  Mutex mu;
  CondVar cv;
  bool set RLSWARM_GUARDED_BY(mu) = false;

  void Set() {
    {
      MutexLock lock(mu);
      set = true;
    }
    cv.NotifyAll();
  }
};

TEST(MutexLockTest, UnlockAndLockReleaseAndRetakeWithinTheScope) {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_TRUE(HeldByAnotherThread(mu));
    lock.Unlock();
    EXPECT_FALSE(HeldByAnotherThread(mu));
    lock.Lock();
    EXPECT_TRUE(HeldByAnotherThread(mu));
  }
  EXPECT_FALSE(HeldByAnotherThread(mu));
  {
    MutexLock lock(mu);
    lock.Unlock();
  }  // the destructor does not unlock again
  EXPECT_FALSE(HeldByAnotherThread(mu));
}

TEST(MutexLockTest, AdoptsAMutexTakenWithTryLock) {
  Mutex mu;
  if (!mu.TryLock()) FAIL() << "TryLock refused a free mutex";
  {
    MutexLock lock(mu, std::adopt_lock);
    EXPECT_TRUE(HeldByAnotherThread(mu));
  }
  EXPECT_FALSE(HeldByAnotherThread(mu));
}

TEST(CondVarTest, WaitReturnsOnceAnotherThreadSetsThePredicateWithTheMutexHeld) {
  Flag flag;
  std::thread setter([&] { flag.Set(); });
  {
    MutexLock lock(flag.mu);
    flag.cv.Wait(lock, [&]() RLSWARM_REQUIRES(flag.mu) { return flag.set; });
    EXPECT_TRUE(flag.set);
    EXPECT_TRUE(HeldByAnotherThread(flag.mu));
  }
  setter.join();
  EXPECT_FALSE(HeldByAnotherThread(flag.mu));
}

TEST(CondVarTest, PlainWaitWakesOnNotify) {
  Flag flag;
  std::thread setter([&] { flag.Set(); });
  {
    MutexLock lock(flag.mu);
    while (!flag.set) flag.cv.Wait(lock);  // a spurious wake-up only loops
    EXPECT_TRUE(HeldByAnotherThread(flag.mu));
  }
  setter.join();
}

TEST(CondVarTest, WaitForAndWaitUntilReportThePredicate) {
  Flag flag;
  MutexLock lock(flag.mu);
  const auto is_set = [&]() RLSWARM_REQUIRES(flag.mu) { return flag.set; };
  // Nobody sets it: both time out, false, with the mutex held again.
  EXPECT_FALSE(flag.cv.WaitFor(lock, std::chrono::milliseconds(5), is_set));
  EXPECT_FALSE(flag.cv.WaitUntil(lock, Clock::now() + std::chrono::milliseconds(5), is_set));
  EXPECT_EQ(flag.cv.WaitUntil(lock, Clock::now()), std::cv_status::timeout);
  EXPECT_TRUE(HeldByAnotherThread(flag.mu));
  // Already true: no wait at all, whatever the deadline.
  flag.set = true;
  EXPECT_TRUE(flag.cv.WaitFor(lock, std::chrono::hours(1), is_set));
  EXPECT_TRUE(flag.cv.WaitUntil(lock, Clock::now() + std::chrono::hours(1), is_set));
}

TEST(CondVarTest, WaitForReturnsTrueWhenSetBeforeTheDeadline) {
  Flag flag;
  std::thread setter([&] { flag.Set(); });
  {
    MutexLock lock(flag.mu);
    EXPECT_TRUE(flag.cv.WaitFor(lock, std::chrono::minutes(1),
                                [&]() RLSWARM_REQUIRES(flag.mu) { return flag.set; }));
  }
  setter.join();
}

TEST(CondVarTest, APredicateThatThrowsLeavesTheMutexToTheLock) {
  // The wait hands the mutex back to `lock` even when it throws, so the
  // lock's destructor releases it exactly once.
  Flag flag;
  {
    MutexLock lock(flag.mu);
    EXPECT_THROW(flag.cv.Wait(lock, []() -> bool { throw std::runtime_error("predicate"); }),
                 std::runtime_error);
    EXPECT_TRUE(HeldByAnotherThread(flag.mu));
  }
  EXPECT_FALSE(HeldByAnotherThread(flag.mu));
}

}  // namespace
}  // namespace rlswarm
