#pragma once

// Clang thread-safety annotations (-Wthread-safety) and an annotated mutex,
// scoped lock and condition variable. Under GCC the macros expand to
// nothing; the code still compiles and the annotations still document which
// lock guards what. scripts/thread_safety.sh builds the libraries with Clang
// and the analysis' warnings as errors.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#if defined(__clang__)
#define RLSWARM_TSA(x) __attribute__((x))
#else
#define RLSWARM_TSA(x)
#endif

#define RLSWARM_CAPABILITY(x) RLSWARM_TSA(capability(x))
#define RLSWARM_SCOPED_CAPABILITY RLSWARM_TSA(scoped_lockable)
#define RLSWARM_GUARDED_BY(x) RLSWARM_TSA(guarded_by(x))
#define RLSWARM_PT_GUARDED_BY(x) RLSWARM_TSA(pt_guarded_by(x))
#define RLSWARM_ACQUIRED_BEFORE(...) RLSWARM_TSA(acquired_before(__VA_ARGS__))
#define RLSWARM_REQUIRES(...) RLSWARM_TSA(requires_capability(__VA_ARGS__))
#define RLSWARM_EXCLUDES(...) RLSWARM_TSA(locks_excluded(__VA_ARGS__))
#define RLSWARM_ACQUIRE(...) RLSWARM_TSA(acquire_capability(__VA_ARGS__))
#define RLSWARM_RELEASE(...) RLSWARM_TSA(release_capability(__VA_ARGS__))
#define RLSWARM_TRY_ACQUIRE(...) RLSWARM_TSA(try_acquire_capability(__VA_ARGS__))
#define RLSWARM_ASSERT_CAPABILITY(x) RLSWARM_TSA(assert_capability(x))
#define RLSWARM_NO_THREAD_SAFETY_ANALYSIS RLSWARM_TSA(no_thread_safety_analysis)

namespace rlswarm {

// std::mutex with a capability, so Clang can check RLSWARM_GUARDED_BY.
// Thread-safety: as std::mutex.
class RLSWARM_CAPABILITY("mutex") Mutex {
 public:
  void Lock() RLSWARM_ACQUIRE() { mu_.lock(); }
  void Unlock() RLSWARM_RELEASE() { mu_.unlock(); }
  // Never blocks; true if it took the mutex. Hand it to
  // MutexLock(mu, std::adopt_lock) to release it at the end of the scope.
  bool TryLock() RLSWARM_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the calling thread holds this mutex where it
  // cannot see it (a callback run by a thread known to hold it). Checks
  // nothing at run time: the caller vouches for it, so say why at the call.
  void AssertHeld() const RLSWARM_ASSERT_CAPABILITY(this) {}
  // The underlying mutex, invisible to the analysis; CondVar waits on it.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for a scope. Unlock() and Lock() release and retake it
// within the scope (around a call that must not run under the lock); the
// destructor releases it only if held. Thread-safety: one thread's object.
class RLSWARM_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) RLSWARM_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  // Takes over a mutex the caller already holds (after Mutex::TryLock).
  MutexLock(Mutex& mu, std::adopt_lock_t) RLSWARM_REQUIRES(mu) : mu_(mu) {}
  ~MutexLock() RLSWARM_RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RLSWARM_RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() RLSWARM_ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  friend class CondVar;

  Mutex& mu_;
  bool held_ = true;
};

// std::condition_variable whose waits take the MutexLock that holds the
// mutex, so the analysis sees the mutex held before and after every wait
// (which releases it only while it sleeps, as std::condition_variable
// does). Each wait lends the held std::mutex to a std::unique_lock for the
// call and takes it back, still held, when the wait returns or throws.
//
// A predicate runs with the mutex held. The analysis checks a lambda's body
// on its own, without the caller's locks, so one that reads guarded members
// says that it needs the mutex:
//   changed_.Wait(lock, [this]() RLSWARM_REQUIRES(mu_) { return ready_; });
// (std::condition_variable calls it, inside the standard library, where
// the analysis does not look; the lambda's body is checked.)
//
// Thread-safety: as std::condition_variable; every wait's `lock` holds its
// mutex, and concurrent waits use the same mutex.
class CondVar {
 public:
  void NotifyOne() noexcept { cv_.notify_one(); }
  void NotifyAll() noexcept { cv_.notify_all(); }

  // Waits for a notification (or a spurious wake-up).
  void Wait(MutexLock& lock) {
    Lent lent(lock);
    cv_.wait(lent.lock);
  }
  // Waits until `stop_waiting()` is true.
  template <class Predicate>
  void Wait(MutexLock& lock, Predicate stop_waiting) {
    Lent lent(lock);
    cv_.wait(lent.lock, std::move(stop_waiting));
  }
  // Waits for a notification or `deadline`; std::cv_status::timeout if the
  // deadline passed.
  template <class Clock, class Duration>
  std::cv_status WaitUntil(MutexLock& lock,
                           const std::chrono::time_point<Clock, Duration>& deadline) {
    Lent lent(lock);
    return cv_.wait_until(lent.lock, deadline);
  }
  // Waits until `stop_waiting()` is true or `deadline` passed; returns
  // `stop_waiting()`'s last value (as std::condition_variable::wait_until).
  template <class Clock, class Duration, class Predicate>
  bool WaitUntil(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& deadline,
                 Predicate stop_waiting) {
    Lent lent(lock);
    return cv_.wait_until(lent.lock, deadline, std::move(stop_waiting));
  }
  // As WaitUntil, with a deadline `timeout` from now (on the steady clock).
  template <class Rep, class Period, class Predicate>
  bool WaitFor(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout,
               Predicate stop_waiting) {
    Lent lent(lock);
    return cv_.wait_for(lent.lock, timeout, std::move(stop_waiting));
  }

 private:
  // A std::unique_lock that adopts the mutex `lock` holds and, when it goes
  // out of scope, gives it back without unlocking it (std's waits always
  // return with the mutex locked again).
  struct Lent {
    explicit Lent(MutexLock& held) : lock(held.mu_.native(), std::adopt_lock) {}
    ~Lent() { lock.release(); }
    Lent(const Lent&) = delete;
    Lent& operator=(const Lent&) = delete;

    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace rlswarm
