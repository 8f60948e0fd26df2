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
    std::lock_guard lock(mutex_);
    if (closed_) return PushResult::kClosed;
    if (queue_.size() >= max_queued_) return PushResult::kFull;
    queue_.push_back(std::move(task));
  }
  not_empty_.notify_one();
  return PushResult::kQueued;
}

std::deque<ServerTask> WorkerPool::Close() {
  std::deque<ServerTask> rest;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    rest.swap(queue_);
  }
  not_empty_.notify_all();
  return rest;
}

void WorkerPool::Join() {
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void WorkerPool::WorkerLoop() {
  while (true) {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [this] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return;
    ServerTask task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    run_(task);
    // `task` dies here, outside the lock: an unanswered Responder replies.
  }
}

}  // namespace rlswarm::rpc::internal
