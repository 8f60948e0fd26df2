// replay_feed_bench: can one replay shard keep a (GPU) learner rank fed?
//
//   replay_feed_bench [--json] [--seconds S] [--reps R] [--envs cartpole,minatar]
//                     [--batch B] [--items N] [--train-ms T] [--sampler-gap-ms G]
//                     [--cases sampler,sampler_2_shards,learner,gpu_speed_consumer]
//                     [--log-level L]
//
// Transitions: the real signature (replay/service/transition.h) of the env's
// spec, as `rlswarm` builds it: CartPole-v1 (observation float32 [4], int64
// action: 48 B) and MinAtar/Breakout (observation bool [10, 10, 4]: 816 B).
//
// The shard: one replay::ReplayService (prioritized, alpha 0.6, beta 0.4,
// capacity N, no rate limiter, 2 rpc workers: the `replay` section's
// defaults otherwise) in a child process, this binary re-executed with
// --serve, bound to tcp://127.0.0.1:* and reporting the bound endpoint on a
// pipe. A process of its own, so that the shard does not share the
// learner's threads, allocator or LibTorch settings; this binary rather
// than `rlswarm replay` so that the bench needs no config file or other
// binary and controls the table's options exactly (the same ReplayService
// either way). The parent prefills it with N items through a ReplayWriter
// (random priorities), then measures, per transition and repetition:
//
//   sampler:  ReplaySampler::Sample(B), one call at a time, for S seconds;
//             once alone and once followed by UpdatePriorities of the
//             batch's keys (what the learner sends after every update).
//             --sampler-gap-ms G spins G ms after each batch: the latencies
//             of calls made at a learner's pace, which find the threads of
//             both processes asleep (the rates then say nothing).
//             Baseline: raw ZeroMQ between the same two processes (a DEALER
//             here, a ROUTER thread in the child) moving the same bytes per
//             batch: a 64 B request answered with the sample reply's payload
//             bytes in one zero-copy frame, then, with priority updates, the
//             update's bytes answered with 64 B. memcpy would say nothing
//             about the process hop, which is what a shard costs.
//   sampler_2_shards: the sampler case (no priority updates) against two
//             shard processes at once, each prefilled with N items: the
//             sampler asks both and takes the parts as they arrive.
//   learner:  a real learner::DqnLearner (world 1, CPU, one intra-op thread
//             and the malloc settings of `rlswarm learner`, the configs'
//             default model and no_shard strategy, prefetch on, no
//             publishing) calling Update() for S seconds. wait_fraction =
//             sample_seconds / (sample_seconds + train_seconds) from
//             TakeMetrics(); other_ms_per_update is the rest of the wall
//             time (the priority update round trip, the target update).
//             Baseline: the same learner training on a batch it holds
//             (TrainOn + UpdateTarget, no replay).
//   gpu_speed_consumer: a consumer that spins T ms per update instead of
//             training (a GPU learner's pace: 5 ms at batch 512 is 102k
//             transitions/s). "feed": the next batch sampled and the
//             priorities sent on learner::ReplayFeed's worker thread while
//             it spins, as DqnLearner does; "inline": the next batch sampled
//             on a std::async thread and the priorities sent from the
//             consumer's thread, as DqnLearner did before ReplayFeed.
//             wait_fraction as the learner's; idle_fraction = 1 -
//             spin time / wall time (also counts the priority update);
//             spin_ms_per_update > T when the spinning thread lost its core.
//             Baseline: 1000 / T updates/s.
//   gpu_speed_consumer_with_inserts: "feed" again while actors insert
//             (a ReplayWriter on its own thread, batches of 64) at the rate
//             a run at that pace has: B * 1000 / T / --samples-per-insert
//             items/s (default ratio 8: Ape-X's, 12.8k items/s at batch 512
//             and 5 ms); the shard serves both, as in a run.
//
// Figures are medians over --reps repetitions (the cases interleaved within
// each, so a slow stretch of a shared machine hits them alike). The shard's
// and this process's CPU time per batch come from /proc and getrusage.
//
// JSON: {"results": [{"case", "env", "batch", "transitions_per_sec",
//   "updates_per_sec", "wait_fraction", "sample_p50_ms", "sample_p99_ms",
//   "baseline_...", ...}], "load_avg": {"start", "end"}, ...}.

#include <ATen/Parallel.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bench/rpc_bench.h"
#include "common/errors.h"
#include "common/logging.h"
#include "common/testing/child_process.h"
#include "envs/registry.h"
#include "learner/algorithms/dqn_learner.h"
#include "learner/dist/communicator.h"
#include "models/q_networks.h"
#include "replay/service/protocol.h"
#include "replay/service/replay_sampler.h"
#include "replay/service/replay_service.h"
#include "replay/service/replay_writer.h"
#include "replay/service/transition.h"

namespace {

using namespace rlswarm;
using rlswarm::bench::ReadLine;
using rlswarm::bench::Split;
using rlswarm::bench::WriteLine;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// /proc/loadavg's first three fields: the host's load while we measure
// (a shared 2-vCPU VM; other builds may run).
std::vector<double> LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::vector<double> load(3, 0.0);
  for (double& x : load) f >> x;
  return load;
}

// CPU seconds (user + system, all threads) of this process.
double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// CPU seconds of another process from /proc/<pid>/stat (clock ticks).
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 2));
  std::vector<std::string> fields;
  for (std::string w; in >> w;) fields.push_back(w);
  // utime and stime are fields 14 and 15 of stat(5); fields[0] is field 3.
  if (fields.size() < 13) return 0;
  return static_cast<double>(std::stoll(fields[11]) + std::stoll(fields[12])) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

