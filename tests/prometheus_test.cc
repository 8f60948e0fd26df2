// A real Prometheus server (Debian's prometheus) scrapes a real processes-mode
// `rlswarm launch` through the run's file-based service discovery file
// (<run>/prometheus_targets.json): every process is a target that is up,
// carries its role's labels, and reports numbers that agree with the run
// directory; an actor killed with SIGKILL comes back on a new port and the
// discovery file takes Prometheus there.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/free_ports.h"
#include "common/testing/child_process.h"
#include "common/testing/files.h"
#include "tests/run_logs.h"

namespace rlswarm {
namespace {

using testing::Incarnation;

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::ChildProcess;

struct HttpResponse {
  int status = 0;
  std::string body;
};

// GET http://127.0.0.1:<port><target> on a fresh connection, 5 s per step.
// Throws std::runtime_error when the server cannot be reached.
HttpResponse Get(int port, const std::string& target) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, "127.0.0.1");
  request.keep_alive(false);
  http::response<http::string_body> response;
  beast::flat_buffer buffer;
  beast::error_code error;
  stream.expires_after(5s);
  stream.async_connect(
      asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                              static_cast<unsigned short>(port)),
      [&](beast::error_code connect_ec) {
        if (connect_ec) {
          error = connect_ec;
          return;
        }
        stream.expires_after(5s);
        http::async_write(stream, request, [&](beast::error_code write_ec, std::size_t) {
          if (write_ec) {
            error = write_ec;
            return;
          }
          stream.expires_after(5s);
          http::async_read(stream, buffer, response,
                           [&](beast::error_code read_ec, std::size_t) { error = read_ec; });
        });
      });
  io.run();
  if (error) throw std::runtime_error("GET " + target + ": " + error.message());
  return {static_cast<int>(response.result_int()), response.body()};
}

// RFC 3986 percent-encoding of a query parameter's value.
std::string UrlEncode(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// Polls every 100 ms until `condition` holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& condition, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Debian's prometheus binary, or "" when it is not installed.
std::string FindPrometheus() {
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path ? path : "") + ":/usr/bin:/usr/local/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / "prometheus";
    if (!candidate.parent_path().empty() && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
    start = end + 1;
  }
  return "";
}

