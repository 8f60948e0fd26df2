#include "actors/acting_policy.h"

#include "actors/q_acting_policy.h"
#include "actors/td3_acting_policy.h"

namespace rlswarm::actors {

std::size_t ActingPolicy::action_bytes() const {
  std::size_t n = DTypeSize(action_dtype());
  for (std::int64_t d : action_shape()) n *= static_cast<std::size_t>(d);
  return n;
}

std::unique_ptr<ActingPolicy> MakeActingPolicy(const ActingNetworks& networks,
                                               const envs::EnvSpec& env) {
  if (env.action.kind == envs::ActionKind::kContinuous) {
    return std::make_unique<Td3ActingPolicy>(
        networks.policy, networks.critic ? &*networks.critic : nullptr, networks.seed, env);
  }
  return std::make_unique<QActingPolicy>(networks.policy, networks.seed, env);
}

}  // namespace rlswarm::actors