// ---------------------------------------------------------------- shapes

struct Shape {
  std::string name;      // "cartpole", "minatar"
  std::string env_name;  // the registry's name
  replay::Signature signature;
  models::ModelSpec model;
  std::int64_t num_actions = 0;
};

// The transition signature and the Q-network as `rlswarm` builds them from
// the env's spec (ExperimentConfig::TransitionSignature, ModelSection::ToSpec
// with the `model` section's defaults).
Shape MakeShape(const std::string& name) {
  Shape s;
  s.name = name;
  if (name == "cartpole") {
    s.env_name = "CartPole-v1";
  } else if (name == "minatar") {
    s.env_name = "MinAtar/Breakout";
  } else {
    throw InvalidArgument("replay_feed_bench: unknown env '" + name + "' (cartpole or minatar)");
  }
  const envs::EnvSpec spec = envs::MakeEnv(s.env_name)->spec();
  s.signature = replay::TransitionSignature(spec.observation.dtype, spec.observation.shape,
                                            spec.action.array.dtype, spec.action.array.shape);
  s.num_actions = spec.action.num_actions;
  if (spec.observation.shape.size() == 1) {
    models::MlpOptions o;
    o.input_dim = spec.observation.shape[0];
    o.num_actions = s.num_actions;
    s.model = models::MakeMlpSpec(o);
  } else {
    models::MinAtarOptions o;
    o.grid = spec.observation.shape[0];
    o.in_channels = spec.observation.shape[2];
    o.num_actions = s.num_actions;
    o.channels_last_input = true;
    s.model = models::MakeMinAtarSpec(o);
  }
  return s;
}

// `n` transitions of plausible content for `shape` (observations in the
// env's value range, valid actions, 3-step rewards and discounts), and the
// views to insert them.
class Rows {
 public:
  Rows(const Shape& shape, std::int64_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (const replay::FieldSpec& field : shape.signature.fields) {
      std::vector<std::int64_t> dims = {n};
      dims.insert(dims.end(), field.shape.begin(), field.shape.end());
      shapes_.push_back(dims);
      std::vector<std::byte> bytes(static_cast<std::size_t>(n) * field.ItemBytes());
      const std::size_t count = bytes.size() / DTypeSize(field.dtype);
      for (std::size_t i = 0; i < count; ++i) {
        if (field.dtype == DType::kBool) {
          bytes[i] = std::byte{uniform(rng) < 0.1 ? std::uint8_t{1} : std::uint8_t{0}};
        } else if (field.dtype == DType::kInt64) {
          const auto a =
              static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(shape.num_actions));
          std::memcpy(bytes.data() + 8 * i, &a, 8);
        } else if (field.dtype == DType::kFloat32) {
          float v = normal(rng);
          if (field.name == replay::transition::kReward) v = static_cast<float>(3 * uniform(rng));
          if (field.name == replay::transition::kDiscount) {
            v = uniform(rng) < 0.05 ? 0.0f : 0.970299f;  // 0.99^3, or the episode ended
          }
          std::memcpy(bytes.data() + 4 * i, &v, 4);
        } else {
          throw InvalidArgument("replay_feed_bench: no filler for field " + field.name);
        }
      }
      data_.push_back(std::move(bytes));
    }
    for (std::int64_t i = 0; i < n; ++i) priorities_.push_back(0.05 + 2 * uniform(rng));
    for (std::size_t f = 0; f < shape.signature.fields.size(); ++f) {
      const replay::FieldSpec& field = shape.signature.fields[f];
      batch_.fields.push_back({field.name, field.dtype, shapes_[f], data_[f]});
    }
    batch_.priorities = priorities_;
  }
  const replay::InsertBatch& batch() const { return batch_; }

 private:
  std::vector<std::vector<std::int64_t>> shapes_;
  std::vector<std::vector<std::byte>> data_;
  std::vector<double> priorities_;
  replay::InsertBatch batch_;
};

// ------------------------------------------------- the shard's process

void NoFree(void*, void*) {}

// The raw baseline's server: a ROUTER answering each request with as many
// bytes as the request's first 8 bytes ask for, in one zero-copy frame.
class RawServer {
 public:
  explicit RawServer(std::size_t max_reply_bytes)
      : reply_(max_reply_bytes, std::byte{7}), router_(context_, zmq::socket_type::router) {
    bench::ConfigureRawSocket(router_);
    router_.bind("tcp://127.0.0.1:*");
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Loop(); });
  }
  ~RawServer() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  void Loop() {
    while (!stop_) {
      std::vector<zmq::message_t> msg;
      if (!zmq::recv_multipart(router_, std::back_inserter(msg))) continue;  // timeout
      if (msg.size() != 2 || msg[1].size() < 8) continue;
      std::uint64_t n = 0;
      std::memcpy(&n, msg[1].data(), 8);
      n = std::min<std::uint64_t>(n, reply_.size());
      router_.send(msg[0], zmq::send_flags::sndmore);
      router_.send(zmq::message_t(reply_.data(), n, &NoFree, nullptr), zmq::send_flags::none);
    }
  }

  std::vector<std::byte> reply_;  // never written after construction: shared by every reply
  zmq::context_t context_{1};
  zmq::socket_t router_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The table's own cost, in the shard's process without rpc: Sample(B) and