// A Prometheus server on 127.0.0.1 with its own storage, scraping whatever
// `sd_file` lists every second.
class PrometheusServer {
 public:
  PrometheusServer(const std::string& binary, const fs::path& dir, const fs::path& sd_file) {
    const fs::path config = dir / "prometheus.yml";
    // honor_labels: the endpoints label their samples with the same role
    // labels the SD file gives the targets; keep them as they are instead
    // of renaming them to exported_*.
    std::ofstream(config) << "global:\n"
                             "  scrape_interval: 1s\n"
                             "  scrape_timeout: 900ms\n"
                             "scrape_configs:\n"
                             "  - job_name: rlswarm\n"
                             "    honor_labels: true\n"
                             "    file_sd_configs:\n"
                             "      - files: ['"
                          << sd_file.string()
                          << "']\n"
                             "        refresh_interval: 1s\n";
    // The port is free when picked; another process may take it before
    // Prometheus binds it, so try a few.
    for (int attempt = 0; attempt < 3 && !ready_; ++attempt) {
      port_ = PickFreePort();
      process_ = std::make_unique<ChildProcess>(
          std::vector<std::string>{binary, "--config.file=" + config.string(),
                                   "--storage.tsdb.path=" + (dir / "data").string(),
                                   "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                   "--log.level=warn"},
          (dir / "prometheus.log").string());
      ready_ = WaitFor(
                   [&] {
                     if (!process_->running() || process_->Wait(0ms)) return true;
                     try {
                       return Get(port_, "/-/ready").status == 200;
                     } catch (const std::exception&) {
                       return false;
                     }
                   },
                   30s) &&
               process_->running();
    }
  }

  bool ready() const { return ready_; }
  std::string Log() const { return process_ ? process_->Log() : ""; }

  // GET /api/v1/<what>; the "data" member of a successful answer, or null.
  Json Api(const std::string& what) const {
    try {
      const HttpResponse r = Get(port_, "/api/v1/" + what);
      const Json j = Json::parse(r.body, nullptr, false);
      if (r.status == 200 && j.is_object() && j.value("status", "") == "success") {
        return j["data"];
      }
    } catch (const std::exception&) {
    }
    return nullptr;
  }
  // The instant vector or range vector `promql` evaluates to now.
  Json Query(const std::string& promql) const {
    const Json data = Api("query?query=" + UrlEncode(promql));
    return data.is_object() ? data["result"] : Json::array();
  }

 private:
  int port_ = 0;
  bool ready_ = false;
  std::unique_ptr<ChildProcess> process_;
};

double Value(const Json& sample) { return std::stod(sample["value"][1].get<std::string>()); }

// "role/index" of a series or target, e.g. "replay/0", "launcher/".
std::string RoleKey(const Json& labels) {
  const std::string role = labels.value("role", "?");
  for (const char* index : {"shard", "rank", "actor"}) {
    if (labels.contains(index)) return role + "/" + labels[index].get<std::string>();
  }
  return role + "/";
}

// The SD file's groups as role key -> host:port.
std::map<std::string, std::string> SdTargets(const fs::path& sd_file) {
  std::map<std::string, std::string> targets;
  const Json j = Json::parse(ReadText(sd_file), nullptr, false);
  if (!j.is_array()) return targets;
  for (const Json& group : j) targets[RoleKey(group["labels"])] = group["targets"][0];
  return targets;
}

TEST(ObservabilityTest, PrometheusScrapesEveryRoleOfAProcessesRunThroughFileSd) {
  const std::string prometheus = FindPrometheus();
  ASSERT_FALSE(prometheus.empty())
      << "prometheus is not installed; scripts/setup.sh installs Debian's prometheus package";
  testing::TempDir temp("prometheus_test");
  ASSERT_FALSE(temp.path().empty());
  const fs::path run = fs::path(temp.path()) / "run";
  const fs::path sd_file = run / "prometheus_targets.json";
  // Prometheus watches the SD file's directory: it exists before the run.
  fs::create_directories(run);
  fs::create_directories(fs::path(temp.path()) / "prometheus");
  PrometheusServer server(prometheus, fs::path(temp.path()) / "prometheus", sd_file);
  ASSERT_TRUE(server.ready()) << server.Log();

  // Two replay shards and two learner ranks, so every index label shows;
  // no target return: the run goes on until it is told to stop.
  ChildProcess launch(
      {RLSWARM_BINARY, "launch", std::string(RLSWARM_CONFIGS_DIR) + "/cartpole.yaml", "--run-dir",
       run.string(), "launch.mode=processes", "launch.learner_ranks=2", "replay.num_shards=2",
       "launch.metrics_port=0", "launch.target_return=null", "launch.episode_return_bound=null",
       "launch.max_wall_time_s=120", "launch.progress_interval_s=0.5"},
      temp.path() + "/launch.log");
  const std::set<std::string> roles = {"launcher/", "replay/0",  "replay/1",
                                       "learner/0", "learner/1", "actor/0"};
  auto sd_roles = [&] {
    std::set<std::string> keys;
    for (const auto& [key, address] : SdTargets(sd_file)) keys.insert(key);
    return keys;
  };
  ASSERT_TRUE(WaitFor([&] { return sd_roles() == roles; }, 60s))
      << ReadText(sd_file) << launch.Log();

  // Every target is scraped and up, under its SD labels.
  auto all_up = [&] {
    const Json data = server.Api("targets?state=active");
    if (!data.is_object()) return false;
    std::set<std::string> up;
    for (const Json& t : data["activeTargets"]) {
      if (t["health"] == "up") up.insert(RoleKey(t["labels"]));
    }
    return up == roles;
  };
  ASSERT_TRUE(WaitFor(all_up, 30s)) << server.Api("targets").dump(2) << server.Log();
  const std::map<std::string, std::string> sd = SdTargets(sd_file);
  for (const Json& t : server.Api("targets?state=active")["activeTargets"]) {
    const std::string key = RoleKey(t["labels"]);
    EXPECT_EQ(t["scrapeUrl"], "http://" + sd.at(key) + "/metrics") << key;
    EXPECT_EQ(t["labels"]["run"], "run") << key;
    EXPECT_EQ(t["labels"]["job"], "rlswarm") << key;
  }
  const Json up = server.Query("up{job=\"rlswarm\"}");
  ASSERT_EQ(up.size(), roles.size()) << up.dump(2);
  for (const Json& series : up) EXPECT_EQ(Value(series), 1) << series.dump();

  // Every role reports work: transitions stored by both shards, updates by
  // both ranks, steps by the actor.
  const std::map<std::string, std::string> counters = {
      {"replay", "rlswarm_replay_shard_inserted_total"},
      {"learner", "rlswarm_learner_rank_updates_total"},
      {"actor", "rlswarm_actor_env_steps_total"}};
  for (const auto& [role, metric] : counters) {
    const std::size_t want = role == "actor" ? 1 : 2;
    EXPECT_TRUE(WaitFor(
        [&] {
          const Json result = server.Query(metric + " > 0");
          return result.size() == want;
        },
        60s))
        << metric << ": " << server.Query(metric).dump(2) << launch.Log();
  }
  // Each role's own series carry its labels, and no role reports another's.
  const Json series = server.Query("{__name__=~\"rlswarm_.+\", role=~\"replay|learner|actor\"}");
  ASSERT_FALSE(series.empty());
  for (const Json& s : series) {
    const Json& labels = s["metric"];
    const std::string name = labels["__name__"];
    const std::string role = labels.value("role", "");
    const std::string prefix = role == "replay"
                                   ? "rlswarm_replay_shard_"
                                   : "rlswarm_" + role + (role == "learner" ? "_rank_" : "_");
    EXPECT_EQ(name.rfind(prefix, 0), 0u) << labels.dump();
    EXPECT_NE(RoleKey(labels).back(), '/') << "no index label: " << labels.dump();
  }

  // kill -9 of the actor: it restarts on a port of its own choosing and
  // writes its URL file anew (a new file renamed over the old one: a new
  // inode, whether or not the kernel gave it the same port); the SD file
  // takes Prometheus to it.
  const fs::path url_file = run / "endpoints" / "metrics.actor-0";
  auto inode = [&] {
    struct stat st {};
    return ::stat(url_file.c_str(), &st) == 0 ? st.st_ino : 0;
  };
  const ino_t old_inode = inode();
  const auto [actor_pid, incarnations] = Incarnation(run, "actor-0");
  ASSERT_GT(actor_pid, 0);
  ASSERT_EQ(::kill(actor_pid, SIGKILL), 0);
  std::string new_address;
  ASSERT_TRUE(WaitFor(
      [&] {
        if (Incarnation(run, "actor-0").second <= incarnations || inode() == old_inode) {
          return false;
        }
        std::string url;
        std::getline(std::ifstream(url_file), url);
        new_address = url.substr(7, url.size() - 7 - 8);  // http://<address>/metrics
        return SdTargets(sd_file)["actor/0"] == new_address;
      },
      30s))
      << ReadText(sd_file) << launch.Log();
  EXPECT_TRUE(WaitFor(
      [&] {
        const Json data = server.Api("targets?state=active");
        if (!data.is_object()) return false;
        for (const Json& t : data["activeTargets"]) {
          if (RoleKey(t["labels"]) == "actor/0" && t["health"] == "up" &&
              t["scrapeUrl"] == "http://" + new_address + "/metrics") {
            return true;
          }
        }
        return false;
      },
      30s))
      << server.Api("targets").dump(2);

  launch.Signal(SIGINT);
  const auto code = launch.Wait(120s);
  ASSERT_TRUE(code.has_value()) << launch.Log();
  ASSERT_EQ(*code, 0) << launch.Log();

  // What Prometheus saw agrees with what the run directory reports.
  const Json summary = Json::parse(ReadText(run / "summary.json"));
  std::set<double> logged_updates, logged_steps = {0};
  std::ifstream scalars(run / "scalars.jsonl");
  for (std::string line; std::getline(scalars, line);) {
    const Json j = Json::parse(line);
    logged_steps.insert(j["step"].get<double>());
    if (j["tag"] == "learner/updates") logged_updates.insert(j["value"].get<double>());
  }
  logged_updates.insert(0);  // before the launcher's first tick
  // The launcher serves the figures of its last tick, the ones it wrote to
  // scalars.jsonl: every value Prometheus scraped is one of them.
  for (const auto& [metric, logged] : std::vector<std::pair<std::string, const std::set<double>*>>{
           {"rlswarm_learner_updates_total", &logged_updates},
           {"rlswarm_env_steps_total", &logged_steps}}) {
    const Json range = server.Query(metric + "{role=\"launcher\"}[10m]");
    ASSERT_EQ(range.size(), 1u) << metric << range.dump();
    ASSERT_GE(range[0]["values"].size(), 3u) << metric;
    for (const Json& v : range[0]["values"]) {
      EXPECT_EQ(logged->count(std::stod(v[1].get<std::string>())), 1u) << metric << " " << v;
    }
  }
  // Counters only grow to what the run reports at its end: the actor's
  // episodes (both incarnations) are lines of its episode file, a rank's
  // updates at most the run's.
  const Json rank0 =
      server.Query("max_over_time(rlswarm_learner_rank_updates_total{rank=\"0\"}[10m])");
  ASSERT_EQ(rank0.size(), 1u) << rank0.dump();
  const double updates = Value(rank0[0]);
  EXPECT_GT(updates, 0);
  EXPECT_LE(updates, summary["updates"].get<double>());
  std::size_t episode_lines = 0;
  std::ifstream episodes(run / "episodes" / "actor-0.jsonl");
  for (std::string line; std::getline(episodes, line);) ++episode_lines;
  const Json episodes_seen = server.Query("max_over_time(rlswarm_actor_episodes_total[10m])");
  ASSERT_FALSE(episodes_seen.empty());
  for (const Json& s : episodes_seen) {
    EXPECT_GT(Value(s), 0);
    EXPECT_LE(Value(s), static_cast<double>(episode_lines));
  }
  EXPECT_GE(summary["restarts"].get<int>(), 1);
}

}  // namespace
}  // namespace rlswarm
