#pragma once

// What the command line says when CLI11 rejects it: the unknown subcommand
// or flag by name, the nearest known one, and exit code 2, the code of every
// usage and config error (README, "Commands").

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace rlswarm::apps {

// The known name nearest to `word` by edit distance, or "" when none is
// near enough to be a likely typo (more than a third of its letters away).
std::string NearestName(const std::string& word, const std::vector<std::string>& names);

// Prints the error for `e` (raised by app.parse(argc, argv)) to stderr, or
// the help for a help request to stdout, and returns the exit code: 0 for
// help, 2 for everything else.
int ReportParseError(CLI::App& app, const CLI::ParseError& e, int argc, char** argv);

}  // namespace rlswarm::apps