// UpdatePriorities of B keys on the served table, one after the other, for
// `seconds`. "table <sample p50 ms> <update p50 ms>".
std::string MeasureTable(replay::Table& table, std::int64_t batch, double seconds) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> uniform(0.05, 2.0);
  std::vector<double> sample_ms, update_ms;
  std::vector<double> priorities(static_cast<std::size_t>(batch));
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    const auto t0 = Clock::now();
    replay::SampledBatch b = table.Sample(replay::SampleRequest{batch});
    const auto t1 = Clock::now();
    for (double& p : priorities) p = uniform(rng);
    const auto t2 = Clock::now();
    table.UpdatePriorities(b.keys, priorities);
    const auto t3 = Clock::now();
    sample_ms.push_back(Ms(t1 - t0));
    update_ms.push_back(Ms(t3 - t2));
  }
  return "table " + std::to_string(Percentile(sample_ms, 0.5)) + " " +
         std::to_string(Percentile(update_ms, 0.5));
}

// --serve: one shard for `shape` until stdin closes (the parent is done or
// gone). Commands on stdin, answers on stdout, one line each.
int Serve(const Shape& shape, std::int64_t capacity, std::uint64_t seed,
          std::size_t max_reply_bytes, int shard) {
  replay::ReplayServiceOptions o;
  o.shard = shard;
  o.num_shards = shard + 1;
  o.table.name = "replay-shard-" + std::to_string(shard);
  o.table.signature = shape.signature;
  o.table.capacity = capacity;
  o.table.selector.kind = replay::SelectorKind::kPrioritized;
  o.table.selector.alpha = 0.6;
  o.table.selector.beta = 0.4;
  o.table.rate_limiter = replay::RateLimiterOptions::MinSize(1);
  o.table.seed = seed;
  o.server.endpoint = "tcp://127.0.0.1:*";
  o.server.num_workers = 2;
  o.server.name = "replay-" + std::to_string(shard);
  replay::ReplayService service(o);
  service.Start();
  RawServer raw(max_reply_bytes);
  WriteLine(STDOUT_FILENO, "serving " + service.endpoint() + " " + raw.endpoint());
  while (std::optional<std::string> line = ReadLine(STDIN_FILENO)) {
    const std::vector<std::string> words = Split(*line);
    if (words.size() == 3 && words[0] == "table") {
      WriteLine(STDOUT_FILENO,
                MeasureTable(service.table(), std::stoll(words[1]), std::stod(words[2])));
    } else {
      WriteLine(STDOUT_FILENO, "error unknown command");
    }
  }
  service.Stop();
  return 0;
}

// The parent's handle on the shard's process: this binary with --serve, its
// stdin and stdout the control pipes.
class ShardProcess {
 public:
  ShardProcess(const std::string& env, std::int64_t capacity, std::int64_t batch,
               std::uint64_t seed, int shard = 0)
      : child_({"replay_feed_bench", "--serve", "--envs", env, "--items", std::to_string(capacity),
                "--batch", std::to_string(batch), "--seed", std::to_string(seed), "--shard",
                std::to_string(shard)},
               Options()) {
    const std::optional<std::string> line = child_.ReadLine(kStartDeadline);
    const std::vector<std::string> words = line ? Split(*line) : std::vector<std::string>{};
    if (words.size() != 3 || words[0] != "serving") {
      throw Unavailable("replay_feed_bench: the shard process did not start serving");
    }
    endpoint_ = words[1];
    raw_endpoint_ = words[2];
  }
  ~ShardProcess() {
    child_.CloseStdin();                   // EOF on its stdin: the shard stops and exits
    child_.Wait(std::chrono::seconds(5));  // then child_'s destructor kills it
  }
  ShardProcess(const ShardProcess&) = delete;
  ShardProcess& operator=(const ShardProcess&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  const std::string& raw_endpoint() const { return raw_endpoint_; }
  double CpuSeconds() const { return ProcessCpuSeconds(child_.pid()); }

  // The table's own sample and priority-update p50, ms (see MeasureTable).
  // Waits up to `seconds` + a minute for the answer.
  std::pair<double, double> MeasureTable(std::int64_t batch, double seconds) {
    if (!child_.WriteLine("table " + std::to_string(batch) + " " + std::to_string(seconds))) {
      throw Unavailable("replay_feed_bench: the shard process is gone");
    }
    const auto deadline = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::duration<double>(seconds) + kStartDeadline);
    const std::optional<std::string> line = child_.ReadLine(deadline);
    const std::vector<std::string> words = line ? Split(*line) : std::vector<std::string>{};
    if (words.size() != 3 || words[0] != "table") {
      throw Unavailable("replay_feed_bench: the shard process did not answer 'table'");
    }
    return {std::stod(words[1]), std::stod(words[2])};
  }

 private:
  // A hung shard fails the bench instead of stalling it.
  static constexpr std::chrono::seconds kStartDeadline{60};

  static rlswarm::testing::ChildProcessOptions Options() {
    rlswarm::testing::ChildProcessOptions o;
    o.program = "/proc/self/exe";
    o.out = rlswarm::testing::ChildProcessOptions::Sink::kCapture;
    o.stdin_pipe = true;
    return o;
  }

  rlswarm::testing::ChildProcess child_;
  std::string endpoint_;
  std::string raw_endpoint_;
};

// Fills the shard through a ReplayWriter, as actors do (zero-copy batches
// of 1000 with initial priorities). Returns items/s acknowledged.
double Prefill(const Shape& shape, const std::string& endpoint, std::int64_t items) {
  constexpr std::int64_t kChunk = 1000;
  const auto rows = std::make_shared<const Rows>(shape, kChunk, 11);
  replay::ReplayWriterOptions o;
  o.endpoints = {endpoint};
  o.signature = shape.signature;
  o.max_batch_items = kChunk;
  o.max_block = std::chrono::milliseconds(30000);
  replay::ReplayWriter writer(o);
  const auto start = Clock::now();
  for (std::int64_t done = 0; done < items; done += kChunk) {
    writer.AppendShared(rows->batch(), rows);
  }
  if (!writer.Flush(std::chrono::seconds(120))) {
    throw DeadlineExceeded("replay_feed_bench: prefill not acknowledged within 120 s");
  }
  const double seconds = Seconds(Clock::now() - start);
  const replay::ReplayWriterStats stats = writer.stats();
  if (stats.items_acknowledged < items) {
    throw Internal("replay_feed_bench: the shard acknowledged " +
                   std::to_string(stats.items_acknowledged) + " of " + std::to_string(items) +
                   " prefill items");
  }
  return static_cast<double>(stats.items_acknowledged) / seconds;
}

