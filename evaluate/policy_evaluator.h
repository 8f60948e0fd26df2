#pragma once

// PolicyEvaluator: judges a set of weights (a Q-network's, or a TD3
// policy's: actors/acting_policy.h) the way the acceptance
// criteria do: greedy episodes 0..N-1 of a fixed seed (envs::RunEpisodes,
// so the result does not depend on the number of envs), mean return over
// the N episodes. Separate from the training actors: no exploration, no
// replay, its own envs.
//
// With a target return and a bound on one episode's return, an evaluation
// stops as soon as the target is out of reach (the finished episodes plus
// the bound for every unfinished one fall short): a bad policy costs a few
// episodes, not N.
//
// Not thread-safe: one thread evaluates.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/payload.h"
#include "envs/episode_runner.h"
#include "envs/vector_env.h"
#include "models/model_spec.h"

namespace rlswarm::actors {
class ActingPolicy;
struct ActingNetworks;
}  // namespace rlswarm::actors

namespace rlswarm::evaluate {

struct PolicyEvaluatorOptions {
  std::string env_name = "CartPole-v1";
  envs::VectorEnvOptions env;  // seeding is forced to kSeedPerEpisode
  std::int64_t episodes = 100;
  std::uint64_t seed = 0;
  // Epsilon-greedy instead of greedy (0): a greedy policy can loop forever
  // where a little noise would break it out (MinAtar Seaquest's sub that
  // never dives). For continuous actions: Gaussian noise of this sigma.
  double epsilon = 0;
  std::optional<double> target_return;
  std::optional<double> episode_return_bound;
  // Stop after this long (the result then has complete = false); 0 = none.
  // Checked every step: MinAtar games have no time limit, and a policy can
  // keep one episode going forever.
  double time_limit_s = 0;
};

struct Evaluation {
  std::uint64_t version = 0;    // the weights' version (= learner updates)
  std::int64_t episodes = 0;    // finished
  bool complete = false;        // all episodes ran (false: stopped, target out of reach)
  bool reached_target = false;  // complete and mean_return >= target_return
  double mean_return = 0;       // over the finished episodes
  double std_return = 0;
  double min_return = 0;
  double max_return = 0;
  std::int64_t env_steps = 0;
  double seconds = 0;
};

class PolicyEvaluator {
 public:
  // Throws NotFound (unknown env), InvalidArgument (bad options).
  PolicyEvaluator(PolicyEvaluatorOptions options, const actors::ActingNetworks& networks);
  // A Q-network of `model`.
  PolicyEvaluator(PolicyEvaluatorOptions options, const models::ModelSpec& model,
                  std::uint64_t model_seed);
  ~PolicyEvaluator();

  // Loads `weights` (models/weights_wire.h; InvalidArgument if they do not
  // fit the model) and runs the evaluation.
  // `cancel`, when given and set (from any thread), ends the evaluation
  // within one step (complete = false).
  Evaluation Evaluate(const std::vector<Payload>& weights, std::uint64_t version,
                      const std::atomic<bool>* cancel = nullptr);

 private:
  PolicyEvaluatorOptions options_;
  envs::VectorEnv env_;
  std::unique_ptr<actors::ActingPolicy> network_;
  std::unique_ptr<envs::BatchPolicy> policy_;
};

}  // namespace rlswarm::evaluate
