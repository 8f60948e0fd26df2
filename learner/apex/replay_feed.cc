#include "learner/apex/replay_feed.h"

#include <memory>

namespace rlswarm::learner {

ReplayFeed::ReplayFeed(replay::ReplaySampler& sampler, const BatchStager& stager)
    : sampler_(sampler), stager_(stager) {}

std::future<StagedBatch> ReplayFeed::Prefetch(int64_t size, std::optional<uint64_t> draw_seed) {
  auto task = std::make_shared<std::packaged_task<StagedBatch()>>([this, size, draw_seed] {
    return stager_.Stage(sampler_.Sample(size, std::nullopt, draw_seed));
  });
  std::future<StagedBatch> batch = task->get_future();
  worker_.Post([task] { (*task)(); });  // the future carries the task's error
  return batch;
}

void ReplayFeed::SendPriorities(std::vector<uint64_t> keys, std::vector<double> priorities) {
  RethrowPriorityError();
  worker_.Post([this, keys = std::move(keys), priorities = std::move(priorities)] {
    try {
      sampler_.UpdatePriorities(keys, priorities);
    } catch (...) {
      MutexLock lock(mu_);
      if (!priority_error_) priority_error_ = std::current_exception();
    }
  });
}

void ReplayFeed::Drain() {
  worker_.Drain();
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
