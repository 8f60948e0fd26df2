// learner_tests' main: either a gtest run, or (re-executed by
// testing::RunWorkers) one rank of a multi-process scenario.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tests/learner/scenarios.h"

int main(int argc, char** argv) {
  // As `rlswarm learner` sets it: an NCCL error or timeout raises in the
  // waiting thread (2: clean up only) instead of taking the process down
  // (LibTorch 2.x's default, 3), so a test reports it. Read by every NCCL
  // group at construction; the workers re-executed from here inherit it.
  setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2", /*overwrite=*/0);
  if (argc > 1 && std::strcmp(argv[1], "--rlswarm-worker") == 0) {
    return rlswarm::learner::testing::WorkerMain(argc - 2, argv + 2);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
