// `rlswarm evaluate`: runs whole episodes of a policy and summarises returns.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "actors/q_batch_policy.h"
#include "actors/q_policy.h"
#include "apps/checkpoint_weights.h"
#include "apps/commands.h"
#include "apps/experiment_config.h"
#include "apps/png_writer.h"
#include "common/logging.h"
#include "envs/episode_runner.h"
#include "envs/render.h"
#include "models/model_spec.h"

namespace rlswarm::apps {
namespace {

struct EvaluateArgs {
  std::string config_file;
  std::string env;
  std::string policy;
  std::int64_t episodes = 0;
  std::uint64_t seed = 0;
  std::int64_t num_envs = 0;
  std::string checkpoint;
  double epsilon = 0;
  std::string record_dir;
  std::int64_t record_episodes = 1;
  bool json = false;
  bool print_config = false;
  bool seed_set = false;
  std::vector<std::string> overrides;
};

void RunEvaluate(const EvaluateArgs& args, const CLI::App& cmd) {
  // Flags are shorthands for config keys; `section.key=value` arguments come
  // last and win.
  std::vector<std::string> overrides;
  if (!args.env.empty()) overrides.push_back("env.name=" + args.env);
  if (!args.policy.empty()) overrides.push_back("evaluate.policy=" + args.policy);
  if (!args.checkpoint.empty()) overrides.push_back("evaluate.policy=q");
  if (cmd.count("--episodes"))
    overrides.push_back(fmt::format("evaluate.episodes={}", args.episodes));
  if (cmd.count("--seed")) overrides.push_back(fmt::format("evaluate.seed={}", args.seed));
  if (cmd.count("--num-envs")) overrides.push_back(fmt::format("env.num_envs={}", args.num_envs));
  overrides.insert(overrides.end(), args.overrides.begin(), args.overrides.end());

  ExperimentConfig config = ExperimentConfig::Load(args.config_file, overrides);
  if (args.print_config) {
    std::cout << config.ToYaml();
    return;
  }
  InitLogging("evaluate", ParseLogLevel(config.log.level));

  const auto& env_cfg = config.env;
  const auto& eval = config.evaluate;
  envs::VectorEnv env(env_cfg.name,
                      env_cfg.ToVectorEnvOptions(envs::AutoResetSeeding::kSeedPerEpisode));
  std::unique_ptr<envs::BatchPolicy> policy;
  std::unique_ptr<actors::QPolicy> network;
  if (eval.policy == "random") {
    if (!args.record_dir.empty() || cmd.count("--epsilon")) {
      throw ConfigError("--record and --epsilon need a Q-network policy (--checkpoint)");
    }
    policy = std::make_unique<envs::RandomPolicy>(env.spec(), env.num_envs(), eval.seed);
  } else {
    if (args.checkpoint.empty()) throw ConfigError("evaluate.policy 'q' needs --checkpoint PATH");
    actors::SetInferenceThreads(1);
    network = std::make_unique<actors::QPolicy>(config.ModelSpec(), config.model.seed,
                                                env.spec().observation.dtype);
    network->LoadWeights(CheckpointWeights(args.checkpoint));
    auto q_policy =
        std::make_unique<actors::QBatchPolicy>(*network, env.num_envs(), args.epsilon, eval.seed);
    if (!args.record_dir.empty()) {
      if (!envs::CanRender(env.spec())) {
        throw ConfigError("--record: cannot draw " + env_cfg.name +
                          " (CartPole-v1 and the MinAtar games can be drawn)");
      }
      q_policy->on_observation = [&env, &args](std::int64_t slot, std::uint64_t episode,
                                               std::int64_t step) {
        if (episode >= static_cast<std::uint64_t>(args.record_episodes)) return;
        const std::string dir = fmt::format("{}/episode-{:04d}", args.record_dir, episode);
        std::filesystem::create_directories(dir);
        WritePng(fmt::format("{}/frame-{:05d}.png", dir, step),
                 envs::RenderObservation(env.spec(), env.observation(slot)));
      };
    }
    policy = std::move(q_policy);
  }
  spdlog::info("evaluating policy '{}' on {} for {} episodes, {} envs, seed {}", eval.policy,
               env_cfg.name, eval.episodes, env.num_envs(), eval.seed);
  const auto start = std::chrono::steady_clock::now();
  const auto episodes = envs::RunEpisodes(env, *policy, eval.episodes, eval.seed);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const envs::ReturnSummary s = envs::Summarize(episodes);
  std::int64_t steps = 0;
  for (const auto& e : episodes) steps += e.length;

  if (args.json) {
    nlohmann::json j = {{"env", env_cfg.name},
                        {"policy", eval.policy},
                        {"checkpoint", args.checkpoint},
                        {"epsilon", args.epsilon},
                        {"episodes", s.episodes},
                        {"seed", eval.seed},
                        {"num_envs", env.num_envs()},
                        {"mean_return", s.mean_return},
                        {"std_return", s.std_return},
                        {"min_return", s.min_return},
                        {"max_return", s.max_return},
                        {"mean_length", s.mean_length},
                        {"env_steps", steps},
                        {"wall_time_s", seconds}};
    std::cout << j.dump() << "\n";
  } else {
    fmt::print("{} ({} policy), {} episodes, seed {}\n", env_cfg.name, eval.policy, s.episodes,
               eval.seed);
    fmt::print("  return: mean {:.3f}  std {:.3f}  min {:.3f}  max {:.3f}\n", s.mean_return,
               s.std_return, s.min_return, s.max_return);
    fmt::print("  length: mean {:.2f}   ({} env steps in {:.3f} s)\n", s.mean_length, steps,
               seconds);
  }
}

}  // namespace

void AddEvaluateCommand(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("evaluate", "Run episodes of a policy and summarise their returns");
  auto args = std::make_shared<EvaluateArgs>();
  cmd->add_option("--config", args->config_file,
                  "Experiment config (YAML); default: built-in defaults")
      ->check(CLI::ExistingFile);
  cmd->add_option("--env", args->env, "Environment name (env.name)");
  cmd->add_option("--policy", args->policy, "Policy: random or q (evaluate.policy)");
  cmd->add_option("--checkpoint", args->checkpoint,
                  "Learner checkpoint directory (sharded or not) whose Q-network to evaluate");
  cmd->add_option("--epsilon", args->epsilon, "With --checkpoint: epsilon-greedy (default 0)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--record", args->record_dir,
                  "Write each step of the first --record-episodes episodes as PNG frames "
                  "(DIR/episode-NNNN/frame-NNNNN.png)");
  cmd->add_option("--record-episodes", args->record_episodes, "Episodes to record (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--episodes", args->episodes, "Episodes to run (evaluate.episodes)");
  cmd->add_option("--seed", args->seed, "Seed (evaluate.seed)");
  cmd->add_option("--num-envs", args->num_envs,
                  "Parallel envs (env.num_envs); results do not depend on it");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->add_flag("--print-config", args->print_config, "Print the resolved config and exit");
  cmd->add_option("overrides", args->overrides, "Config overrides: section.key=value ...");
  cmd->callback([args, cmd] { RunEvaluate(*args, *cmd); });
}

}  // namespace rlswarm::apps