// Actors inserting while the consumer samples: a ReplayWriter on a thread of
// its own appending batches of kChunk items (an actor's writer_batch) paced
// to `items_per_sec`, the rate a real run inserts at.
class PacedInserter {
 public:
  PacedInserter(const Shape& shape, const std::string& endpoint, double items_per_sec)
      : rows_(std::make_shared<const Rows>(shape, kChunk, 13)), writer_([&] {
          replay::ReplayWriterOptions o;
          o.endpoints = {endpoint};
          o.signature = shape.signature;
          o.max_batch_items = kChunk;
          return o;
        }()) {
    thread_ = std::thread([this, items_per_sec] {
      const auto period = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(static_cast<double>(kChunk) / items_per_sec));
      auto next = Clock::now();
      while (!stop_.load()) {
        writer_.AppendShared(rows_->batch(), rows_);
        next += period;
        std::this_thread::sleep_until(next);
      }
    });
    start_ = Clock::now();
  }
  ~PacedInserter() { Stop(); }
  // Stops appending; the items/s the shard acknowledged while it ran.
  double Stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
      writer_.Flush(std::chrono::seconds(10));
      rate_ =
          static_cast<double>(writer_.stats().items_acknowledged) / Seconds(Clock::now() - start_);
    }
    return rate_;
  }

 private:
  static constexpr std::int64_t kChunk = 64;
  std::shared_ptr<const Rows> rows_;
  replay::ReplayWriter writer_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  Clock::time_point start_;
  double rate_ = 0;
};

// Bytes of one sample reply's payloads and of one priority update's, as the
// protocol encodes them (what the raw baseline moves).
std::pair<std::size_t, std::size_t> WireBytes(const replay::SampledBatch& batch) {
  std::size_t sample = 0, update = 0;
  for (const Payload& p : replay::protocol::EncodeSampleReply(0, {}, batch)) {
    sample += p.bytes().size();
  }
  const std::vector<double> priorities(batch.keys.size(), 1.0);
  for (const Payload& p : replay::protocol::EncodePriorityUpdate(batch.keys, priorities)) {
    update += p.bytes().size();
  }
  return {sample, update};
}

// --------------------------------------------------------------- the cases

struct Context {
  const Shape& shape;
  ShardProcess& shard;
  std::int64_t batch = 512;
  double seconds = 2;
  std::size_t sample_bytes = 0;  // wire payload bytes of one sample reply
  std::size_t update_bytes = 0;  // of one priority update
  double sampler_gap_ms = 0;     // --sampler-gap-ms
  std::mt19937_64 rng{5};

  // Fresh priorities for a batch (values in the range |TD| + epsilon takes).
  std::vector<double> Priorities(std::size_t n) {
    std::uniform_real_distribution<double> uniform(0.05, 2.0);
    std::vector<double> p(n);
    for (double& x : p) x = uniform(rng);
    return p;
  }
};

replay::ReplaySamplerOptions SamplerOptions(const std::string& endpoint, std::uint64_t seed) {
  replay::ReplaySamplerOptions o;
  o.endpoints = {endpoint};
  o.seed = seed;
  return o;
}

void SpinUntil(Clock::time_point until) {
  while (Clock::now() < until) {
  }
}

// Case 1: Sample(B) as fast as one caller can, with or without the
// priority update after each batch. With ctx.sampler_gap_ms > 0 the caller
// spins that long after each batch (a learner's pace: the latencies of calls
// that find both processes' threads asleep; the rates then say nothing).
Json MeasureSampler(Context& ctx, replay::ReplaySampler& sampler, bool priority_updates) {
  for (int i = 0; i < 5; ++i) sampler.Sample(ctx.batch);  // warm: connection, allocator
  std::vector<double> sample_ms, update_ms;
  std::int64_t batches = 0, items = 0;
  const double shard_cpu0 = ctx.shard.CpuSeconds(), cpu0 = SelfCpuSeconds();
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(ctx.seconds);
  auto now = start;
  while (now < end) {
    const replay::SampledBatch b = sampler.Sample(ctx.batch);
    const auto t1 = Clock::now();
    sample_ms.push_back(Ms(t1 - now));
    if (priority_updates) {
      const std::vector<double> p = ctx.Priorities(b.keys.size());
      const auto t2 = Clock::now();
      sampler.UpdatePriorities(b.keys, p);
      now = Clock::now();
      update_ms.push_back(Ms(now - t2));
    } else {
      now = t1;
    }
    ++batches;
    items += b.size();
    if (ctx.sampler_gap_ms > 0) {
      SpinUntil(now + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double, std::milli>(ctx.sampler_gap_ms)));
      now = Clock::now();
    }
  }
  const double elapsed = Seconds(now - start);
  const double n = static_cast<double>(batches);
  Json row = {{"case", "sampler"},
              {"env", ctx.shape.name},
              {"batch", ctx.batch},
              {"priority_updates", priority_updates},
              {"gap_ms", ctx.sampler_gap_ms},
              {"transitions_per_sec", static_cast<double>(items) / elapsed},
              {"updates_per_sec", n / elapsed},
              {"wait_fraction", nullptr},
              {"sample_p50_ms", Percentile(sample_ms, 0.5)},
              {"sample_p99_ms", Percentile(sample_ms, 0.99)},
              {"priority_update_p50_ms", nullptr},
              {"bytes_per_batch", ctx.sample_bytes + (priority_updates ? ctx.update_bytes : 0)},
              {"shard_cpu_ms_per_batch", 1e3 * (ctx.shard.CpuSeconds() - shard_cpu0) / n},
              {"client_cpu_ms_per_batch", 1e3 * (SelfCpuSeconds() - cpu0) / n}};
  if (priority_updates) row["priority_update_p50_ms"] = Percentile(update_ms, 0.5);
  return row;
}

