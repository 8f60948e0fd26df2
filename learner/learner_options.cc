#include "learner/learner_options.h"

#include "common/errors.h"

namespace rlswarm::learner {

void LearnerOptions::Validate(int world_size) const {
  if (batch_size < 1 || world_size < 1 || batch_size % world_size != 0) {
    throw InvalidArgument("learner: batch_size " + std::to_string(batch_size) +
                          " must be a positive multiple of the world size " +
                          std::to_string(world_size));
  }
  if (!(target_tau >= 0 && target_tau <= 1)) {
    throw InvalidArgument("learner: target_tau must be in [0, 1]");
  }
  if (target_tau == 0 && target_update_interval < 1) {
    throw InvalidArgument("learner: target_update_interval must be >= 1 when target_tau is 0");
  }
  if (publish_interval < 0 || checkpoint_interval < 0) {
    throw InvalidArgument("learner: publish_interval and checkpoint_interval must be >= 0");
  }
  if (checkpoint_interval > 0 && checkpoint_dir.empty()) {
    throw InvalidArgument("learner: checkpoint_interval needs a checkpoint_dir");
  }
  if (!model.trainable) throw InvalidArgument("learner: the model must be trainable");
  loss.Validate();
  td3_loss.Validate();
  if (policy_delay < 1 || policy_lr < 0) {
    throw InvalidArgument("learner: policy_delay must be >= 1 and policy_lr >= 0");
  }
}

}  // namespace rlswarm::learner
