#pragma once

// One background thread that runs the tasks posted to it, in order: the
// learner's replay feed, weights sender and checkpoint writer each own one.
// Whoever posts never blocks; Drain() and WaitIdle() wait (on a condition
// variable, never polling) until what was posted has run. Destroying it
// runs what is still queued, then joins.
//
// Tasks must not throw: what a task's failure means differs per owner
// (rethrown later, counted, reported), so each task catches its own errors.
// One that throws anyway terminates the process.

#include <chrono>
#include <deque>
#include <functional>
#include <thread>

#include "common/thread_annotations.h"

namespace rlswarm {

class WorkerThread {
 public:
  WorkerThread();
  ~WorkerThread();
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  void Post(std::function<void()> task) RLSWARM_EXCLUDES(mu_);
  // Drops every task not yet started, then posts `task`: for work whose
  // older versions are useless once a newer one exists (the newest weights).
  // Returns how many were dropped.
  int PostReplacingQueued(std::function<void()> task) RLSWARM_EXCLUDES(mu_);
  // Blocks until every task posted before the call has run.
  void Drain() RLSWARM_EXCLUDES(mu_);
  // Drain() for at most `timeout`; false when tasks are still queued or
  // running.
  bool WaitIdle(std::chrono::milliseconds timeout) RLSWARM_EXCLUDES(mu_);
  // Nothing queued and nothing running.
  bool idle() const RLSWARM_EXCLUDES(mu_);

 private:
  void Run() RLSWARM_EXCLUDES(mu_);
  bool IdleLocked() const RLSWARM_REQUIRES(mu_) { return tasks_.empty() && !busy_; }

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ RLSWARM_GUARDED_BY(mu_);
  bool busy_ RLSWARM_GUARDED_BY(mu_) = false;
  bool stop_ RLSWARM_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace rlswarm