// The sampler case's baseline: raw ZeroMQ moving the same bytes per batch
// between the same processes, one batch at a time.
Json MeasureRaw(Context& ctx, bool priority_updates) {
  zmq::context_t context(1);
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  bench::ConfigureRawSocket(dealer);
  dealer.connect(ctx.shard.raw_endpoint());
  // A request's first 8 bytes: how many bytes the answer should have.
  auto request = [](std::size_t bytes, std::uint64_t answer_bytes) {
    std::vector<std::byte> r(std::max<std::size_t>(bytes, 8));
    std::memcpy(r.data(), &answer_bytes, 8);
    return r;
  };
  const std::vector<std::byte> sample_request = request(64, ctx.sample_bytes);
  const std::vector<std::byte> update_request = request(ctx.update_bytes, 64);
  auto receive = [&] {
    zmq::message_t reply;
    const auto deadline = Clock::now() + bench::kIoTimeout;
    while (!dealer.recv(reply)) {  // ConfigureRawSocket's receive timeout
      if (Clock::now() > deadline) throw DeadlineExceeded("replay_feed_bench: raw reply lost");
    }
  };
  // rpc_bench's closed loop (warm-up calls, then timed) with one call in
  // flight; with priority updates one "call" is the sample and the update.
  const bench::Sample s = bench::RunClosedLoop(
      1, ctx.seconds, [&] { return SelfCpuSeconds() + ctx.shard.CpuSeconds(); },
      [&] { dealer.send(zmq::buffer(sample_request), zmq::send_flags::none); },
      [&] {
        receive();
        if (!priority_updates) return;
        dealer.send(zmq::buffer(update_request), zmq::send_flags::none);
        receive();
      });
  const double n = static_cast<double>(s.done);
  return {{"batches_per_sec", n / s.seconds},
          {"p50_ms", Percentile(s.latencies_us, 0.5) / 1e3},
          {"p99_ms", Percentile(s.latencies_us, 0.99) / 1e3},
          {"cpu_ms_per_batch", 1e3 * s.cpu_seconds / n}};
}

learner::ApeXOptions LoopOptions(const Context& ctx) {
  learner::ApeXOptions o;
  o.batch_size = ctx.batch;
  // The configs' learner settings that change the work per update (both
  // configs/cartpole.yaml and configs/minatar_breakout.yaml): Adam (the
  // default; lr does not change the work), clipping,
  // Polyak target (DqnOptions' default tau), the model as one unpartitioned unit.
  o.model.optimizer.max_grad_norm = 10;
  o.model.sharding.strategy = learner::ShardingStrategy::kNoShard;
  o.model.sharding.layers_per_unit = {static_cast<int>(ctx.shape.model.layers.size())};
  // Publishing is not replay's business and needs subscribers to matter.
  o.publish_interval = 0;
  o.log_interval = std::chrono::milliseconds(0);
  o.sampler = SamplerOptions(ctx.shard.endpoint(), 7);
  o.replay_prefetch = true;
  o.update_priorities = true;
  return o;
}

// Case 2: a real DqnLearner fed by the shard, and its no-replay baseline
// measured just before.
Json MeasureLearner(Context& ctx, learner::DqnLearner& lrn) {
  // Baseline: training on a batch already held (no replay in the loop).
  const replay::SampledBatch held = lrn.sampler().Sample(ctx.batch);
  std::int64_t trained = 0;
  auto start = Clock::now();
  auto end = start + std::chrono::duration<double>(ctx.seconds);
  while (Clock::now() < end) {
    lrn.TrainOn(held);
    lrn.UpdateTarget();
    ++trained;
  }
  const double train_only = static_cast<double>(trained) / Seconds(Clock::now() - start);
  lrn.TakeMetrics();  // starts the measured interval (drops TrainOn's sums)

  std::int64_t updates = 0, failed = 0;
  const double shard_cpu0 = ctx.shard.CpuSeconds(), cpu0 = SelfCpuSeconds();
  start = Clock::now();
  end = start + std::chrono::duration<double>(ctx.seconds);
  auto now = start;
  while (now < end) {
    if (lrn.Update()) {
      ++updates;
    } else {
      ++failed;
    }
    now = Clock::now();
  }
  const double elapsed = Seconds(now - start);
  const learner::LearnerMetrics m = lrn.TakeMetrics();
  if (updates == 0 || failed > 0) {
    throw Unavailable("replay_feed_bench: " + std::to_string(failed) +
                      " learner updates found no batch");
  }
  const double n = static_cast<double>(updates);
  const double per_update = elapsed / n;
  const double ups = n / elapsed;
  return {{"case", "learner"},
          {"env", ctx.shape.name},
          {"batch", ctx.batch},
          {"transitions_per_sec", ups * static_cast<double>(ctx.batch)},
          {"updates_per_sec", ups},
          {"wait_fraction", m.sample_seconds / (m.sample_seconds + m.train_seconds)},
          {"sample_p50_ms", nullptr},
          {"sample_p99_ms", nullptr},
          {"sample_ms_per_update", 1e3 * m.sample_seconds},
          {"train_ms_per_update", 1e3 * m.train_seconds},
          // The priority update round trip, the target update, the prefetch's
          // thread start: the wall time outside sample and train.
          {"other_ms_per_update", 1e3 * (per_update - m.sample_seconds - m.train_seconds)},
          {"shard_cpu_ms_per_batch", 1e3 * (ctx.shard.CpuSeconds() - shard_cpu0) / n},
          {"client_cpu_ms_per_batch", 1e3 * (SelfCpuSeconds() - cpu0) / n},
          {"baseline_train_only_updates_per_sec", train_only},
          {"of_baseline", ups / train_only}};
}

