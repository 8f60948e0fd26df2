#include "learner/dist/rendezvous.h"

#include <gtest/gtest.h>

#include <map>

#include "common/errors.h"
#include "learner/dist/env_rendezvous.h"

namespace rlswarm::learner {
namespace {

EnvGetter FromMap(std::map<std::string, std::string> env) {
  return [env = std::move(env)](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

TEST(EnvRendezvousTest, ReadsTorchrunVariables) {
  RendezvousOptions o = RendezvousOptionsFromEnv(FromMap({{"MASTER_ADDR", "10.0.0.2"},
                                                          {"MASTER_PORT", "29555"},
                                                          {"RANK", "3"},
                                                          {"WORLD_SIZE", "4"},
                                                          {"LOCAL_RANK", "1"},
                                                          {"LOCAL_WORLD_SIZE", "2"}}));
  EXPECT_EQ(o.master_addr, "10.0.0.2");
  EXPECT_EQ(o.master_port, 29555);
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.local_rank, 1);
  EXPECT_EQ(o.local_world_size, 2);  // hybrid_shard's default shard group
  EXPECT_EQ(RendezvousOptionsFromEnv(FromMap({})).local_world_size, 0);  // not known
  EXPECT_THROW(RendezvousOptionsFromEnv(FromMap({{"LOCAL_WORLD_SIZE", "0"}})), InvalidArgument);
}

TEST(EnvRendezvousTest, FallsBackToSlurmVariablesAndKeepsDefaults) {
  RendezvousOptions defaults;
  defaults.timeout = std::chrono::milliseconds(1234);
  RendezvousOptions o = RendezvousOptionsFromEnv(
      FromMap({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "1"}}), defaults);
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.world_size, 2);
  EXPECT_EQ(o.local_rank, 1);
  EXPECT_EQ(o.timeout.count(), 1234);
}

TEST(EnvRendezvousTest, WithoutMasterAddrTheFirstSlurmNodeIsTheMaster) {
  EXPECT_EQ(FirstHostOfSlurmNodeList("node7"), "node7");
  EXPECT_EQ(FirstHostOfSlurmNodeList("gpu[01-04,07],cpu3"), "gpu01");
  EXPECT_EQ(FirstHostOfSlurmNodeList("rack[2,5]-n[008-009]"), "rack2-n008");
  EXPECT_EQ(FirstHostOfSlurmNodeList("a1,b[1-2]"), "a1");
  EXPECT_THROW(FirstHostOfSlurmNodeList("gpu[01-04"), InvalidArgument);
  EXPECT_THROW(FirstHostOfSlurmNodeList("gpu[x]"), InvalidArgument);
  EXPECT_THROW(FirstHostOfSlurmNodeList(""), InvalidArgument);
  // The step's list first (rank 0 runs on its first node), then the job's.
  EXPECT_EQ(RendezvousOptionsFromEnv(FromMap({{"SLURM_JOB_NODELIST", "gpu[03-04]"}})).master_addr,
            "gpu03");
  EXPECT_EQ(RendezvousOptionsFromEnv(
                FromMap({{"SLURM_STEP_NODELIST", "gpu[04]"}, {"SLURM_JOB_NODELIST", "gpu[03-04]"}}))
                .master_addr,
            "gpu04");
  // MASTER_ADDR wins; without any of them the default stays.
  EXPECT_EQ(RendezvousOptionsFromEnv(
                FromMap({{"MASTER_ADDR", "10.0.0.9"}, {"SLURM_JOB_NODELIST", "gpu[03-04]"}}))
                .master_addr,
            "10.0.0.9");
  EXPECT_EQ(RendezvousOptionsFromEnv(FromMap({})).master_addr, "127.0.0.1");
  try {
    RendezvousOptionsFromEnv(FromMap({{"SLURM_JOB_NODELIST", "gpu[01"}}));
    FAIL() << "an unreadable node list was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("SLURM_JOB_NODELIST"), std::string::npos) << e.what();
  }
}

TEST(EnvRendezvousTest, RejectsMalformedValuesNamingTheVariable) {
  try {
    RendezvousOptionsFromEnv(FromMap({{"MASTER_PORT", "29x"}}));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_PORT"), std::string::npos);
  }
  EXPECT_THROW(RendezvousOptionsFromEnv(FromMap({{"RANK", "2"}, {"WORLD_SIZE", "2"}})),
               InvalidArgument);
}

TEST(RendezvousTest, SingleRankHostsTheStoreOnAFreePort) {
  RendezvousOptions o;
  o.master_port = 0;
  o.gloo_hostname = "127.0.0.1";
  ProcessGroupHandle h = Rendezvous(o);
  EXPECT_NE(h.store_port, 0);
  EXPECT_EQ(h.world_size, 1);
}

TEST(RendezvousTest, RankThatNeverArrivesGivesDeadlineExceededWithinTheTimeout) {
  uint16_t port = 0;
  auto store = HostStore(0, std::chrono::milliseconds(5000), &port);
  RendezvousOptions o;
  o.master_port = port;
  o.world_size = 2;
  o.host_store = false;
  o.gloo_hostname = "127.0.0.1";
  o.timeout = std::chrono::milliseconds(1000);
  const auto start = std::chrono::steady_clock::now();
  try {
    Rendezvous(o);
    FAIL() << "rendezvous without rank 1 succeeded";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0/2"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace rlswarm::learner
