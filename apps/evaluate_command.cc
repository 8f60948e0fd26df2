// `rlswarm evaluate`: runs whole episodes of a policy and summarises returns.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "actors/acting_policy.h"
#include "actors/q_policy.h"
#include "apps/commands.h"
#include "common/errors.h"
#include "common/logging.h"
#include "config/experiment_config.h"
#include "envs/episode_runner.h"
#include "envs/render.h"
#include "evaluate/checkpoint_weights.h"
#include "models/model_spec.h"
#include "observe/gif_writer.h"
#include "observe/png_writer.h"

namespace rlswarm::apps {
namespace {

// How long a recorded frame shows: CartPole-v1 in real time (its physics
// step is 0.02 s, Gymnasium renders it at 50 fps); the MinAtar grids move a
// cell a step, readable at 10 frames a second.
int FrameDelayCs(std::string env_name) {
  // Gymnasium's own CartPole and Pendulum play at the built-ins' pace.
  if (envs::IsGymnasiumEnv(env_name)) env_name.erase(0, envs::kGymnasiumPrefix.size());
  if (env_name == "CartPole-v1") return 2;
  return env_name == "Pendulum-v1" ? 5 : 10;
}

// --record on a Gymnasium env: its envs are made to render RGB frames
// (render_mode "rgb_array", unless the config's kwargs choose one), in a sync
// vector env unless the config names a vectorization (each env renders on its
// own there; a vector env of the env's own may render only as a whole).
void RenderGymnasiumFrames(envs::EnvOptions& env) {
  nlohmann::json kwargs =
      env.kwargs_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(env.kwargs_json);
  if (!kwargs.contains("render_mode")) kwargs["render_mode"] = "rgb_array";
  env.kwargs_json = kwargs.dump();
  if (!env.vectorization_mode) env.vectorization_mode = "sync";
}

// `--record`: the first `episodes` episodes as PNG frames
// (DIR/episode-NNNN/frame-NNNNN.png) and one animated GIF each
// (DIR/episode-NNNN.gif). Episodes run side by side in the env's slots, so
// each slot has its GIF open until the slot starts another episode (or
// Finish()), and no more than num_envs GIFs are open at once.
class EpisodeRecorder {
 public:
  EpisodeRecorder(std::string dir, std::uint64_t episodes, int frame_delay_cs)
      : dir_(std::move(dir)), episodes_(episodes), frame_delay_cs_(frame_delay_cs) {}

  // Whether `episode`'s frames are wanted; first finishes the slot's GIF
  // when the slot has moved on to another episode.
  bool Wants(std::int64_t slot, std::uint64_t episode) {
    const auto open = open_.find(slot);
    if (open != open_.end() && open->second.episode != episode) {
      Close(open->second);
      open_.erase(open);
    }
    return episode < episodes_;
  }

  void Frame(std::int64_t slot, std::uint64_t episode, std::int64_t step,
             const envs::Image& image) {
    if (!Wants(slot, episode)) return;
    const std::string frames = fmt::format("{}/episode-{:04d}", dir_, episode);
    auto open = open_.find(slot);
    if (open == open_.end()) {
      std::filesystem::create_directories(frames);
      auto gif = std::make_unique<observe::GifWriter>(frames + ".gif", frame_delay_cs_);
      open = open_.emplace(slot, Recording{episode, std::move(gif)}).first;
    }
    observe::WritePng(fmt::format("{}/frame-{:05d}.png", frames, step), image);
    open->second.gif->AddFrame(image);
  }

  // Closes the GIFs still open; returns "PATH (N frames)" per episode.
  std::vector<std::string> Finish() {
    for (auto& [slot, recording] : open_) Close(recording);
    open_.clear();
    return written_;
  }

 private:
  struct Recording {
    std::uint64_t episode;
    std::unique_ptr<observe::GifWriter> gif;
  };
  void Close(Recording& r) {
    r.gif->Close();
    written_.push_back(fmt::format("{} ({} frames)", r.gif->path(), r.gif->frames()));
  }

