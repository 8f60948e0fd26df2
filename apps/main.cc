// rlswarm: one binary, one subcommand per role.

#include <CLI/CLI.hpp>
#include <iostream>

#include "apps/commands.h"
#include "apps/usage_error.h"
#include "common/errors.h"
#include "config/config_reader.h"

int main(int argc, char** argv) {
  CLI::App app{"rlswarm: distributed reinforcement learning (actors, sharded replay, FSDP learner)",
               "rlswarm"};
  app.require_subcommand(1);
  rlswarm::apps::AddConfigCommand(app);
  rlswarm::apps::AddEnvsCommand(app);
  rlswarm::apps::AddEvaluateCommand(app);
  rlswarm::apps::AddKeygenCommand(app);
  rlswarm::apps::AddReplayCommand(app);
  rlswarm::apps::AddLearnerCommand(app);
  rlswarm::apps::AddActorCommand(app);
  rlswarm::apps::AddLaunchCommand(app);
  rlswarm::apps::AddPlotCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return rlswarm::apps::ReportParseError(app, e, argc, argv);
  } catch (const rlswarm::config::ConfigError& e) {
    std::cerr << "config error: " << e.what() << "\n";
    return 2;
  } catch (const rlswarm::Error& e) {
    std::cerr << "error (" << rlswarm::StatusCodeName(e.code()) << "): " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
