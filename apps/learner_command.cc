// `rlswarm learner`: runs one rank of the Ape-X DQN learner until SIGTERM,
// SIGINT or learner.max_updates, then writes a last checkpoint (when
// learner.checkpoint_dir is set) and exits 0. Resumes from the newest valid
// checkpoint in learner.checkpoint_dir at start. Exits 75 (a watchdog alarm,
// learner.watchdog_timeout_s) when a peer rank stops or hangs.

#include <ATen/Parallel.h>
#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "apps/commands.h"
#include "common/logging.h"
#include "config/experiment_config.h"
#include "config/learner_factory.h"
#include "launch/process_control.h"
#include "launch/role_metrics.h"
#include "learner/dist/device_plan.h"
#include "learner/dist/env_rendezvous.h"
#include "learner/dist/memory_peak.h"
#include "learner/dist/torch_adapter.h"
#include "learner/dist/trace_recorder.h"
#include "learner/dist/trace_update.h"
#include "learner/dist/watchdog.h"

namespace rlswarm::apps {
namespace {

struct LearnerArgs {
  std::string config_file;
  int rank = -1;  // -1: from the environment (torchrun, Slurm) or 0
  int world_size = -1;
  std::string master_addr;
  int master_port = -1;
  int local_rank = -1;  // -1: LOCAL_RANK / SLURM_LOCALID, or 0
  std::string weights_endpoint_file;
  std::string trace_file;  // --trace: one update as Chrome trace JSON
  bool nvtx = false;       // --nvtx: every span as an NVTX range (CUDA builds)
  int metrics_port = -1;
  std::string metrics_bind;
  std::string metrics_endpoint_file;
  bool print_config = false;
  std::vector<std::string> overrides;
};

learner::RendezvousOptions RendezvousFrom(const LearnerArgs& args,
                                          const config::ExperimentConfig& config) {
  learner::RendezvousOptions o = learner::RendezvousOptionsFromEnv(
      [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        return value ? std::optional<std::string>(value) : std::nullopt;
      },
      config.learner.ToRendezvousDefaults());
  if (args.rank >= 0) o.rank = args.rank;
  if (args.world_size >= 1) o.world_size = args.world_size;
  if (!args.master_addr.empty()) o.master_addr = args.master_addr;
  if (args.master_port >= 0) o.master_port = static_cast<uint16_t>(args.master_port);
  // torchrun's agent hosts its own TCPStore at MASTER_ADDR:MASTER_PORT and
  // says so. The ranks do not use it (torchrun 2.x speaks a TCPStore
  // protocol LibTorch 1.13's client does not, and it listens on every
  // interface): rank 0 hosts the learner's store on the next port.
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store && std::string(agent_store) == "True" && args.master_port < 0) {
    if (o.master_port == 65535) {
      throw config::ConfigError(
          "MASTER_PORT 65535 under torchrun: the learner's store needs "
          "MASTER_PORT + 1");
    }
    o.master_port = static_cast<uint16_t>(o.master_port + 1);
  }
  o.store_server_security = config.security.ToServerOptions();
  o.store_client_security = config.security.ToClientOptions();
  if (args.local_rank >= 0) o.local_rank = args.local_rank;
  // Gloo listens on the address it is given; without one it would take
  // whatever the hostname resolves to (often every interface's, or none
  // that the peers can reach). The route to the master is the one the
  // group's traffic takes.
  if (o.world_size > 1 && o.gloo_hostname.empty()) {
    o.gloo_hostname = learner::LocalAddressTowards(o.master_addr);
  }
  o.Validate();
  return o;
}

// learner.device / learner.backend for this rank; a refusal is a config
// error (exit 2) that names the key.
learner::DevicePlan PlanThisRank(const config::ExperimentConfig& config,
                                 const learner::RendezvousOptions& rendezvous,
                                 const std::string& file) {
  try {
    return learner::PlanDevice({config.learner.device, config.learner.backend,
                                rendezvous.local_rank, rendezvous.world_size},
                               learner::ThisProcessInventory());
  } catch (const InvalidArgument& e) {
    throw config::ConfigError(file + ": " + e.what());
  }
}

// NCCL reads its settings from the environment when its communicator starts.
void ConfigureNccl(const config::ExperimentConfig& config) {
  // Errors and timeouts of NCCL collectives surface as exceptions in the
  // waiting thread, after NCCL's watchdog aborted the communicator (2 =
  // clean up only), instead of tearing the process down (1): the learner
  // then exits non-zero and the launcher restarts the group.
  setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2", /*overwrite=*/0);
  const std::string& level = config.learner.nccl_debug;
  if (level != "off") {
    std::string upper = level;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    setenv("NCCL_DEBUG", upper.c_str(), /*overwrite=*/1);
  }
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// The watchdog of a multi-rank group (learner/dist/watchdog.h): on an alarm this
// rank exits with kWatchdogExitCode at once, from the watchdog's thread (the
// training thread is blocked in a collective and cannot be unwound), so the
// launcher restarts the group from its last checkpoint instead of waiting out
// the collective timeout. A collective: every rank starts it at the same point.
std::unique_ptr<learner::Watchdog> StartWatchdog(const config::ExperimentConfig& config,
                                                 const learner::RendezvousOptions& rendezvous,
                                                 const learner::ShardMesh& mesh) {
  learner::WatchdogOptions options;
  options.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.learner.watchdog_timeout_s * 1000));
  // Heartbeats go out on the interface this rank already uses for the group.
  options.bind_address = learner::LocalAddressTowards(
      rendezvous.gloo_hostname.empty() ? rendezvous.master_addr : rendezvous.gloo_hostname);
  // hybrid_shard: the shard and replica groups' collectives are named too.
  std::vector<std::shared_ptr<const learner::InFlightCollectives>> subgroups;
  if (mesh.two_dim()) {
    if (mesh.shard && mesh.shard->has_group()) subgroups.push_back(mesh.shard->in_flight());
    subgroups.push_back(mesh.replica->in_flight());
  }
  return std::make_unique<learner::Watchdog>(
      *mesh.world, options,
      [](const learner::WatchdogAlarm& alarm) {
        spdlog::critical(
            "watchdog: {}; exiting with code {} so that the launcher restarts the group from its "
            "last checkpoint",
            alarm.message, learner::kWatchdogExitCode);
        spdlog::default_logger()->flush();
        std::_Exit(learner::kWatchdogExitCode);
      },
      std::move(subgroups));
}

