#include "apps/usage_error.h"

#include <algorithm>
#include <iostream>

namespace rlswarm::apps {
namespace {

// Optimal string alignment distance: insertions, deletions, substitutions
// and swaps of neighbours ("lauch" -> "launch" is 1, "laucnh" -> "launch" 1).
int EditDistance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// Every spelling of every option of `app`: --long and -s.
std::vector<std::string> FlagNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// The subcommand the parse got into (the last of a chain), or `app` itself.
CLI::App* ParsedCommand(CLI::App& app) {
  CLI::App* at = &app;
  for (;;) {
    const std::vector<CLI::App*> parsed = at->get_subcommands();
    if (parsed.empty()) return at;
    at = parsed.back();
  }
}

std::string Suggestion(const std::string& nearest) {
  return nearest.empty() ? "" : "; did you mean '" + nearest + "'?";
}

}  // namespace

std::string NearestName(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  int best_distance = 0;
  for (const std::string& name : names) {
    const int d = EditDistance(word, name);
    if (best.empty() || d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  const int allowed = std::max<int>(1, static_cast<int>(word.size()) / 3);
  return best_distance <= allowed ? best : "";
}

int ReportParseError(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  CLI::App* command = ParsedCommand(app);
  const std::string program = app.get_name().empty() ? "rlswarm" : app.get_name();
  if (command == &app) {
    // No subcommand was recognised: the first word that is not a flag is
    // the one the user meant as a subcommand.
    for (int i = 1; i < argc; ++i) {
      const std::string word = argv[i];
      if (word.empty() || word[0] == '-') continue;
      std::cerr << program << ": unknown subcommand '" << word << "'"
                << Suggestion(NearestName(word, SubcommandNames(app))) << "\nrun '" << program
                << " --help' for the list\n";
      return 2;
    }
  }
  std::cerr << program << (command == &app ? "" : " " + command->get_name()) << ": " << e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    for (const std::string& extra : command->remaining()) {
      if (extra.empty() || extra[0] != '-') continue;
      const std::string flag = extra.substr(0, extra.find('='));
      const std::string nearest = NearestName(flag, FlagNames(*command));
      if (!nearest.empty()) std::cerr << "\nunknown flag '" << flag << "'" << Suggestion(nearest);
    }
  }
  std::cerr << "\nrun '" << program << (command == &app ? "" : " " + command->get_name())
            << " --help' for its flags\n";
  return 2;
}

}  // namespace rlswarm::apps