// Case 3: a consumer at a GPU learner's pace (see the file comment).
// `feed` (what DqnLearner does): the next batch is sampled and the
// priorities are sent on learner::ReplayFeed's one worker thread, so the
// consumer's thread only spins. Without it (`inline`, what DqnLearner did
// before), the batch is sampled on a std::async thread started after the
// wait and the priority update goes out from the consumer's thread.
// With insert_rate > 0, actors insert that many items/s throughout (a
// PacedInserter): the shard serves the samples and the inserts together, as
// in a run.
Json MeasureGpuSpeedConsumer(Context& ctx, replay::ReplaySampler& sampler, double train_ms,
                             bool feed_mode, double insert_rate = 0) {
  struct Prefetched {
    replay::SampledBatch batch;
    double sample_ms = 0;
  };
  learner::BatchStager stager(at::kCPU);
  learner::ReplayFeed feed(sampler, stager);
  auto prefetch = [&]() -> std::future<Prefetched> {
    if (feed_mode) {
      // The feed's future, unwrapped (the wait for it is the consumer's
      // wait); its sample time is not seen from here.
      auto staged = std::make_shared<std::future<learner::StagedBatch>>(feed.Prefetch(ctx.batch));
      return std::async(std::launch::deferred, [staged] {
        return Prefetched{staged->get().host, -1};
      });
    }
    return std::async(std::launch::async, [&sampler, batch = ctx.batch] {
      const auto t0 = Clock::now();
      Prefetched p{sampler.Sample(batch), 0};
      p.sample_ms = Ms(Clock::now() - t0);
      return p;
    });
  };
  const auto train = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(train_ms));
  std::optional<PacedInserter> inserter;
  if (insert_rate > 0) inserter.emplace(ctx.shape, ctx.shard.endpoint(), insert_rate);
  std::future<Prefetched> next = prefetch();
  next.wait();  // a warm start, as the learner's first update after others
  std::vector<double> sample_ms, update_ms;
  double wait_s = 0, train_s = 0, update_s = 0;
  std::int64_t updates = 0, items = 0;
  const double shard_cpu0 = ctx.shard.CpuSeconds(), cpu0 = SelfCpuSeconds();
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(ctx.seconds);
  auto now = start;
  while (now < end) {
    Prefetched p = next.get();
    const auto t1 = Clock::now();
    next = prefetch();  // issued after the wait, as DqnLearner::Update does
    SpinUntil(t1 + train);
    const auto t2 = Clock::now();
    items += p.batch.size();
    std::vector<double> priorities = ctx.Priorities(p.batch.keys.size());
    if (feed_mode) {
      feed.SendPriorities(std::move(p.batch.keys), std::move(priorities));
    } else {
      sampler.UpdatePriorities(p.batch.keys, priorities);
    }
    const auto t3 = Clock::now();
    wait_s += Seconds(t1 - now);
    train_s += Seconds(t2 - t1);
    update_s += Seconds(t3 - t2);
    if (p.sample_ms >= 0) sample_ms.push_back(p.sample_ms);
    update_ms.push_back(Ms(t3 - t2));
    ++updates;
    now = t3;
  }
  const double elapsed = Seconds(now - start);
  next.wait();  // the last prefetch and update, not counted
  feed.Drain();
  const double inserted_per_sec = inserter ? inserter->Stop() : 0.0;
  const double n = static_cast<double>(updates);
  return {{"case", insert_rate > 0 ? "gpu_speed_consumer_with_inserts" : "gpu_speed_consumer"},
          {"insert_rate_target", insert_rate},
          {"inserted_per_sec", inserted_per_sec},
          {"env", ctx.shape.name},
          {"batch", ctx.batch},
          {"priority_update_mode", feed_mode ? "feed" : "inline"},
          {"train_ms", train_ms},
          // Above train_ms when the spinning thread lost its core (2 vCPUs
          // shared with the shard, the sampler's threads and other jobs).
          {"spin_ms_per_update", 1e3 * train_s / n},
          {"transitions_per_sec", static_cast<double>(items) / elapsed},
          {"updates_per_sec", n / elapsed},
          {"wait_fraction", wait_s / (wait_s + train_s)},
          {"idle_fraction", 1 - train_s / elapsed},
          // Not seen from here in feed mode (the sample runs inside the feed).
          {"sample_p50_ms", sample_ms.empty() ? Json() : Json(Percentile(sample_ms, 0.5))},
          {"sample_p99_ms", sample_ms.empty() ? Json() : Json(Percentile(sample_ms, 0.99))},
          {"sample_wait_ms_per_update", 1e3 * wait_s / n},
          {"priority_update_ms_per_update", 1e3 * update_s / n},
          {"priority_update_p50_ms", Percentile(update_ms, 0.5)},
          {"shard_cpu_ms_per_batch", 1e3 * (ctx.shard.CpuSeconds() - shard_cpu0) / n},
          {"client_cpu_ms_per_batch", 1e3 * (SelfCpuSeconds() - cpu0) / n},
          {"baseline_updates_per_sec", 1e3 / train_ms},
          {"of_baseline", n / elapsed / (1e3 / train_ms)}};
}

