#include "learner/replay_feed.h"

#include <memory>

namespace rlswarm::learner {

ReplayFeed::ReplayFeed(replay::ReplaySampler& sampler, const BatchStager& stager)
    : sampler_(sampler), stager_(stager), worker_([this] { Run(); }) {}

ReplayFeed::~ReplayFeed() {
  {
    MutexLock lock(mu_);
    stop_ = true;  // the worker finishes what is queued first
  }
  cv_.NotifyAll();
  worker_.join();
}

void ReplayFeed::Run() {
  MutexLock lock(mu_);
  while (true) {
    cv_.Wait(lock, [this]() RLSWARM_REQUIRES(mu_) { return !tasks_.empty() || stop_; });
    if (tasks_.empty()) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.Unlock();
    task();  // tasks catch their own errors
    lock.Lock();
    busy_ = false;
    cv_.NotifyAll();  // Drain
  }
}

void ReplayFeed::Post(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.NotifyAll();
}

std::future<StagedBatch> ReplayFeed::Prefetch(int64_t size, std::optional<uint64_t> draw_seed) {
  auto task = std::make_shared<std::packaged_task<StagedBatch()>>([this, size, draw_seed] {
    return stager_.Stage(sampler_.Sample(size, std::nullopt, draw_seed));
  });
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
      MutexLock lock(mu_);
      if (!priority_error_) priority_error_ = std::current_exception();
    }
  });
}

void ReplayFeed::Drain() {
  {
    MutexLock lock(mu_);
    cv_.Wait(lock, [this]() RLSWARM_REQUIRES(mu_) { return tasks_.empty() && !busy_; });
  }
  RethrowPriorityError();
}

void ReplayFeed::RethrowPriorityError() {
  std::exception_ptr error;
  {
    MutexLock lock(mu_);
    std::swap(error, priority_error_);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace rlswarm::learner
