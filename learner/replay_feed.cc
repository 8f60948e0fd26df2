#include "learner/replay_feed.h"

#include <memory>

namespace rlswarm::learner {

ReplayFeed::ReplayFeed(replay::ReplaySampler& sampler, const BatchStager& stager)
    : sampler_(sampler), stager_(stager), worker_([this] { Run(); }) {}

ReplayFeed::~ReplayFeed() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;  // the worker finishes what is queued first
  }
  cv_.notify_all();
  worker_.join();
}

void ReplayFeed::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return !tasks_.empty() || stop_; });
    if (tasks_.empty()) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.unlock();
    task();  // tasks catch their own errors
    lock.lock();
    busy_ = false;
    cv_.notify_all();  // Drain
  }
}

void ReplayFeed::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
}

std::future<StagedBatch> ReplayFeed::Prefetch(int64_t size) {
  auto task = std::make_shared<std::packaged_task<StagedBatch()>>(
      [this, size] { return stager_.Stage(sampler_.Sample(size)); });
  std::future<StagedBatch> batch = task->get_future();
  Post([task] { (*task)(); });
  return batch;
}

void ReplayFeed::SendPriorities(std::vector<uint64_t> keys, std::vector<double> priorities) {
  RethrowPriorityError();
  Post([this, keys = std::move(keys), priorities = std::move(priorities)] {
    try {
      sampler_.UpdatePriorities(keys, priorities);
    } catch (...) {
      std::lock_guard lock(mu_);
      if (!priority_error_) priority_error_ = std::current_exception();
    }
  });
}

void ReplayFeed::Drain() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return tasks_.empty() && !busy_; });
  }
  RethrowPriorityError();
}

void ReplayFeed::RethrowPriorityError() {
  std::exception_ptr error;
  {
    std::lock_guard lock(mu_);
    std::swap(error, priority_error_);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace rlswarm::learner
