#pragma once

// Test-only: an in-process replay shard (replay::ReplayService on
// tcp://127.0.0.1:*) holding a fixed set of CartPole-v1 1-step transitions
// from a seeded random policy, for learner tests that need real sampling
// and priority updates.

#include <memory>
#include <string>

#include "replay/service/replay_service.h"

namespace rlswarm::learner::testing {

class CartPoleReplay {
 public:
  // Starts the shard (prioritized, alpha 0.6, beta 0.4) and inserts
  // `num_transitions` transitions (reward 1, discount 0.99 or 0 when the
  // pole fell). The first `nan_observations` transitions get a NaN
  // observation instead, for the learner's non-finite-gradient tests (a NaN
  // reward would not do: the Huber loss's |td| has a zero gradient at NaN,
  // so only the priorities would be NaN).
  // `prioritized` false: a uniform table (draws that do not depend on the
  // priorities the learner sends back).
  explicit CartPoleReplay(int num_transitions, uint64_t seed = 0, int nan_observations = 0,
                          bool prioritized = true);
  ~CartPoleReplay();
  std::string endpoint() const { return service_->endpoint(); }
  replay::ReplayService& service() { return *service_; }

 private:
  std::unique_ptr<replay::ReplayService> service_;
};

}  // namespace rlswarm::learner::testing
