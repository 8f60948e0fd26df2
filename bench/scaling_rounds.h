#pragma once

// learner_bench's scaling rounds (`--scaling-rounds N`): is world 2 on this
// machine's cores faster than one process given the same cores? Each round
// measures world 1 with 1 intra-op thread, world 1 with 2 threads (the fair
// baseline for 2 ranks of 1 thread each: the same cores, one process) and
// world 2 with 1 thread per rank, each in a fresh process, in an order
// rotated by one every round, so that a slow minute of the shared machine
// falls on different cases in different rounds. Ratios are taken within a
// round (same minutes), then summarised over the rounds as min / median / max.

#include <functional>
#include <nlohmann/json.hpp>

namespace rlswarm::bench {

// `measure(world, threads_per_rank)`: updates/s of one case in a process of
// its own (blocks for its run; throws what it throws). Returns
// {"results": [one {"case": "scaling_round", "round", "order",
// "load_avg_before" (the 1-minute load average before each case, in order),
// "world1_1thread_updates_per_sec", "world1_2threads_updates_per_sec",
// "world2_updates_per_sec", "ratio_to_world1_1thread",
// "ratio_to_world1_2threads"} per round..., then {"case": "scaling",
// "rounds", and {"min", "median", "max"} of each of those five figures}]}.
nlohmann::json RunScalingRounds(int rounds,
                                const std::function<double(int world, int threads)>& measure);

}  // namespace rlswarm::bench
