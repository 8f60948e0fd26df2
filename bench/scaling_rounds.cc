#include "bench/scaling_rounds.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace rlswarm::bench {
namespace {

using nlohmann::json;

struct Case {
  const char* key;  // the row's updates/s key
  int world;
  int threads;
};

constexpr Case kCases[] = {{"world1_1thread_updates_per_sec", 1, 1},
                           {"world1_2threads_updates_per_sec", 1, 2},
                           {"world2_updates_per_sec", 2, 1}};

json Spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {{"min", v.front()}, {"median", median}, {"max", v.back()}};
}

// The 1-minute load average (-1 where /proc/loadavg cannot be read): the
// machine is shared, and a case's figure means little without it.
double LoadAverage() {
  std::ifstream f("/proc/loadavg");
  double load = -1;
  f >> load;
  return f ? load : -1;
}

}  // namespace

json RunScalingRounds(int rounds, const std::function<double(int world, int threads)>& measure) {
  const std::vector<std::string> figures = {kCases[0].key, kCases[1].key, kCases[2].key,
                                            "ratio_to_world1_1thread", "ratio_to_world1_2threads"};
  std::vector<std::vector<double>> values(figures.size());
  json results = json::array();
  for (int r = 0; r < rounds; ++r) {
    json row = {{"case", "scaling_round"},
                {"round", r},
                {"order", json::array()},
                {"load_avg_before", json::array()}};
    for (int i = 0; i < 3; ++i) {
      const Case& c = kCases[(i + r) % 3];
      row["order"].push_back(c.key);
      row["load_avg_before"].push_back(LoadAverage());
      row[c.key] = measure(c.world, c.threads);
    }
    const double w2 = row[kCases[2].key].get<double>();
    row["ratio_to_world1_1thread"] = w2 / row[kCases[0].key].get<double>();
    row["ratio_to_world1_2threads"] = w2 / row[kCases[1].key].get<double>();
    for (size_t f = 0; f < figures.size(); ++f) values[f].push_back(row[figures[f]].get<double>());
    // Each round as it finishes, on stderr: a run cut short keeps its rounds.
    std::cerr << row.dump() << std::endl;
    results.push_back(row);
  }
  json summary = {{"case", "scaling"}, {"rounds", rounds}};
  if (rounds > 0) {
    for (size_t f = 0; f < figures.size(); ++f) summary[figures[f]] = Spread(values[f]);
  }
  results.push_back(summary);
  return {{"results", results}};
}

}  // namespace rlswarm::bench
