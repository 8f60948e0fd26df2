#include "rpc/internal/pending_calls.h"

#include <algorithm>
#include <functional>

namespace rlswarm::rpc::internal {

void PendingCalls::Add(std::unique_ptr<CallRecord> call) {
  const std::uint64_t id = call->id;
  deadlines_.emplace_back(call->deadline, id);
  std::push_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
  unsent_.push_back(id);
  calls_.emplace(id, std::move(call));
}

std::unique_ptr<CallRecord> PendingCalls::Remove(std::uint64_t id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return nullptr;
  std::unique_ptr<CallRecord> call = std::move(it->second);
  calls_.erase(it);
  if (deadlines_.size() > 2 * calls_.size() + 64) {
    // Mostly completed calls: keep only the live entries (amortised O(1)).
    std::erase_if(deadlines_, [this](const Deadline& d) { return !calls_.contains(d.second); });
    std::make_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
  }
  return call;
}

void PendingCalls::PruneDeadlines() const {
  while (!deadlines_.empty() && !calls_.contains(deadlines_.front().second)) {
    std::pop_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
    deadlines_.pop_back();
  }
}

CallRecord* PendingCalls::NextUnsent() {
  while (!unsent_.empty()) {
    auto it = calls_.find(unsent_.front());
    if (it != calls_.end() && !it->second->in_flight) return it->second.get();
    unsent_.pop_front();  // completed (or already sent) since it was queued
  }
  return nullptr;
}

void PendingCalls::MarkSent() {
  CallRecord* call = NextUnsent();
  if (call == nullptr) return;
  call->in_flight = true;
  unsent_.pop_front();
}

std::vector<CallRecord*> PendingCalls::InFlight() {
  std::vector<CallRecord*> calls;
  for (auto& [id, call] : calls_) {
    if (call->in_flight) calls.push_back(call.get());
  }
  std::sort(calls.begin(), calls.end(),
            [](const CallRecord* a, const CallRecord* b) { return a->id < b->id; });
  return calls;
}

void PendingCalls::Requeue(const std::vector<CallRecord*>& calls) {
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    (*it)->in_flight = false;
    unsent_.push_front((*it)->id);
  }
}

std::vector<std::unique_ptr<CallRecord>> PendingCalls::TakeExpired(Clock::time_point now) {
  std::vector<std::unique_ptr<CallRecord>> expired;
  while (!deadlines_.empty() && deadlines_.front().first <= now) {
    const std::uint64_t id = deadlines_.front().second;
    std::pop_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
    deadlines_.pop_back();
    auto it = calls_.find(id);
    if (it == calls_.end()) continue;  // completed since
    expired.push_back(std::move(it->second));
    calls_.erase(it);
  }
  return expired;
}

std::optional<PendingCalls::Clock::time_point> PendingCalls::NextDeadline() const {
  PruneDeadlines();
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.front().first;
}

std::vector<std::unique_ptr<CallRecord>> PendingCalls::TakeAll() {
  std::vector<std::unique_ptr<CallRecord>> all;
  all.reserve(calls_.size());
  for (auto& [id, call] : calls_) all.push_back(std::move(call));
  calls_.clear();
  deadlines_.clear();
  unsent_.clear();
  return all;
}

}  // namespace rlswarm::rpc::internal
