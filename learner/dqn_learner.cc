#include "learner/dqn_learner.h"

namespace rlswarm::learner {

DqnAlgorithmOptions DqnOptionsOf(const LearnerOptions& options) {
  return {options.model, options.loss, options.target_tau, options.target_update_interval};
}

DqnLearner::DqnLearner(models::ModelSpec spec, LearnerOptions options,
                       std::shared_ptr<Communicator> comm, c10::intrusive_ptr<c10d::Store> store)
    : DqnLearner(std::move(spec), std::move(options), ShardMesh::OneDim(std::move(comm)),
                 std::move(store)) {}

DqnLearner::DqnLearner(models::ModelSpec spec, LearnerOptions options, ShardMesh mesh,
                       c10::intrusive_ptr<c10d::Store> store)
    : ApeXLearner(
          [&](const ShardMesh& m) {
            return std::make_unique<DqnAlgorithm>(std::move(spec), DqnOptionsOf(options), m);
          },
          options, std::move(mesh), std::move(store)) {}

}  // namespace rlswarm::learner
