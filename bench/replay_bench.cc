// replay_bench: one replay shard served over tcp loopback, against raw
// ZeroMQ moving the same bytes in the same run.
//
//   replay_bench [--json] [--seconds S] [--writers W] [--batch B]
//
// Transitions: "cartpole" (observation float32[4], int64 action, reward,
// discount, next_observation: 48 B) and "minatar" (Seaquest's bool[10,10,10]
// observations: 2016 B).
//   insert: W writer threads, each with its own ReplayWriter (batches of B,
//           4 in flight), for S seconds; throughput = items acknowledged by
//           the shard / time. Two writer paths, one row each:
//           "shared_batches": whole batches handed over without a copy
//           (ReplayWriter::AppendShared), as raw ZeroMQ sends its frames;
//           "appended_rows": rows copied into the writer's staging batch
//           (ReplayWriter::Append, the actor's path).
//   sample: one ReplaySampler drawing batches of B from a full table, one
//           call at a time; p50/p99 are per call.
//   raw:    ZeroMQ DEALER -> ROUTER with the same message bytes (the insert
//           batch, or a sample request answered by a batch-sized reply), the
//           same number of clients and calls in flight, and an empty reply.
// The shard, the clients and the raw baseline share this process and its
// cores (2 on the reference machine): the figures include that contention.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/logging.h"
#include "replay/service/replay_sampler.h"
#include "replay/service/replay_service.h"
#include "replay/service/replay_writer.h"
#include "replay/service/transition.h"

namespace {

using namespace rlswarm;
using namespace rlswarm::replay;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

struct Transition {
  std::string name;
  Signature signature;
};

// B rows of zero-filled data for every field, and the views to append them.
class Rows {
 public:
  Rows(const Signature& signature, std::int64_t n) {
    for (const FieldSpec& field : signature.fields) {
      std::vector<std::int64_t> shape = {n};
      shape.insert(shape.end(), field.shape.begin(), field.shape.end());
      shapes_.push_back(shape);
      data_.emplace_back(static_cast<std::size_t>(n) * field.ItemBytes(), std::byte{1});
    }
    for (std::size_t f = 0; f < signature.fields.size(); ++f) {
      batch_.fields.push_back(
          {signature.fields[f].name, signature.fields[f].dtype, shapes_[f], data_[f]});
    }
  }
  const InsertBatch& batch() const { return batch_; }

 private:
  std::vector<std::vector<std::int64_t>> shapes_;
  std::vector<std::vector<std::byte>> data_;
  InsertBatch batch_;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

std::unique_ptr<ReplayService> StartShard(const Signature& signature, std::int64_t capacity) {
  ReplayServiceOptions o;
  o.table.signature = signature;
  o.table.capacity = capacity;
  o.table.selector.kind = SelectorKind::kPrioritized;
  o.table.rate_limiter = RateLimiterOptions::MinSize(1);
  o.server.endpoint = "tcp://127.0.0.1:*";
  auto shard = std::make_unique<ReplayService>(o);
  shard->Start();
  return shard;
}

// Items per second the shard acknowledged from `writers` concurrent writers.
double MeasureInserts(const Signature& signature, std::int64_t batch, int writers, double seconds,
                      bool shared_batches) {
  auto shard = StartShard(signature, 1 << 17);
  const auto rows = std::make_shared<const Rows>(signature, batch);
  std::vector<std::unique_ptr<ReplayWriter>> all;
  for (int w = 0; w < writers; ++w) {
    ReplayWriterOptions o;
    o.endpoints = {shard->endpoint()};
    o.signature = signature;
    o.max_batch_items = batch;
    o.max_in_flight = 4;
    o.max_block = std::chrono::milliseconds(10000);
    all.push_back(std::make_unique<ReplayWriter>(o));
  }
  const auto start = Clock::now();
  const auto stop = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      while (Clock::now() < stop) {
        if (shared_batches) {
          all[w]->AppendShared(rows->batch(), rows);
        } else {
          all[w]->Append(rows->batch());
        }
      }
      all[w]->Flush(std::chrono::seconds(30));
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::int64_t acknowledged = 0;
  for (auto& w : all) acknowledged += w->stats().items_acknowledged;
  return static_cast<double>(acknowledged) / elapsed;
}

struct SampleResult {
  double per_sec = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

SampleResult MeasureSamples(const Signature& signature, std::int64_t batch, double seconds) {
  auto shard = StartShard(signature, 100000);
  const Rows rows(signature, 1000);
  for (int i = 0; i < 100; ++i) shard->table().Insert(rows.batch());
  ReplaySamplerOptions o;
  o.endpoints = {shard->endpoint()};
  ReplaySampler sampler(o);
  std::vector<double> latencies;
  const auto start = Clock::now();
  std::int64_t items = 0;
  while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
    const auto t0 = Clock::now();
    items += sampler.Sample(batch).size();
    latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  return {static_cast<double>(items) / elapsed, Percentile(latencies, 0.5),
          Percentile(latencies, 0.99)};
}

// Raw ZeroMQ: `clients` DEALERs, each keeping `in_flight` requests of
// `request_bytes` outstanding; the ROUTER answers each with `reply_bytes`.
// Returns the payload bytes per second moved in the heavy direction and the
// per-call latencies.
std::pair<double, std::vector<double>> MeasureRaw(std::size_t request_bytes,
                                                  std::size_t reply_bytes, int clients,
                                                  int in_flight, double seconds) {
  zmq::context_t context(2);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  std::atomic<bool> stop{false};
  std::thread server([&] {
    const std::string reply(reply_bytes, 'r');
    while (!stop) {
      zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(20)) == 0) continue;
      std::vector<zmq::message_t> msg;
      (void)zmq::recv_multipart(router, std::back_inserter(msg));
      router.send(msg[0], zmq::send_flags::sndmore);
      router.send(zmq::buffer(reply), zmq::send_flags::none);
    }
  });
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<std::int64_t> calls{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      zmq::socket_t dealer(context, zmq::socket_type::dealer);
      dealer.set(zmq::sockopt::linger, 0);
      dealer.connect(endpoint);
      const std::string request(request_bytes, 'q');
      std::vector<Clock::time_point> sent;
      const auto end = start + std::chrono::duration<double>(seconds);
      std::size_t next_reply = 0;
      while (Clock::now() < end || next_reply < sent.size()) {
        while (Clock::now() < end &&
               sent.size() - next_reply < static_cast<std::size_t>(in_flight)) {
          dealer.send(zmq::buffer(request), zmq::send_flags::none);
          sent.push_back(Clock::now());
        }
        zmq::message_t reply;
        (void)dealer.recv(reply);
        latencies[c].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - sent[next_reply++]).count());
        ++calls;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  server.join();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  const double bytes = static_cast<double>(std::max(request_bytes, reply_bytes));
  return {static_cast<double>(calls.load()) * bytes / elapsed, all};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"replay_bench: one replay shard over tcp loopback vs raw ZeroMQ"};
  bool json = false;
  double seconds = 2.0;
  int writers = 4;
  std::int64_t batch = 256;
  app.add_flag("--json", json, "Print one JSON object");
  app.add_option("--seconds", seconds, "Seconds per measurement");
  app.add_option("--writers", writers, "Concurrent writers for inserts");
  app.add_option("--batch", batch, "Items per insert and per sample");
  std::string only_op;
  std::string only_transition;
  bool skip_raw = false;
  app.add_option("--op", only_op, "Only this op (insert or sample)");
  app.add_option("--transition", only_transition, "Only this transition (cartpole or minatar)");
  app.add_flag("--skip-raw", skip_raw, "Skip the raw ZeroMQ baseline (for profiling)");
  std::string only_writer_path;
  app.add_option("--writer-path", only_writer_path,
                 "Only this insert path (shared_batches or appended_rows)");
  CLI11_PARSE(app, argc, argv);
  InitLogging("replay-bench", spdlog::level::warn);

