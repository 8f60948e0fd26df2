#include "config/config_reference.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/errors.h"
#include "config/experiment_config.h"
#include "envs/registry.h"

namespace rlswarm::config {
namespace {

// What each section is for, one or two sentences: the Visit methods document
// keys, not sections.
const std::map<std::string, std::string>& SectionSummaries() {
  static const std::map<std::string, std::string> summaries = {
      {"log", "How much every role logs (to stderr, and to the run directory's logs)."},
      {"env",
       "The environment: which one, how many copies one vector env steps, and the options that "
       "only some envs take (setting one for another env is a config error)."},
      {"evaluate",
       "`rlswarm evaluate`: the policy it runs and its episodes. The seed is also the one the "
       "launcher's evaluations derive their episodes from."},
      {"security",
       "CURVE encryption and client authentication for every rpc socket of the system, off by "
       "default. `rlswarm keygen --out <keys_dir>/<name>` makes the key files: "
       "`server.key_secret` on the server hosts only, `server.key` and "
       "`<client_key>.key_secret` on every client host, and the public keys of the admitted "
       "clients in `authorized_clients/` (none: servers refuse to start)."},
      {"replay",
       "The sharded replay service: where its shards listen, how much they hold, how they sample "
       "(prioritized experience replay), the rate limiter between actors and learner, and its "
       "checkpoints."},
      {"model",
       "The networks that actors, the learner and evaluations build for the env: with "
       "`learner.algorithm: dqn` the Q-network (a torso for the observation shape and an "
       "optional dueling head), with `td3` the policy and twin critics, MLPs of "
       "`hidden_sizes`."},
      {"learner",
       "The learner ranks: the algorithm, its optimizer and targets, how the model is sharded "
       "across ranks (FSDP-style) and in which precision, the weights it publishes to the "
       "actors, its checkpoints and the rendezvous of its ranks. Defaults follow "
       "docs/baselines.md (CartPole)."},
      {"actor",
       "The actor swarm: n-step returns, each actor's exploration, how often it looks for new "
       "weights, and the writer that sends its transitions to replay. Env count and threads "
       "come from `env`."},
      {"launch",
       "`rlswarm launch`: how it runs the roles (threads of one process, or supervised "
       "processes), when the run stops, how its evaluator judges the policy, how crashed "
       "processes come back, and its Prometheus endpoints."},
  };
  return summaries;
}

constexpr const char* kIntro =
    R"(# Configuration reference

An experiment config is a YAML file of sections (`configs/*.yaml`); every key is optional, and a
key a file leaves out keeps its default below. A file may start from another with a top-level
`base: FILE` (relative to the file that names it): its keys are merged onto the base's, section
by section. On the command line, `section.key=value` arguments (the value in YAML syntax, e.g.
`env.max_episode_steps=null`) are applied after the file and after flags such as `--env`.
Unknown keys, wrong types, values outside their bounds or choices, and keys that do not fit
together are config errors (exit code 2) that name the key and the file and line, or the
override. `--print-config` on a role's command prints the resolved config with these docs as
comments; `rlswarm config` prints the defaults the same way.

This page is generated from the code that reads configs (the `Visit` methods of `config/`) by
`rlswarm config --markdown > docs/configuration.md`; a test fails when the two differ. Keys that
apply only under a choice (an algorithm, a torso, a launch mode) or to one family of envs are
listed after their section's other keys, under that condition.
)";

// Text for a Markdown table cell: a pipe would end the cell, `<x>` would be
// taken for an HTML tag and `*` for emphasis, except inside `code spans`.
std::string EscapeCell(std::string_view text) {
  std::string out;
  bool in_code = false;
  for (const char c : text) {
    if (c == '`') in_code = !in_code;
    if (c == '|') {
      out += "\\|";
    } else if (!in_code && c == '<') {
      out += "&lt;";
    } else if (!in_code && c == '>') {
      out += "&gt;";
    } else if (!in_code && c == '*') {
      out += "\\*";
    } else {
      out += c;
    }
  }
  return out;
}

// A code span in a table cell: only a pipe needs escaping there.
std::string Code(std::string_view text) {
  std::string out = "`";
  for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out + "`";
}

bool Contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Whether `word` names a family of env names: the registry's MinAtar/*, or
// the gymnasium:ID and plugin:PATH forms.
bool IsEnvFamily(const std::string& word) {
  if (word + ":" == envs::kGymnasiumPrefix || word + ":" == envs::kPluginPrefix) return true;
  const std::vector<std::string> names = envs::EnvNames();
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& name) { return name.starts_with(word + "/"); });
}

// The condition a key's doc puts it under (see config_reference.h), and the
// doc without it.
struct Scope {
  std::string heading;  // "" = the key always applies
  std::string doc;
};

Scope FindScope(const KeyDoc& key, const std::vector<KeyDoc>& all) {
  const std::size_t colon = key.doc.find(": ");
  if (colon == std::string::npos) return {"", key.doc};
  const std::string prefix = key.doc.substr(0, colon);
  const std::string word = prefix.substr(0, prefix.find(' '));
  // A choice's doc that starts by explaining its own values.
  if (Contains(key.choices, word)) return {"", key.doc};
  std::vector<const KeyDoc*> owners;
  for (const KeyDoc& other : all) {
    if (&other != &key && Contains(other.choices, word)) owners.push_back(&other);
  }
  // A value that several keys offer is this section's if one of its keys does.
  if (owners.size() > 1) {
    std::erase_if(owners, [&](const KeyDoc* o) { return o->section != key.section; });
  }
  const std::string rest = key.doc.substr(colon + 2);
  if (owners.size() == 1) {
    return {"only when " + Code(owners[0]->section + "." + owners[0]->key) + " is " + Code(word),
            rest};
  }
  if (owners.empty() && prefix == word && IsEnvFamily(word)) {
    return {"only for " + word + " envs", rest};
  }
  return {"", key.doc};
}

