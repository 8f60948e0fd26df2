#pragma once

// learner_bench's DQN update case (`learner_bench --dqn-update`): the
// learner's whole DQN update as `rlswarm learner` runs it, against the plain
// LibTorch update of the same network (plain_dqn_update.h), in the same run.
//
// The learner side is the config's DqnLearner at world 1 (the options
// `rlswarm learner` builds from the config, on --device) driven through
// ApeXLearner::UpdateOn on a batch already sampled: the ranks' agreement,
// loss, backward, optimizer step, priorities to the host, target update and
// metrics. Replay is left out on both sides (the batch is staged once), and
// so are weight publishing and checkpoints, which the plain update does not
// do either. The batch: random rows of the config's transition signature
// (observations in the env's dtype, valid actions).
//
// Every repetition times the learner and then the plain update for
// `seconds` each, after a warm-up, so both see the same machine; the row
// gives medians over `reps`.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace rlswarm::bench {

struct DqnUpdateCaseOptions {
  double seconds = 0.5;
  int reps = 5;
  std::string device = "cpu";  // "cpu" or "cuda" (cuda:0)
};

// Returns {"case": "dqn_update", "config": file name, "model": "mlp" |
// "minatar" | ..., "batch", "world_size": 1, "device", "params",
// "updates_per_sec", "plain_updates_per_sec", "time_ratio_to_plain" (the
// learner's update time over the plain one's: > 1 is slower),
// "updates_per_sec_reps", "plain_updates_per_sec_reps"}. Throws what
// loading the config throws (ConfigError naming the key and file).
nlohmann::json MeasureDqnUpdate(const std::string& config_file, int64_t batch,
                                const DqnUpdateCaseOptions& options);

}  // namespace rlswarm::bench
