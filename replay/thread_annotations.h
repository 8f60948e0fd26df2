#pragma once

// Clang thread-safety annotations (-Wthread-safety) and an annotated mutex.
// Under GCC the macros expand to nothing; the code still compiles and the
// annotations still document which lock guards what.
//
// This lives in replay/ only because the replay core is the first user; it
// belongs in common/ once a second module wants it.

#include <mutex>

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
#define RLSWARM_NO_THREAD_SAFETY_ANALYSIS RLSWARM_TSA(no_thread_safety_analysis)

namespace rlswarm::replay {

// std::mutex with a capability, so Clang can check RLSWARM_GUARDED_BY.
class RLSWARM_CAPABILITY("mutex") Mutex {
 public:
  void Lock() RLSWARM_ACQUIRE() { mu_.lock(); }
  void Unlock() RLSWARM_RELEASE() { mu_.unlock(); }
  // For std::condition_variable: wait on native() while the Mutex is held.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for a scope.
class RLSWARM_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) RLSWARM_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RLSWARM_RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace rlswarm::replay
