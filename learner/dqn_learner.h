#pragma once

// The Ape-X DQN learner of one rank: the Ape-X learner loop
// (apex_learner.h) training DqnAlgorithm (dqn_algorithm.h: the sharded
// online Q-network, its target, the double-Q n-step Huber loss) from
// LearnerOptions' model, loss and target keys.

#include "learner/apex_learner.h"
#include "learner/dqn_algorithm.h"

namespace rlswarm::learner {

// DqnAlgorithmOptions from the learner options.
DqnAlgorithmOptions DqnOptionsOf(const LearnerOptions& options);

class DqnLearner : public ApeXLearner {
 public:
  DqnLearner(models::ModelSpec spec, LearnerOptions options, std::shared_ptr<Communicator> comm,
             c10::intrusive_ptr<c10d::Store> store = {});
  DqnLearner(models::ModelSpec spec, LearnerOptions options, ShardMesh mesh,
             c10::intrusive_ptr<c10d::Store> store = {});

  ShardedModel& model() { return dqn().online(); }
  ShardedModel& target() { return dqn().target(); }

 private:
  DqnAlgorithm& dqn() { return static_cast<DqnAlgorithm&>(algorithm()); }
};

}  // namespace rlswarm::learner