// True when SIGTERM or SIGINT is pending (they are blocked, so nothing else
// consumes them); never blocks.
bool StopRequested(const sigset_t& stop_signals, int* signal_number) {
  timespec zero{0, 0};
  const int s = sigtimedwait(&stop_signals, nullptr, &zero);
  if (s > 0) *signal_number = s;
  return s > 0;
}

// --trace: the update after this many of this run's (warm-up: first
// allocations, replay filled) is traced.
constexpr int64_t kTracedUpdate = 10;

// One update traced on every rank (learner/dist/trace_update.h), rank 0 writing
// the merged trace to `path`. Returns whether the update ran: false when the
// ranks agreed to stop before it could (`stop_requested` is this rank's
// request, polled while replay has no batch).
bool TracedUpdate(learner::Communicator& comm, learner::ApeXLearner& dqn, const std::string& path,
                  const sigset_t& stop_signals, bool& stop_requested, int* signal_number) {
  bool ran = false;
  const std::string trace = learner::TraceOneUpdate(comm, [&] {
    if (!stop_requested) stop_requested = StopRequested(stop_signals, signal_number);
    ran = dqn.Update(stop_requested);
    return ran || dqn.stop_agreed();  // every rank returns the same (the agreement)
  });
  if (ran && comm.rank() == 0) {
    learner::WriteTraceFile(path, trace);
    spdlog::info("trace of update {} (all ranks) in {}", dqn.updates(), path);
  }
  return ran;
}

// This rank's place in the learner group.
struct RankGroup {
  std::shared_ptr<learner::Communicator> comm;  // the world's
  learner::ShardMesh mesh;
  learner::ProcessGroupHandle group;  // the store must outlive the group
};