std::string Allowed(const KeyDoc& key) {
  if (!key.choices.empty()) {
    std::string out;
    for (const std::string& c : key.choices) out += (out.empty() ? "" : ", ") + Code(c);
    return out;
  }
  const bool has_min = std::isfinite(key.bounds.min), has_max = std::isfinite(key.bounds.max);
  std::string range;
  if (has_min && has_max) {
    range =
        "[" + FormatConfigNumber(key.bounds.min) + ", " + FormatConfigNumber(key.bounds.max) + "]";
  } else if (has_min) {
    range = "&gt;= " + FormatConfigNumber(key.bounds.min);
  } else if (has_max) {
    range = "&lt;= " + FormatConfigNumber(key.bounds.max);
  }
  if (!range.empty() && key.type.starts_with("list of")) range = "each in " + range;
  return range;
}

void AppendTable(std::string& out, const std::vector<std::pair<const KeyDoc*, std::string>>& rows) {
  out += "| key | type | default | allowed | description |\n";
  out += "|---|---|---|---|---|\n";
  for (const auto& [key, doc] : rows) {
    out += fmt::format("| {} | {} | {} | {} | {} |\n", Code(key->key), key->type,
                       Code(key->default_value), Allowed(*key), EscapeCell(doc));
  }
}

}  // namespace

void KeyDocCollector::Add(std::string_view key, std::string type, std::string default_value,
                          const char* doc, Bounds bounds, std::vector<std::string> choices) {
  keys_.push_back(KeyDoc{section_, std::string(key), std::move(type), std::move(default_value), doc,
                         bounds, std::move(choices)});
}

std::string KeyDocCollector::DefaultText(bool v) { return v ? "true" : "false"; }

// As a config file would spell it: quoted only where YAML needs it ("").
std::string KeyDocCollector::DefaultText(const std::string& v) {
  YAML::Emitter out;
  out << v;
  return out.c_str();
}

std::string KeyDocCollector::DefaultText(double v) { return FormatConfigNumber(v); }
std::string KeyDocCollector::DefaultText(std::int64_t v) { return std::to_string(v); }
std::string KeyDocCollector::DefaultText(std::uint64_t v) { return std::to_string(v); }

std::string KeyDocCollector::DefaultText(const std::vector<std::int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::string KeyDocCollector::DefaultText(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + DefaultText(s);
  return "[" + out + "]";
}

std::string KeyDocCollector::DefaultText(const JsonObject& v) {
  return v.text.empty() ? "null" : v.text;
}

std::string FormatConfigNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double magnitude = std::abs(v);
  if (magnitude >= 1e6) {
    const double exponent = std::round(std::log10(magnitude));
    if (std::pow(10.0, exponent) == magnitude) {
      return fmt::format("{}1e{}", v < 0 ? "-" : "", static_cast<int>(exponent));
    }
  }
  return fmt::format("{}", v);
}

std::string ConfigReferenceMarkdown() {
  ExperimentConfig defaults;
  KeyDocCollector collector;
  defaults.Visit(collector);
  const std::vector<KeyDoc>& keys = collector.keys();

  std::string out = kIntro;
  out += "\nSections:";
  for (const std::string& section : collector.sections()) {
    out += fmt::format(" [{}](#{}),", section, section);
  }
  out.back() = '\n';

  for (const std::string& section : collector.sections()) {
    const auto summary = SectionSummaries().find(section);
    if (summary == SectionSummaries().end()) {
      throw Internal("config reference: section '" + section +
                     "' has no summary in config/config_reference.cc");
    }
    out += "\n## " + section + "\n\n" + summary->second + "\n\n";
    // The keys that always apply first, then one table per condition, in
    // the order the conditions first appear.
    std::vector<std::pair<const KeyDoc*, std::string>> always;
    std::vector<std::pair<std::string, std::vector<std::pair<const KeyDoc*, std::string>>>>
        conditional;
    for (const KeyDoc& key : keys) {
      if (key.section != section) continue;
      Scope scope = FindScope(key, keys);
      if (scope.heading.empty()) {
        always.emplace_back(&key, std::move(scope.doc));
        continue;
      }
      auto group = std::find_if(conditional.begin(), conditional.end(),
                                [&](const auto& g) { return g.first == scope.heading; });
      if (group == conditional.end()) {
        conditional.emplace_back(scope.heading,
                                 std::vector<std::pair<const KeyDoc*, std::string>>{});
        group = std::prev(conditional.end());
      }
      group->second.emplace_back(&key, std::move(scope.doc));
    }
    if (!always.empty()) AppendTable(out, always);
    for (const auto& [heading, rows] : conditional) {
      out += "\n### " + section + ": " + heading + "\n\n";
      AppendTable(out, rows);
    }
  }
  return out;
}

}  // namespace rlswarm::config