// The median over repetitions of every number in `reps` (rows with the same
// keys); other values from the first.
Json MedianRow(const std::vector<Json>& reps) {
  Json out = reps.front();
  for (auto& [key, value] : out.items()) {
    if (!value.is_number_float()) continue;  // batch sizes, byte counts: the same in every rep
    std::vector<double> v;
    for (const Json& r : reps) v.push_back(r[key].get<double>());
    std::sort(v.begin(), v.end());
    value = v[v.size() / 2];
  }
  return out;
}

struct Config {
  std::int64_t batch = 512;
  std::int64_t items = 100000;
  double seconds = 2.0;
  int reps = 3;
  double train_ms = 5.0;
  double sampler_gap_ms = 0;
  double samples_per_insert = 8;  // the replay ratio the concurrent inserts stand for
  std::vector<std::string> cases;
};

bool Wanted(const std::vector<std::string>& cases, const std::string& c) {
  return std::find(cases.begin(), cases.end(), c) != cases.end();
}

// Every case for one transition shape, --reps times, interleaved.
std::vector<Json> RunShape(const Shape& shape, const Config& cfg) {
  const std::int64_t batch = cfg.batch;
  const std::vector<std::string>& cases = cfg.cases;
  ShardProcess shard(shape.name, cfg.items, batch, 1);
  const double insert_rate = Prefill(shape, shard.endpoint(), cfg.items);
  Context ctx{shape, shard, batch, cfg.seconds};
  ctx.sampler_gap_ms = cfg.sampler_gap_ms;
  replay::ReplaySampler sampler(SamplerOptions(shard.endpoint(), 3));
  std::tie(ctx.sample_bytes, ctx.update_bytes) = WireBytes(sampler.Sample(batch));
  // A second shard for sampler_2_shards: the sampler then asks both at once
  // and takes their parts as they arrive, as a sharded service's learner does.
  std::unique_ptr<ShardProcess> second;
  std::unique_ptr<replay::ReplaySampler> two_shard_sampler;
  if (Wanted(cases, "sampler_2_shards")) {
    second = std::make_unique<ShardProcess>(shape.name, cfg.items, batch, 2, /*shard=*/1);
    Prefill(shape, second->endpoint(), cfg.items);
    replay::ReplaySamplerOptions o = SamplerOptions(shard.endpoint(), 4);
    o.endpoints.push_back(second->endpoint());
    two_shard_sampler = std::make_unique<replay::ReplaySampler>(o);
  }
  std::unique_ptr<learner::DqnLearner> lrn;
  if (Wanted(cases, "learner")) {
    lrn =
        std::make_unique<learner::DqnLearner>(shape.model, LoopOptions(ctx), learner::DqnOptions{},
                                              std::make_shared<learner::Communicator>());
    for (int i = 0; i < 20; ++i) lrn->Update();  // warm: allocator, connection, prefetch
  }
  std::vector<std::vector<Json>> per_row;  // [row][rep]
  for (int r = 0; r < cfg.reps; ++r) {
    std::vector<Json> rows;
    if (Wanted(cases, "sampler")) {
      const auto [table_sample_ms, table_update_ms] = shard.MeasureTable(batch, cfg.seconds / 4);
      for (const bool updates : {false, true}) {
        Json row = MeasureSampler(ctx, sampler, updates);
        const Json raw = MeasureRaw(ctx, updates);
        row["baseline_raw_zmq_updates_per_sec"] = raw["batches_per_sec"];
        row["baseline_raw_zmq_transitions_per_sec"] =
            raw["batches_per_sec"].get<double>() * static_cast<double>(batch);
        row["baseline_raw_zmq_p50_ms"] = raw["p50_ms"];
        row["baseline_raw_zmq_p99_ms"] = raw["p99_ms"];
        row["baseline_raw_zmq_cpu_ms_per_batch"] = raw["cpu_ms_per_batch"];
        row["of_baseline"] =
            row["updates_per_sec"].get<double>() / raw["batches_per_sec"].get<double>();
        row["table_sample_p50_ms"] = table_sample_ms;
        row["table_update_p50_ms"] = table_update_ms;
        row["prefill_items_per_sec"] = insert_rate;
        rows.push_back(row);
      }
    }
    if (two_shard_sampler) {
      Json row = MeasureSampler(ctx, *two_shard_sampler, /*priority_updates=*/false);
      row["case"] = "sampler_2_shards";
      rows.push_back(row);
    }
    if (lrn) rows.push_back(MeasureLearner(ctx, *lrn));
    if (Wanted(cases, "gpu_speed_consumer")) {
      for (const bool feed_mode : {false, true}) {
        rows.push_back(MeasureGpuSpeedConsumer(ctx, sampler, cfg.train_ms, feed_mode));
      }
      // The same feed while actors insert at the rate a run at this pace
      // has: batch * (1000 / train_ms) sampled per second over the ratio.
      const double run_insert_rate =
          static_cast<double>(batch) * 1e3 / cfg.train_ms / cfg.samples_per_insert;
      rows.push_back(MeasureGpuSpeedConsumer(ctx, sampler, cfg.train_ms, true, run_insert_rate));
    }
    per_row.resize(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) per_row[i].push_back(rows[i]);
  }
  std::vector<Json> out;
  for (const auto& r : per_row) out.push_back(MedianRow(r));
  return out;
}