// Joins the group (a rendezvous that waits for every rank) when the plan
// needs one; a single rank gets a communicator without store or group.
RankGroup JoinGroup(const learner::RendezvousOptions& rendezvous, const learner::DevicePlan& plan,
                    bool hybrid, int shard_group_size) {
  RankGroup g;
  if (!plan.needs_group) {
    g.comm = std::make_shared<learner::Communicator>();  // no store, no group
    g.mesh = learner::ShardMesh::OneDim(g.comm);
    return g;
  }
  g.group = learner::Rendezvous(rendezvous);
  g.comm = g.group.MakeCommunicator();
  learner::CheckDistinctDevices(*g.comm, plan.device, HostName());
  g.mesh = hybrid ? learner::MakeShardMesh(g.group, shard_group_size)
                  : learner::ShardMesh::OneDim(g.comm);
  g.comm = g.mesh.world;
  if (hybrid) {
    spdlog::info("hybrid_shard: {} replicas x shard groups of {} ranks", g.mesh.num_replicas(),
                 shard_group_size);
  }
  return g;
}

// Says where this rank publishes its weights, in the log and (with
// --weights-endpoint-file; rank r > 0 appends ".rank<r>") in a file.
void AnnounceWeights(learner::ApeXLearner& dqn, const LearnerArgs& args, int rank) {
  spdlog::info("weights on {} (snapshot {})", dqn.broadcaster().endpoint(),
               dqn.broadcaster().snapshot_endpoint());
  if (args.weights_endpoint_file.empty()) return;
  std::string path = args.weights_endpoint_file;
  if (rank > 0) path += ".rank" + std::to_string(rank);
  launch::WriteLinesAtomically(
      path, {dqn.broadcaster().endpoint(), dqn.broadcaster().snapshot_endpoint()});
}

// Updates until learner.max_updates or until the ranks agree to stop (a
// signal of `stop_signals` to any rank); keeps `counters` current. Returns
// the signal this rank got, 0 if none.
int TrainUntilStopped(learner::ApeXLearner& dqn, learner::Communicator& comm,
                      const config::ExperimentConfig& config, const LearnerArgs& args,
                      const sigset_t& stop_signals, launch::LearnerRankCounters& counters) {
  const int64_t max_updates = config.learner.max_updates;
  const int64_t check_every = config.learner.stop_check_interval;
  int signal_number = 0;
  // This rank's stop request (a signal), polled every `check_every` updates
  // and on every wait for replay; the ranks agree on it in Update()'s
  // readiness all-reduce, so they all stop after the same update, also when
  // the request comes while they wait for replay.
  bool stop_requested = false;
  bool waiting = false;  // the last Update() found no batch on some rank
  const int64_t traced_update = dqn.updates() + kTracedUpdate;
  while (max_updates == 0 || dqn.updates() < max_updates) {
    if (!stop_requested && (waiting || dqn.updates() % check_every == 0)) {
      stop_requested = StopRequested(stop_signals, &signal_number);
    }
    const bool trace = !args.trace_file.empty() && dqn.updates() + 1 == traced_update;
    const bool ran = trace ? TracedUpdate(comm, dqn, args.trace_file, stop_signals, stop_requested,
                                          &signal_number)
                           : dqn.Update(stop_requested);
    if (!ran) {
      if (dqn.stop_agreed()) break;
      // Replay had no batch in time on some rank (not filled yet, or rate
      // limited); every rank knows it and retries.
      counters.replay_waits.fetch_add(1, std::memory_order_relaxed);
      waiting = true;
      continue;
    }
    waiting = false;
    counters.updates.store(dqn.updates(), std::memory_order_relaxed);
    const learner::StepHealth& health = dqn.algorithm().main_model().health();
    if (!health.skipped) counters.grad_norm.store(health.grad_norm, std::memory_order_relaxed);
    counters.update_to_weight.store(health.update_to_weight, std::memory_order_relaxed);
    counters.nonfinite_skipped.store(health.skipped_steps, std::memory_order_relaxed);
  }
  return signal_number;
}