  std::string dir_;
  std::uint64_t episodes_;
  int frame_delay_cs_;
  std::map<std::int64_t, Recording> open_;  // by slot
  std::vector<std::string> written_;
};

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

// The config overrides the flags stand for. Flags are shorthands for config
// keys; `section.key=value` arguments come last and win.
std::vector<std::string> ConfigOverrides(const EvaluateArgs& args, const CLI::App& cmd) {
  std::vector<std::string> overrides;
  if (!args.env.empty()) overrides.push_back("env.name=" + args.env);
  if (!args.policy.empty()) overrides.push_back("evaluate.policy=" + args.policy);
  if (!args.checkpoint.empty()) overrides.push_back("evaluate.policy=q");
  if (cmd.count("--episodes"))
    overrides.push_back(fmt::format("evaluate.episodes={}", args.episodes));
  if (cmd.count("--seed")) overrides.push_back(fmt::format("evaluate.seed={}", args.seed));
  if (cmd.count("--num-envs")) overrides.push_back(fmt::format("env.num_envs={}", args.num_envs));
  overrides.insert(overrides.end(), args.overrides.begin(), args.overrides.end());
  return overrides;
}

// The summary on stdout: one JSON object with --json, else three lines.
void PrintResults(const EvaluateArgs& args, const config::ExperimentConfig& config,
                  std::int64_t num_envs, const envs::ReturnSummary& s, std::int64_t steps,
                  double seconds) {
  const auto& env_cfg = config.env;
  const auto& eval = config.evaluate;
  if (args.json) {
    nlohmann::json j = {{"env", env_cfg.name},
                        {"policy", eval.policy},
                        {"checkpoint", args.checkpoint},
                        {"epsilon", args.epsilon},
                        {"episodes", s.episodes},
                        {"seed", eval.seed},
                        {"num_envs", num_envs},
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

void RunEvaluate(const EvaluateArgs& args, const CLI::App& cmd) {
  config::ExperimentConfig config =
      config::ExperimentConfig::Load(args.config_file, ConfigOverrides(args, cmd));
  if (args.print_config) {
    std::cout << config.ToYaml();
    return;
  }
  InitLogging("evaluate", ParseLogLevel(config.log.level));

  const auto& env_cfg = config.env;
  const auto& eval = config.evaluate;
  envs::VectorEnvOptions env_options =
      env_cfg.ToVectorEnvOptions(envs::AutoResetSeeding::kSeedPerEpisode);
  const bool record_gymnasium = !args.record_dir.empty() && envs::IsGymnasiumEnv(env_cfg.name);
  if (record_gymnasium) RenderGymnasiumFrames(env_options.env);
  std::optional<envs::VectorEnv> made;
  try {
    made.emplace(env_cfg.name, env_options);
  } catch (const InvalidArgument& e) {
    // The config loaded, so what the env refuses is the render mode.
    if (!record_gymnasium) throw;
    throw config::ConfigError(std::string("--record: ") + e.what());
  }
  envs::VectorEnv& env = *made;
  std::unique_ptr<envs::BatchPolicy> policy;
  std::unique_ptr<actors::ActingPolicy> network;
  std::unique_ptr<EpisodeRecorder> recorder;
  if (eval.policy == "random") {
    if (!args.record_dir.empty() || cmd.count("--epsilon")) {
      throw config::ConfigError("--record and --epsilon need a trained policy (--checkpoint)");
    }
    policy = std::make_unique<envs::RandomPolicy>(env.spec(), env.num_envs(), eval.seed);
  } else {
    if (args.checkpoint.empty())
      throw config::ConfigError("evaluate.policy 'q' needs --checkpoint PATH");
    actors::SetInferenceThreads(1);
    network = actors::MakeActingPolicy(config.ActingNetworks(/*with_critic=*/false), env.spec());
    network->LoadWeights(evaluate::CheckpointWeights(args.checkpoint));
    std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation;
    if (!args.record_dir.empty()) {
      if (!env.CanRenderFrames()) {
        throw config::ConfigError("--record: cannot draw " + env_cfg.name +
                                  " (CartPole-v1, Pendulum-v1, the MinAtar games and Gymnasium "
                                  "envs with an rgb_array render mode can be drawn)");
      }
      recorder = std::make_unique<EpisodeRecorder>(args.record_dir,
                                                   static_cast<std::uint64_t>(args.record_episodes),
                                                   FrameDelayCs(env_cfg.name));
      on_observation = [&env, &recorder](std::int64_t slot, std::uint64_t episode,
                                         std::int64_t step) {
        if (!recorder->Wants(slot, episode)) return;
        recorder->Frame(slot, episode, step, env.Render(slot));
      };
    }
    policy = network->MakeEvaluationPolicy(env.num_envs(), args.epsilon, eval.seed,
                                           std::move(on_observation));
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
  if (recorder) {
    // Before the results, and on stderr with --json, so that stdout stays
    // one JSON object.
    std::string where =
        fmt::format("recorded to {}: PNG frames in episode-NNNN/, GIFs:\n", args.record_dir);
    for (const std::string& gif : recorder->Finish()) where += "  " + gif + "\n";
    std::fputs(where.c_str(), args.json ? stderr : stdout);
    std::fflush(args.json ? stderr : stdout);
  }
  PrintResults(args, config, env.num_envs(), s, steps, seconds);
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
                  "(DIR/episode-NNNN/frame-NNNNN.png) and one animated GIF per episode "
                  "(DIR/episode-NNNN.gif)");
  cmd->add_option("--record-episodes", args->record_episodes, "Episodes to record (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--episodes", args->episodes, "Episodes to run (evaluate.episodes)");
  cmd->add_option("--seed", args->seed, "Seed (evaluate.seed)");
  cmd->add_option("--num-envs", args->num_envs,
                  "Parallel envs (env.num_envs); results do not depend on it (continuous "
                  "actions: up to float rounding)");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->add_flag("--print-config", args->print_config, "Print the resolved config and exit");
  cmd->add_option("overrides", args->overrides, "Config overrides: section.key=value ...");
  cmd->callback([args, cmd] { RunEvaluate(*args, *cmd); });
}

}  // namespace rlswarm::apps