std::string Figure(const Json& v, const char* format, double scale = 1) {
  if (!v.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, scale * v.get<double>());
  return buf;
}

void PrintTable(const Json& results, const Json& load_start, const Json& load_end) {
  std::printf("load average at start %s, at end %s\n", load_start.dump().c_str(),
              load_end.dump().c_str());
  std::printf("%-19s %-8s %5s %-6s %13s %9s %7s %7s %8s %8s %11s %7s\n", "case", "env", "batch",
              "prio", "transitions/s", "updates/s", "wait", "idle", "p50 ms", "p99 ms",
              "baseline/s", "of base");
  for (const Json& r : results) {
    std::string prio = "yes";
    if (r.contains("priority_updates")) prio = r["priority_updates"].get<bool>() ? "yes" : "no";
    if (r.contains("priority_update_mode")) prio = r["priority_update_mode"].get<std::string>();
    Json base = r.value("baseline_raw_zmq_updates_per_sec", Json());
    if (base.is_null()) base = r.value("baseline_train_only_updates_per_sec", Json());
    if (base.is_null()) base = r.value("baseline_updates_per_sec", Json());
    std::printf(
        "%-19s %-8s %5ld %-6s %13s %9s %7s %7s %8s %8s %11s %7s\n",
        r["case"].get<std::string>().c_str(), r["env"].get<std::string>().c_str(),
        r["batch"].get<long>(), prio.c_str(), Figure(r["transitions_per_sec"], "%.0f").c_str(),
        Figure(r["updates_per_sec"], "%.1f").c_str(),
        Figure(r["wait_fraction"], "%.1f%%", 100).c_str(),
        Figure(r.value("idle_fraction", Json()), "%.1f%%", 100).c_str(),
        Figure(r["sample_p50_ms"], "%.3f").c_str(), Figure(r["sample_p99_ms"], "%.3f").c_str(),
        Figure(base, "%.1f").c_str(), Figure(r["of_baseline"], "%.0f%%", 100).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"replay_feed_bench: can one replay shard keep a learner rank fed?"};
  bool json = false, serve = false;
  Config cfg;
  std::uint64_t seed = 1;
  std::string envs_list = "cartpole,minatar";
  std::string cases_list = "sampler,learner,gpu_speed_consumer";
  std::string log_level = "warn";
  app.add_flag("--json", json, "Print one JSON object");
  app.add_option("--seconds", cfg.seconds, "Seconds per measurement")->check(CLI::PositiveNumber);
  app.add_option("--reps", cfg.reps, "Repetitions (medians reported)")->check(CLI::PositiveNumber);
  app.add_option("--envs", envs_list, "cartpole,minatar");
  app.add_option("--batch", cfg.batch, "Items per sample (the learner rank's batch)")
      ->check(CLI::Range(std::int64_t{1}, replay::kMaxSampleBatch));
  app.add_option("--items", cfg.items, "Items the shard is prefilled with (and its capacity)")
      ->check(CLI::PositiveNumber);
  app.add_option("--train-ms", cfg.train_ms, "gpu_speed_consumer: milliseconds per update")
      ->check(CLI::PositiveNumber);
  app.add_option("--sampler-gap-ms", cfg.sampler_gap_ms,
                 "sampler: spin this long after each batch (latencies at a learner's pace)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--samples-per-insert", cfg.samples_per_insert,
                 "gpu_speed_consumer_with_inserts: the run's replay ratio, which sets the "
                 "insert rate (the consumer's sample rate over it)")
      ->check(CLI::PositiveNumber);
  app.add_option("--cases", cases_list, "sampler,sampler_2_shards,learner,gpu_speed_consumer");
  app.add_option("--log-level", log_level, "spdlog level (stderr)");
  app.add_flag("--serve", serve, "Internal: serve one shard (stdin closes: exit)");
  app.add_option("--seed", seed, "Internal: the served table's seed");
  int shard = 0;
  app.add_option("--shard", shard, "Internal: the served shard's index");
  CLI11_PARSE(app, argc, argv);

  try {
    InitLogging(serve ? "replay-feed-shard" : "replay-feed-bench", ParseLogLevel(log_level));
    if (serve) {
      const Shape shape = MakeShape(envs_list);
      // Room for a sample reply and its metadata in the raw server's buffer.
      const std::size_t max_reply =
          static_cast<std::size_t>(cfg.batch) * (shape.signature.ItemBytes() + 256) + (1 << 16);
      return Serve(shape, cfg.items, seed, max_reply, shard);
    }
    // The learner process's settings (apps/learner_command.cc): freed batch
    // and gradient buffers stay in the heap, one intra-op thread.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    at::set_num_threads(1);

    cfg.cases = SplitCommas(cases_list);
    const Json load_start = LoadAvg();
    Json results = Json::array();
    for (const std::string& env : SplitCommas(envs_list)) {
      const Shape shape = MakeShape(env);
      for (Json& row : RunShape(shape, cfg)) {
        results.push_back(std::move(row));
      }
    }
    const Json load_end = LoadAvg();
    if (json) {
      const Json out = {{"results", results},
                        {"load_avg", {{"start", load_start}, {"end", load_end}}},
                        {"seconds", cfg.seconds},
                        {"reps", cfg.reps},
                        {"items", cfg.items},
                        {"train_ms", cfg.train_ms},
                        {"sampler_gap_ms", cfg.sampler_gap_ms},
                        {"shard", "separate process (replay_feed_bench --serve)"},
                        {"goal", {{"transitions_per_sec", 100000}, {"wait_fraction", 0.05}}}};
      std::printf("%s\n", out.dump(1).c_str());
    } else {
      PrintTable(results, load_start, load_end);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replay_feed_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
