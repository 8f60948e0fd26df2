// learner_tests' main: either a gtest run, or (re-executed by
// testing::RunWorkers) one rank of a multi-process scenario.

#include <gtest/gtest.h>

#include <cstring>

#include "learner/testing/harness.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--rlswarm-worker") == 0) {
    return rlswarm::learner::testing::WorkerMain(argc - 2, argv + 2);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
