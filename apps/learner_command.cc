// `rlswarm learner`: runs one rank of the Ape-X DQN learner until SIGTERM,
// SIGINT or learner.max_updates, then writes a last checkpoint (when
// learner.checkpoint_dir is set) and exits 0. Resumes from the newest valid
// checkpoint in learner.checkpoint_dir at start.

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
#include "apps/experiment_config.h"
#include "apps/process_control.h"
#include "common/logging.h"
#include "learner/device_plan.h"
#include "learner/dqn_learner.h"
#include "learner/env_rendezvous.h"

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
  bool print_config = false;
  std::vector<std::string> overrides;
};

learner::RendezvousOptions RendezvousFrom(const LearnerArgs& args, const ExperimentConfig& config) {
  learner::RendezvousOptions o = learner::RendezvousOptionsFromEnv(
      [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        return value ? std::optional<std::string>(value) : std::nullopt;
      },
      config.learner.ToRendezvousDefaults());
  // torchrun's agent already hosts the TCPStore at MASTER_ADDR:MASTER_PORT
  // and says so; rank 0 then connects like the others.
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store && std::string(agent_store) == "True") o.host_store = false;
  if (args.rank >= 0) o.rank = args.rank;
  if (args.world_size >= 1) o.world_size = args.world_size;
  if (!args.master_addr.empty()) o.master_addr = args.master_addr;
  if (args.master_port >= 0) o.master_port = static_cast<uint16_t>(args.master_port);
  if (args.local_rank >= 0) o.local_rank = args.local_rank;
  o.Validate();
  return o;
}

// learner.device / learner.backend for this rank; a refusal is a config
// error (exit 2) that names the key.
learner::DevicePlan PlanThisRank(const ExperimentConfig& config,
                                 const learner::RendezvousOptions& rendezvous,
                                 const std::string& file) {
  try {
    return learner::PlanDevice({config.learner.device, config.learner.backend,
                                rendezvous.local_rank, rendezvous.world_size},
                               learner::ThisProcessInventory());
  } catch (const InvalidArgument& e) {
    throw ConfigError(file + ": " + e.what());
  }
}

// NCCL reads its settings from the environment when its communicator starts.
void ConfigureNccl(const ExperimentConfig& config) {
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

// True when SIGTERM or SIGINT is pending (they are blocked, so nothing else
// consumes them); never blocks.
bool StopRequested(const sigset_t& stop_signals, int* signal_number) {
  timespec zero{0, 0};
  const int s = sigtimedwait(&stop_signals, nullptr, &zero);
  if (s > 0) *signal_number = s;
  return s > 0;
}

void RunLearner(const LearnerArgs& args) {
  ExperimentConfig config = ExperimentConfig::Load(args.config_file, args.overrides);
  config.learner.CheckCheckpoints(args.config_file);
  if (args.print_config) {
    std::cout << config.ToYaml();
    return;
  }
  // Blocked before any thread starts (every thread inherits the mask), so
  // the signals stay pending until the training loop polls them.
  sigset_t stop_signals = BlockStopSignals();

  // Keep freed gathered parameters, gradients and batch buffers in the heap
  // instead of giving them back to the OS and faulting them in again every
  // update (learner/README.md, "Process settings"; as bench/learner_bench.cc).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // The models are small: one intra-op thread per rank, ranks share cores.
  at::set_num_threads(1);

  learner::RendezvousOptions rendezvous = RendezvousFrom(args, config);
  InitLogging("learner-" + std::to_string(rendezvous.rank), ParseLogLevel(config.log.level));
  const learner::DevicePlan plan = PlanThisRank(config, rendezvous, args.config_file);
  rendezvous.backend = plan.backend;
  if (plan.backend == learner::Backend::kNccl) ConfigureNccl(config);
  spdlog::info("{}; device {}, backend {}", learner::TorchBuildDescription(), plan.device.str(),
               plan.needs_group ? learner::BackendName(plan.backend) : "none (one rank)");

  std::shared_ptr<learner::Communicator> comm;
  learner::ProcessGroupHandle group;  // the store must outlive the group
  if (!plan.needs_group) {
    comm = std::make_shared<learner::Communicator>();  // no store, no group
  } else {
    group = learner::Rendezvous(rendezvous);
    comm = group.MakeCommunicator();
    learner::CheckDistinctDevices(*comm, plan.device, HostName());
  }
  learner::DqnLearnerOptions options = config.learner.ToLearnerOptions(
      config.replay.ToSamplerOptions(config.security.ToClientOptions()),
      config.security.ToServerOptions());
  options.update_priorities = config.replay.selector == "prioritized";
  options.model.device = plan.device;
  options.model.sharding.mixed_precision = config.learner.MixedPrecision(comm->can_sum_bfloat16());
  learner::DqnLearner dqn(config.ModelSpec(), options, comm);
  if (auto dir = dqn.Resume()) spdlog::info("resumed from {} at update {}", *dir, dqn.updates());

  if (options.publish_interval > 0 && dqn.broadcaster().publishes()) {
    spdlog::info("weights on {} (snapshot {})", dqn.broadcaster().endpoint(),
                 dqn.broadcaster().snapshot_endpoint());
    if (!args.weights_endpoint_file.empty()) {
      std::string path = args.weights_endpoint_file;
      if (rendezvous.rank > 0) path += ".rank" + std::to_string(rendezvous.rank);
      WriteLinesAtomically(path,
                           {dqn.broadcaster().endpoint(), dqn.broadcaster().snapshot_endpoint()});
    }
  }

  const int64_t max_updates = config.learner.max_updates;
  const int64_t check_every = config.learner.stop_check_interval;
  int signal_number = 0;
  bool stop = false;
  while (!stop && (max_updates == 0 || dqn.updates() < max_updates)) {
    if (!dqn.Update()) {
      // Replay had no batch in time (not filled yet, or rate limited);
      // nothing collective happened, so every rank can retry.
      if (StopRequested(stop_signals, &signal_number)) break;
      continue;
    }
    if (dqn.updates() % check_every == 0) {
      stop = dqn.AgreeToStop(StopRequested(stop_signals, &signal_number));
    }
  }
  if (signal_number != 0) {
    spdlog::info("{}: stopping at update {}", signal_number == SIGTERM ? "SIGTERM" : "SIGINT",
                 dqn.updates());
  }
  const learner::LearnerMetrics m = dqn.TakeMetrics();
  spdlog::info("{} updates; last interval {:.1f} updates/s, loss {:.4g}, mean |td| {:.4g}",
               m.updates, m.updates_per_sec, m.loss, m.mean_abs_td);
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
  cmd->add_flag("--print-config", args->print_config, "Print the resolved config and exit");
  cmd->add_option("overrides", args->overrides, "Config overrides: section.key=value ...");
  cmd->callback([args] { RunLearner(*args); });
}

}  // namespace rlswarm::apps
