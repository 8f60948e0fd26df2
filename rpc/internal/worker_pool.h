#pragma once

// Internal: the server's bounded request queue and the worker threads that
// run handlers from it.
//
// Thread-safety: TryPush from the I/O thread (any thread works); Close and
// Join from the thread that stops the server. Tasks are destroyed outside
// the lock, because destroying an unanswered Responder sends a reply.

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "rpc/server.h"

namespace rlswarm::rpc::internal {

struct ServerTask {
  const Handler* handler;
  Request request;
  Responder responder;
};

class WorkerPool {
 public:
  // `run` executes one task on a worker thread and must not throw.
  WorkerPool(int num_workers, std::size_t max_queued, std::function<void(ServerTask&)> run);
  ~WorkerPool();  // Close + Join; the tasks still queued are destroyed
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  enum class PushResult { kQueued, kFull, kClosed };
  // Never blocks. Moves from `task` only when it returns kQueued.
  PushResult TryPush(ServerTask& task);

  // Stops accepting tasks and returns the ones still queued (the caller
  // answers them). Running handlers continue. Idempotent.
  std::deque<ServerTask> Close();
  // Waits for the running handlers to return, then joins the workers.
  void Join();

 private:
  void WorkerLoop();

  const std::size_t max_queued_;
  const std::function<void(ServerTask&)> run_;
  Mutex mutex_;
  CondVar not_empty_;
  std::deque<ServerTask> queue_ RLSWARM_GUARDED_BY(mutex_);
  bool closed_ RLSWARM_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace rlswarm::rpc::internal