// The run's last figures: why it stopped, the last interval's metrics and
// the measured memory peak.
void LogFinish(learner::ApeXLearner& dqn, int signal_number, learner::PeakMemoryMeter& memory,
               const learner::DevicePlan& plan) {
  if (signal_number != 0) {
    spdlog::info("{}: stopping at update {}", signal_number == SIGTERM ? "SIGTERM" : "SIGINT",
                 dqn.updates());
  } else if (dqn.stop_agreed()) {
    spdlog::info("stopping at update {}: another rank was asked to stop", dqn.updates());
  }
  const learner::LearnerMetrics m = dqn.TakeMetrics();
  spdlog::info(
      "{} updates; last interval {:.1f} updates/s, loss {:.4g}, mean |td| {:.4g}, grad norm "
      "{:.3g}, update/weight {:.2g}; {} skipped (non-finite gradient)",
      m.updates, m.updates_per_sec, m.loss, m.mean_abs_td, m.grad_norm, m.update_to_weight,
      m.nonfinite_skipped);
  spdlog::info("measured peak {} bytes above the {} bytes in use before the model was built ({})",
               memory.PeakBytesAboveBaseline(), memory.baseline_bytes(),
               plan.device.is_cuda() ? "CUDA caching allocator"
               : memory.ResetsHighWaterMark()
                   ? "resident high-water mark"
                   : "resident high-water mark since the process started: clear_refs unavailable");
}

void RunLearner(const LearnerArgs& args) {
  std::vector<std::string> overrides;
  if (!args.metrics_bind.empty()) overrides.push_back("launch.metrics_bind=" + args.metrics_bind);
  overrides.insert(overrides.end(), args.overrides.begin(), args.overrides.end());
  config::ExperimentConfig config = config::ExperimentConfig::Load(args.config_file, overrides);
  config.learner.CheckCheckpoints(args.config_file);
  if (args.print_config) {
    std::cout << config.ToYaml();
    return;
  }
  // Blocked before any thread starts (every thread inherits the mask), so
  // the signals stay pending until the training loop polls them.
  sigset_t stop_signals = launch::BlockStopSignals();

  // Keep freed gathered parameters, gradients and batch buffers in the heap
  // instead of giving them back to the OS and faulting them in again every
  // update (learner/README.md, "Process settings"; as bench/learner_bench.cc).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // The models are small: one intra-op thread per rank, ranks share cores.
  at::set_num_threads(1);

  learner::RendezvousOptions rendezvous = RendezvousFrom(args, config);
  InitLogging("learner-" + std::to_string(rendezvous.rank), ParseLogLevel(config.log.level));
  // Serving before the rendezvous: a rank that waits for its peers is up
  // (and says so: no updates yet) rather than missing.
  launch::LearnerRankCounters counters;
  const std::unique_ptr<observe::MetricsHttpServer> metrics = launch::StartRoleMetricsEndpoint(
      {config.launch.metrics_bind, args.metrics_port, args.metrics_endpoint_file},
      [&counters, labels = launch::RoleLabels("learner", "rank", rendezvous.rank)] {
        return launch::LearnerRankMetrics(counters, labels);
      });
  const learner::DevicePlan plan = PlanThisRank(config, rendezvous, args.config_file);
  if (!plan.fallback.empty()) spdlog::warn("{}", plan.fallback);
  // Every later CUDA call of this thread that names no device (the caching
  // allocator's raw allocations, pinned memory, NCCL's setup) goes to this
  // rank's GPU, not to cuda:0.
  learner::SetThreadDevice(plan.device);
  if (args.nvtx) {
    if (!learner::BuiltWithCuda()) {
      spdlog::warn("--nvtx: {} has no CUDA, so no NVTX ranges", learner::TorchBuildDescription());
    }
    learner::TraceRecorder::SetNvtxRanges(true);
  }
  rendezvous.backend = plan.backend;
  if (plan.backend == learner::Backend::kNccl) ConfigureNccl(config);
  spdlog::info("{}; device {}, backend {}", learner::TorchBuildDescription(), plan.device.str(),
               plan.needs_group ? learner::BackendName(plan.backend) : "none (one rank)");

  // hybrid_shard's shard groups, checked before any rank waits for another.
  const bool hybrid = config.learner.strategy == "hybrid_shard";
  const int shard_group_size =
      hybrid ? config.learner.ShardGroupSize(rendezvous.world_size, rendezvous.local_world_size,
                                             args.config_file)
             : rendezvous.world_size;
  RankGroup rank_group = JoinGroup(rendezvous, plan, hybrid, shard_group_size);
  const std::shared_ptr<learner::Communicator>& comm = rank_group.comm;
  const learner::ShardMesh& mesh = rank_group.mesh;
  const learner::ProcessGroupHandle& group = rank_group.group;
  // Before the learner's first collective (resuming, publishing), destroyed
  // after the learner's last: every collective of the run is watched.
  std::unique_ptr<learner::Watchdog> watchdog;
  if (plan.needs_group && rendezvous.world_size > 1 && config.learner.watchdog_timeout_s > 0) {
    watchdog = StartWatchdog(config, rendezvous, mesh);
  }
  learner::ApeXOptions options = config.learner.ToApeXOptions(
      config.replay.ToSamplerOptions(config.security.ToClientOptions()),
      config.security.ToServerOptions());
  options.update_priorities = config.replay.selector == "prioritized";
  options.model.device = plan.device;
  options.model.sharding.mixed_precision = config.learner.MixedPrecision(comm->can_sum_bfloat16());
  // The rank's real peak from here (before the model is built) to the end,
  // beside the computed one (learner/dist/memory_peak.h).
  learner::PeakMemoryMeter memory(plan.device);
  const std::unique_ptr<learner::ApeXLearner> learner_of_rank =
      config::MakeLearner(config, options, mesh, group.store);
  learner::ApeXLearner& dqn = *learner_of_rank;
  if (auto dir = dqn.Resume()) spdlog::info("resumed from {} at update {}", *dir, dqn.updates());
  counters.updates = dqn.updates();

  if (options.publish_interval > 0 && dqn.broadcaster().publishes()) {
    AnnounceWeights(dqn, args, rendezvous.rank);
  }

  const int signal_number = TrainUntilStopped(dqn, *comm, config, args, stop_signals, counters);
  LogFinish(dqn, signal_number, memory, plan);
  // The final weights reach the actors and the launcher's evaluator too.
  if (options.publish_interval > 0) dqn.Publish();
  if (!options.checkpoint_dir.empty()) {
    spdlog::info("checkpoint {}", dqn.SaveCheckpoint());
  }
}

}  // namespace

void AddLearnerCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("learner", "Run one rank of the Ape-X DQN learner");
  auto args = std::make_shared<LearnerArgs>();
  cmd->add_option("--config", args->config_file, "Experiment config (YAML)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--rank", args->rank, "This rank (default: RANK / SLURM_PROCID, or 0)");
  cmd->add_option("--world-size", args->world_size,
                  "Number of ranks (default: WORLD_SIZE / SLURM_NTASKS, or 1)");
  cmd->add_option("--master-addr", args->master_addr,
                  "Rendezvous address (default: MASTER_ADDR, or learner.master_addr)");
  cmd->add_option("--master-port", args->master_port,
                  "Rendezvous port (default: MASTER_PORT, or learner.master_port)");
  cmd->add_option("--local-rank", args->local_rank,
                  "This rank's index on its node: it computes on cuda:<local rank> (default: "
                  "LOCAL_RANK / SLURM_LOCALID, or 0)");
  cmd->add_option("--weights-endpoint-file", args->weights_endpoint_file,
                  "Write the weights PUB and snapshot endpoints (two lines) to this file "
                  "(parts mode: rank r > 0 writes FILE.rank<r>)");
  cmd->add_option("--trace", args->trace_file,
                  "Trace the 10th update of this run as Chrome trace JSON (Perfetto, "
                  "chrome://tracing): every rank records, rank 0 writes all ranks to this file");
  cmd->add_flag("--nvtx", args->nvtx,
                "Mark every unit's forward and backward, the optimizer step and every "
                "collective as NVTX ranges for Nsight Systems (CUDA builds; costs hooks and "
                "names on every update)");
  AddMetricsEndpointOptions(cmd, args.get());
  cmd->add_flag("--print-config", args->print_config, "Print the resolved config and exit");
  cmd->add_option("overrides", args->overrides, "Config overrides: section.key=value ...");
  cmd->callback([args] { RunLearner(*args); });
}

}  // namespace rlswarm::apps