  const std::vector<Transition> transitions = {
      {"cartpole", TransitionSignature(DType::kFloat32, {4}, DType::kInt64, {})},
      {"minatar", TransitionSignature(DType::kBool, {10, 10, 10}, DType::kInt64, {})}};
  Json results = Json::array();
  for (const Transition& t : transitions) {
    if (!only_transition.empty() && only_transition != t.name) continue;
    const double item_bytes = static_cast<double>(t.signature.ItemBytes());
    const std::size_t batch_bytes = static_cast<std::size_t>(batch) * t.signature.ItemBytes();

    if (only_op.empty() || only_op == "insert") {
      const auto [raw_insert_bytes, raw_insert_lat] =
          skip_raw ? std::pair<double, std::vector<double>>{1, {}}
                   : MeasureRaw(batch_bytes, 16, writers, 4, seconds);
      for (const bool shared : {true, false}) {
        const std::string path = shared ? "shared_batches" : "appended_rows";
        if (!only_writer_path.empty() && only_writer_path != path) continue;
        const double inserts = MeasureInserts(t.signature, batch, writers, seconds, shared);
        results.push_back({{"transition", t.name},
                           {"op", "insert"},
                           {"writer_path", path},
                           {"batch", batch},
                           {"writers", writers},
                           {"item_bytes", item_bytes},
                           {"transitions_per_sec", inserts},
                           {"bytes_per_sec", inserts * item_bytes},
                           {"raw_bytes_per_sec", raw_insert_bytes},
                           {"p50_ms", nullptr},
                           {"p99_ms", nullptr}});
      }
    }
    if (!only_op.empty() && only_op != "sample") continue;
    const SampleResult samples = MeasureSamples(t.signature, batch, seconds);
    const auto [raw_sample_bytes, raw_sample_lat] =
        skip_raw ? std::pair<double, std::vector<double>>{1, {}}
                 : MeasureRaw(64, batch_bytes, 1, 1, seconds);
    results.push_back({{"transition", t.name},
                       {"op", "sample"},
                       {"batch", batch},
                       {"item_bytes", item_bytes},
                       {"transitions_per_sec", samples.per_sec},
                       {"bytes_per_sec", samples.per_sec * item_bytes},
                       {"raw_bytes_per_sec", raw_sample_bytes},
                       {"p50_ms", samples.p50_ms},
                       {"p99_ms", samples.p99_ms},
                       {"raw_p50_ms", Percentile(raw_sample_lat, 0.5)},
                       {"raw_p99_ms", Percentile(raw_sample_lat, 0.99)}});
  }
  if (json) {
    std::printf("%s\n", Json{{"results", results}}.dump().c_str());
  } else {
    for (const auto& r : results) {
      std::printf("%-9s %-7s %-14s %10.0f transitions/s  %7.1f MB/s (raw zmq %7.1f MB/s, %3.0f%%)",
                  r["transition"].get<std::string>().c_str(), r["op"].get<std::string>().c_str(),
                  r.value("writer_path", "").c_str(), r["transitions_per_sec"].get<double>(),
                  r["bytes_per_sec"].get<double>() / 1e6,
                  r["raw_bytes_per_sec"].get<double>() / 1e6,
                  100 * r["bytes_per_sec"].get<double>() / r["raw_bytes_per_sec"].get<double>());
      if (!r["p50_ms"].is_null()) {
        std::printf("  p50 %.3f ms  p99 %.3f ms", r["p50_ms"].get<double>(),
                    r["p99_ms"].get<double>());
      }
      std::printf("\n");
    }
  }
  return 0;
}
