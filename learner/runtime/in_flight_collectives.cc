#include "learner/runtime/in_flight_collectives.h"

namespace rlswarm::learner {

int64_t InFlightCollectives::Issue(CollectivePlane plane) {
  MutexLock lock(mu_);
  return ++planes_[static_cast<int>(plane)].issued;
}

void InFlightCollectives::Complete(CollectivePlane plane, int64_t seq) {
  MutexLock lock(mu_);
  Plane& p = planes_[static_cast<int>(plane)];
  if (seq <= p.done) return;
  p.completed_ahead.insert(seq);
  // Asynchronous collectives may be waited for out of issue order: `done`
  // only moves over an unbroken run of completed ones.
  const int64_t before = p.done;
  // A collective dropped without a wait would hold `done` back for ever
  // (and this set would grow): once this many later ones have completed,
  // the gap counts as completed too.
  constexpr size_t kMaxAhead = 1024;
  if (p.completed_ahead.size() > kMaxAhead) p.done = *p.completed_ahead.begin() - 1;
  while (!p.completed_ahead.empty() && *p.completed_ahead.begin() == p.done + 1) {
    p.completed_ahead.erase(p.completed_ahead.begin());
    ++p.done;
  }
  if (p.done != before) p.done_at = std::chrono::steady_clock::now();
}

CollectiveProgress InFlightCollectives::Snapshot() const {
  MutexLock lock(mu_);
  CollectiveProgress progress;
  for (int i = 0; i < 2; ++i) {
    progress.issued[i] = planes_[i].issued;
    progress.done[i] = planes_[i].done;
    progress.done_at[i] = planes_[i].done_at;
  }
  progress.blocked = blocked_;
  return progress;
}

InFlightCollectives::Waiting::Waiting(InFlightCollectives* record, CollectivePlane plane,
                                      int64_t seq, const std::string& name)
    : record_(record), plane_(plane), seq_(seq) {
  if (record_ == nullptr) return;
  MutexLock lock(record_->mu_);
  record_->blocked_ = BlockedCollective{name, plane, seq, std::chrono::steady_clock::now()};
}

InFlightCollectives::Waiting::~Waiting() {
  if (record_ == nullptr) return;
  {
    MutexLock lock(record_->mu_);
    record_->blocked_.reset();
  }
  record_->Complete(plane_, seq_);
}

}  // namespace rlswarm::learner
