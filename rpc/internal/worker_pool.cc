#include "rpc/internal/worker_pool.h"

#include <optional>

namespace rlswarm::rpc::internal {

WorkerPool::WorkerPool(int num_workers, std::size_t max_queued,
                       std::function<void(ServerTask&)> run)
    : max_queued_(max_queued), run_(std::move(run)) {
  workers_.reserve(static_cast<std::size_t>(num_workers));
  for (int i = 0; i < num_workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

WorkerPool::~WorkerPool() {
  std::deque<ServerTask> rest = Close();
  Join();
}

WorkerPool::PushResult WorkerPool::TryPush(ServerTask& task) {
  {
    MutexLock lock(mutex_);
    if (closed_) return PushResult::kClosed;
    if (queue_.size() >= max_queued_) return PushResult::kFull;
    queue_.push_back(std::move(task));
  }
  not_empty_.NotifyOne();
  return PushResult::kQueued;
}

std::deque<ServerTask> WorkerPool::Close() {
  std::deque<ServerTask> rest;
  {
    MutexLock lock(mutex_);
    closed_ = true;
    rest.swap(queue_);
  }
  not_empty_.NotifyAll();
  return rest;
}

void WorkerPool::Join() {
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void WorkerPool::WorkerLoop() {
  while (true) {
    MutexLock lock(mutex_);
    not_empty_.Wait(lock, [this]() RLSWARM_REQUIRES(mutex_) { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return;
    ServerTask task = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    run_(task);
    // `task` dies here, outside the lock: an unanswered Responder replies.
  }
}

}  // namespace rlswarm::rpc::internal
