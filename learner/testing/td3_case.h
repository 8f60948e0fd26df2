#pragma once

// Test-only: the TD3 trainer case that the sharded workers and the
// in-process world-1 reference train identically (tests/learner/td3_trainer_test.cc).
//
// The td3 scenario (RunTd3Scenario, harness.h): the ranks train
// MakeTd3Trainer()'s networks (full_shard at world > 1, float64) for
// kTd3Updates on their rows of Td3GlobalBatch(update); rank 0 writes the
// full parameters of the four networks to <dir>/td3_<name>.bin (names:
// Td3NetworkNames()).

#include <array>
#include <memory>
#include <string>

#include "learner/algorithms/td3_trainer.h"

namespace rlswarm::learner::testing {

inline constexpr int kTd3Updates = 6;
inline constexpr int64_t kTd3GlobalBatch = 8;

// Pendulum's widths (observation 3, action 1 in [-2, 2]), hidden 16, 12.
std::unique_ptr<Td3Trainer> MakeTd3Trainer(ShardMesh mesh);
// Fixed synthetic transitions of update `update` (float64), all rows.
Td3Batch Td3GlobalBatch(int64_t update);
// Rows [rank * B / W, (rank + 1) * B / W) of it.
Td3Batch Td3RankRows(const Td3Batch& global, int rank, int world_size);
// TrainOn for updates 1..kTd3Updates on this rank's rows.
void TrainTd3(Td3Trainer& trainer, int rank, int world_size);

std::array<std::string, 4> Td3NetworkNames();
// The trainer's networks in Td3NetworkNames() order (collective).
std::array<models::NamedTensors, 4> Td3FullParameters(Td3Trainer& trainer);

}  // namespace rlswarm::learner::testing
