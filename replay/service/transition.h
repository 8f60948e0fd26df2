#pragma once

// The item that actors send and learners train on: one n-step transition
// (Ape-X, Horgan et al. 2018, section 3):
//   observation       s_t
//   action            a_t (int64 scalar for discrete actions, float32 [d] for
//                     continuous ones)
//   reward            sum_{k<n'} gamma^k r_{t+k}, n' = min(n, steps to episode end)
//   discount          gamma^n' if the episode went on (or was truncated by a
//                     time limit) after those steps, 0 if it terminated: the
//                     bootstrap factor of Q(next_observation)
//   next_observation  s_{t+n'}
// Replay does not depend on envs: callers pass the observation and action
// dtypes and shapes.

#include <cstdint>
#include <vector>

#include "replay/signature.h"

namespace rlswarm::replay {

namespace transition {
inline constexpr char kObservation[] = "observation";
inline constexpr char kAction[] = "action";
inline constexpr char kReward[] = "reward";
inline constexpr char kDiscount[] = "discount";
inline constexpr char kNextObservation[] = "next_observation";
}  // namespace transition

inline Signature TransitionSignature(DType observation_dtype,
                                     const std::vector<std::int64_t>& observation_shape,
                                     DType action_dtype,
                                     const std::vector<std::int64_t>& action_shape) {
  return Signature{{{transition::kObservation, observation_dtype, observation_shape},
                    {transition::kAction, action_dtype, action_shape},
                    {transition::kReward, DType::kFloat32, {}},
                    {transition::kDiscount, DType::kFloat32, {}},
                    {transition::kNextObservation, observation_dtype, observation_shape}}};
}

}  // namespace rlswarm::replay
