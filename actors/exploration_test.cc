#include "actors/exploration.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/errors.h"

namespace rlswarm::actors {
namespace {

TEST(ExplorationTest, ApeXSpreadsEpsilonFromEpsToEpsToTheEight) {
  ExplorationOptions o;  // eps 0.4, alpha 7
  EXPECT_DOUBLE_EQ(Epsilon(o, 0, 8, 0), 0.4);
  EXPECT_DOUBLE_EQ(Epsilon(o, 7, 8, 0), std::pow(0.4, 8));
  EXPECT_DOUBLE_EQ(Epsilon(o, 3, 8, 0), std::pow(0.4, 1 + 7.0 * 3 / 7));
  EXPECT_DOUBLE_EQ(Epsilon(o, 0, 1, 123), 0.4);                        // one actor
  EXPECT_DOUBLE_EQ(Epsilon(o, 2, 8, 0), Epsilon(o, 2, 8, 1'000'000));  // constant in time
}

TEST(ExplorationTest, LinearAnnealsThenStays) {
  ExplorationOptions o;
  o.schedule = EpsilonSchedule::kLinear;
  o.start = 1.0;
  o.end = 0.1;
  o.anneal_steps = 100;
  EXPECT_DOUBLE_EQ(Epsilon(o, 0, 1, 0), 1.0);
  EXPECT_DOUBLE_EQ(Epsilon(o, 0, 1, 50), 0.55);
  EXPECT_DOUBLE_EQ(Epsilon(o, 0, 1, 100), 0.1);
  EXPECT_DOUBLE_EQ(Epsilon(o, 0, 1, 10'000), 0.1);
}

// anneal_steps count the run's env steps: each of 4 actors is done after a
// quarter of them, so the run explores as one actor's would.
TEST(ExplorationTest, LinearAnnealsOverTheRunsStepsWhateverTheNumberOfActors) {
  ExplorationOptions o;
  o.schedule = EpsilonSchedule::kLinear;
  o.start = 1.0;
  o.end = 0.1;
  o.anneal_steps = 100;
  EXPECT_DOUBLE_EQ(Epsilon(o, 3, 4, 0), 1.0);
  EXPECT_DOUBLE_EQ(Epsilon(o, 0, 4, 12), Epsilon(o, 0, 1, 48));
  EXPECT_DOUBLE_EQ(Epsilon(o, 3, 4, 25), 0.1);
  EXPECT_DOUBLE_EQ(Epsilon(o, 1, 2, 25), 0.55);
}

TEST(ExplorationTest, FixedAndErrors) {
  ExplorationOptions o;
  o.schedule = ParseEpsilonSchedule("fixed");
  o.epsilon = 0.05;
  EXPECT_DOUBLE_EQ(Epsilon(o, 3, 4, 7), 0.05);
  EXPECT_THROW(Epsilon(o, 4, 4, 0), InvalidArgument);
  EXPECT_THROW(ParseEpsilonSchedule("greedy"), InvalidArgument);
  o.epsilon = 1.5;
  EXPECT_THROW(o.Validate(), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::actors
