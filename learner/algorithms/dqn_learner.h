#pragma once

// The Ape-X DQN learner of one rank: the Ape-X learner loop
// (learner/apex/apex_learner.h) training DqnAlgorithm (dqn_algorithm.h: the
// sharded online Q-network on the loop's model options, its target, the
// double-Q n-step Huber loss).

#include "learner/algorithms/dqn_algorithm.h"
#include "learner/apex/apex_learner.h"

namespace rlswarm::learner {

namespace internal {
// Holds the algorithm's address for DqnLearner. A base initialised before
// ApeXLearner, so that the algorithm factory, which ApeXLearner's
// constructor calls, can record it.
struct DqnAlgorithmSlot {
  DqnAlgorithm* dqn = nullptr;
};
}  // namespace internal

class DqnLearner : private internal::DqnAlgorithmSlot, public ApeXLearner {
 public:
  DqnLearner(models::ModelSpec spec, ApeXOptions options, DqnOptions dqn,
             std::shared_ptr<Communicator> comm, c10::intrusive_ptr<c10d::Store> store = {});
  DqnLearner(models::ModelSpec spec, ApeXOptions options, DqnOptions dqn, ShardMesh mesh,
             c10::intrusive_ptr<c10d::Store> store = {});

  ShardedModel& model() { return dqn->online(); }
  ShardedModel& target() { return dqn->target(); }
};

}  // namespace rlswarm::learner
