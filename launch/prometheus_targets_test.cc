// The run's Prometheus service discovery file and the role endpoints it
// lists: the file's content as Prometheus' file_sd reads it, its updates
// when a process moves to another port, and the URL a role writes.

#include "launch/prometheus_targets.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "launch/process_control.h"
#include "launch/role_metrics.h"

namespace rlswarm::launch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Json = nlohmann::json;

class LaunchMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "launch_metrics_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  static std::string Read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Polls every 10 ms for up to 10 s; never a fixed sleep.
  static bool WaitFor(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!condition() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    return condition();
  }

  fs::path dir_;
};

TEST_F(LaunchMetricsTest, ScrapeAddressIsTheHostAndPortOfAMetricsUrl) {
  EXPECT_EQ(ScrapeAddress("http://127.0.0.1:9100/metrics"), "127.0.0.1:9100");
  EXPECT_EQ(ScrapeAddress("http://[::1]:41000/metrics"), "[::1]:41000");
  EXPECT_EQ(ScrapeAddress("http://node-7:80/metrics"), "node-7:80");
  for (const char* bad : {"", "127.0.0.1:9100", "http://127.0.0.1/metrics",
                          "http://127.0.0.1:91x0/metrics", "https://127.0.0.1:9100/metrics",
                          "http://127.0.0.1:9100/other", "http://a:1/b:2/metrics"}) {
    EXPECT_EQ(ScrapeAddress(bad), std::nullopt) << bad;
  }
}

TEST_F(LaunchMetricsTest, MetricsUrlBracketsIpv6AndNamesTheHostForAWildcard) {
  EXPECT_EQ(MetricsUrl("127.0.0.1", 9100), "http://127.0.0.1:9100/metrics");
  EXPECT_EQ(MetricsUrl("::1", 9100), "http://[::1]:9100/metrics");
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(MetricsUrl("0.0.0.0", 1), "http://" + std::string(host) + ":1/metrics");
  EXPECT_EQ(MetricsUrl("::", 1), "http://" + std::string(host) + ":1/metrics");
}

TEST_F(LaunchMetricsTest, FileSdJsonIsOneGroupPerTargetWithItsLabels) {
  const Json j = Json::parse(FileSdJson({{"127.0.0.1:1", {{"role", "launcher"}, {"run", "r"}}},
                                         {"127.0.0.1:2", {{"role", "actor"}, {"actor", "3"}}}}));
  const Json want = Json::parse(R"([
    {"targets": ["127.0.0.1:1"], "labels": {"role": "launcher", "run": "r"}},
    {"targets": ["127.0.0.1:2"], "labels": {"role": "actor", "actor": "3"}}])");
  EXPECT_EQ(j, want);
  // No target yet is an empty list, which Prometheus reads as no targets.
  EXPECT_EQ(Json::parse(FileSdJson({})), Json::array());
}

TEST_F(LaunchMetricsTest, TargetsFileListsTheServingEndpointsAndFollowsANewPort) {
  const fs::path sd = dir_ / "prometheus_targets.json";
  PrometheusTargets targets(sd, {{dir_ / "metrics", {{"role", "launcher"}}},
                                 {dir_ / "metrics.replay-0", {{"role", "replay"}, {"shard", "0"}}},
                                 {dir_ / "metrics.actor-0", {{"role", "actor"}, {"actor", "0"}}}});
  WriteLinesAtomically((dir_ / "metrics").string(), {"http://127.0.0.1:9000/metrics"});
  // actor-0 has not written its URL yet; replay-0's file is garbage.
  WriteLinesAtomically((dir_ / "metrics.replay-0").string(), {"not a url"});
  EXPECT_TRUE(targets.Refresh());
  EXPECT_EQ(Json::parse(Read(sd)), Json::parse(R"([
    {"targets": ["127.0.0.1:9000"], "labels": {"role": "launcher"}}])"));
  EXPECT_FALSE(targets.Refresh()) << "nothing changed: the file is not rewritten";

  WriteLinesAtomically((dir_ / "metrics.replay-0").string(), {"http://127.0.0.1:9001/metrics"});
  WriteLinesAtomically((dir_ / "metrics.actor-0").string(), {"http://127.0.0.1:9002/metrics"});
  EXPECT_TRUE(targets.Refresh());
  EXPECT_EQ(Json::parse(Read(sd)), Json::parse(R"([
    {"targets": ["127.0.0.1:9000"], "labels": {"role": "launcher"}},
    {"targets": ["127.0.0.1:9001"], "labels": {"role": "replay", "shard": "0"}},
    {"targets": ["127.0.0.1:9002"], "labels": {"role": "actor", "actor": "0"}}])"));
  EXPECT_FALSE(fs::exists(sd.string() + ".tmp"));

  // A restarted actor on another port: the polling thread rewrites the file.
  targets.Start();
  WriteLinesAtomically((dir_ / "metrics.actor-0").string(), {"http://127.0.0.1:9003/metrics"});
  EXPECT_TRUE(WaitFor([&] { return Read(sd).find("127.0.0.1:9003") != std::string::npos; }))
      << Read(sd);
  EXPECT_EQ(Read(sd).find("127.0.0.1:9002"), std::string::npos) << Read(sd);
}

TEST_F(LaunchMetricsTest, RoleEndpointWritesItsUrlOnceServing) {
  EXPECT_EQ(StartRoleMetricsEndpoint({"127.0.0.1", -1, (dir_ / "off").string()}, [] { return ""; }),
            nullptr);
  EXPECT_FALSE(fs::exists(dir_ / "off"));

  auto server = StartRoleMetricsEndpoint({"127.0.0.1", 0, (dir_ / "metrics.actor-0").string()},
                                         [] { return std::string(); });
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(Read(dir_ / "metrics.actor-0"),
            "http://127.0.0.1:" + std::to_string(server->port()) + "/metrics\n");
}

TEST_F(LaunchMetricsTest, RoleSamplesCarryTheRoleLabels) {
  actors::ActorStats stats;
  stats.env_steps = 42;
  const std::string text = ActorMetrics(stats, RoleLabels("actor", "actor", 3));
  EXPECT_NE(text.find("rlswarm_actor_env_steps_total{role=\"actor\",actor=\"3\"} 42\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("rlswarm_actor_recent_return"), std::string::npos)
      << "no episode yet, no return\n"
      << text;
  LearnerRankCounters counters;
  counters.updates = 7;
  EXPECT_NE(LearnerRankMetrics(counters, RoleLabels("learner", "rank", 1))
                .find("rlswarm_learner_rank_updates_total{role=\"learner\",rank=\"1\"} 7\n"),
            std::string::npos);
}

}  // namespace
}  // namespace rlswarm::launch
