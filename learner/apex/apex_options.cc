#include "learner/apex/apex_options.h"

#include "common/errors.h"

namespace rlswarm::learner {

void ApeXOptions::Validate(int world_size) const {
  if (batch_size < 1 || world_size < 1 || batch_size % world_size != 0) {
    throw InvalidArgument("learner: batch_size " + std::to_string(batch_size) +
                          " must be a positive multiple of the world size " +
                          std::to_string(world_size));
  }
  if (publish_interval < 0 || checkpoint_interval < 0) {
    throw InvalidArgument("learner: publish_interval and checkpoint_interval must be >= 0");
  }
  if (checkpoint_interval > 0 && checkpoint_dir.empty()) {
    throw InvalidArgument("learner: checkpoint_interval needs a checkpoint_dir");
  }
  if (!model.trainable) throw InvalidArgument("learner: the model must be trainable");
}

}  // namespace rlswarm::learner
