// `rlswarm config [--yaml] [--config FILE] [section.key=value ...]`: the
// default config (or a file's, resolved with its overrides) as YAML with
// every key's doc as a comment; `rlswarm config --markdown`: the
// configuration reference, docs/configuration.md, generated from the same
// Visit methods that read configs.

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "config/config_reference.h"
#include "config/experiment_config.h"

namespace rlswarm::apps {
namespace {

struct ConfigArgs {
  bool markdown = false;
  bool yaml = false;
  std::string config_file;
  std::vector<std::string> overrides;
};

void RunConfig(const ConfigArgs& args) {
  if (args.markdown) {
    std::cout << config::ConfigReferenceMarkdown();
    return;
  }
  std::cout << config::ExperimentConfig::Load(args.config_file, args.overrides).ToYaml();
}

}  // namespace

void AddConfigCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "config",
      "Print the default config (or a file's, resolved) as YAML, or the configuration "
      "reference as Markdown");
  auto args = std::make_shared<ConfigArgs>();
  auto* markdown = cmd->add_flag(
      "--markdown", args->markdown,
      "Print the configuration reference (docs/configuration.md): every section and key with "
      "its type, default, allowed values and doc");
  auto* yaml = cmd->add_flag("--yaml", args->yaml,
                             "Print the config as YAML with each key's doc as a comment (the "
                             "default)");
  auto* file = cmd->add_option("--config", args->config_file,
                               "Experiment config (YAML) to resolve instead of the defaults")
                   ->check(CLI::ExistingFile);
  auto* overrides =
      cmd->add_option("overrides", args->overrides, "Config overrides: section.key=value ...");
  markdown->excludes(yaml)->excludes(file)->excludes(overrides);
  cmd->callback([args] { RunConfig(*args); });
}

}  // namespace rlswarm::apps
