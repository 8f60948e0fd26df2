#include "learner/algorithms/dqn_learner.h"

namespace rlswarm::learner {

DqnLearner::DqnLearner(models::ModelSpec spec, ApeXOptions options, DqnOptions dqn,
                       std::shared_ptr<Communicator> comm, c10::intrusive_ptr<c10d::Store> store)
    : DqnLearner(std::move(spec), std::move(options), std::move(dqn),
                 ShardMesh::OneDim(std::move(comm)), std::move(store)) {}

DqnLearner::DqnLearner(models::ModelSpec spec, ApeXOptions options, DqnOptions dqn, ShardMesh mesh,
                       c10::intrusive_ptr<c10d::Store> store)
    : ApeXLearner(
          [&](const ShardMesh& m) {
            auto algorithm =
                std::make_unique<DqnAlgorithm>(std::move(spec), options.model, std::move(dqn), m);
            this->dqn = algorithm.get();
            return algorithm;
          },
          options, std::move(mesh), std::move(store)) {}

}  // namespace rlswarm::learner
