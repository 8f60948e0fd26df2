// rpc_bench: JSON and table output.

#include <fmt/format.h>

#include "bench/rpc_bench.h"

namespace rlswarm::bench {

std::string SizeName(std::size_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + "MiB";
  if (bytes >= (1 << 10)) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

nlohmann::json ToJson(const std::vector<Result>& results, double seconds, int rounds,
                      const std::string& placement, double first_touch, bool echo_on_workers,
                      bool raw_heartbeats) {
  auto figure = [](const std::optional<Measurement>& m, double Measurement::*field) {
    return m ? nlohmann::json(m.value().*field) : nlohmann::json(nullptr);
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : results) {
    rows.push_back({{"case", r.name},
                    {"payload_bytes", r.payload_bytes},
                    {"in_flight", r.in_flight},
                    {"curve", r.curve},
                    {"rpc_api", RpcApiName(r.api)},
                    {"raw_per_sec", figure(r.raw, &Measurement::per_sec)},
                    {"rpc_per_sec", figure(r.rpc, &Measurement::per_sec)},
                    {"raw_p50_us", figure(r.raw, &Measurement::p50_us)},
                    {"rpc_p50_us", figure(r.rpc, &Measurement::p50_us)},
                    {"raw_cpu_us", figure(r.raw, &Measurement::cpu_us)},
                    {"rpc_cpu_us", figure(r.rpc, &Measurement::cpu_us)}});
  }
  return {{"results", rows},
          {"baseline", {{"first_touch_GB_per_sec", first_touch}}},
          {"seconds_per_case", seconds},
          {"rounds_per_case", rounds},
          {"placement", placement},
          {"rpc_echo_handler", echo_on_workers ? "worker threads" : "server I/O thread"},
          {"raw_heartbeats", raw_heartbeats},
          {"server", "separate process (fork), tcp://127.0.0.1"}};
}

void PrintTable(const std::vector<Result>& results) {
  // Three significant digits at least: a broadcast runs ~1/s, a 64 B call ~10^4/s.
  auto num = [](const std::optional<Measurement>& m, double Measurement::*field) {
    if (!m) return std::string("-");
    const double x = m.value().*field;
    return x < 100 ? fmt::format("{:.3g}", x) : fmt::format("{:.0f}", x);
  };
  fmt::print("{:<30} {:>9} {:>9} {:>7} {:>10} {:>10} {:>7} {:>9} {:>9}\n", "case", "raw/s", "rpc/s",
             "rpc/raw", "raw p50us", "rpc p50us", "delta", "raw cpu", "rpc cpu");
  for (const auto& r : results) {
    const bool both = r.raw && r.rpc;
    fmt::print("{:<30} {:>9} {:>9} {:>7} {:>10} {:>10} {:>7} {:>9} {:>9}\n", r.name,
               num(r.raw, &Measurement::per_sec), num(r.rpc, &Measurement::per_sec),
               both ? fmt::format("{:.0f}%", 100 * r.rpc->per_sec / r.raw->per_sec) : "-",
               num(r.raw, &Measurement::p50_us), num(r.rpc, &Measurement::p50_us),
               both ? fmt::format("{:+.0f}", r.rpc->p50_us - r.raw->p50_us) : "-",
               num(r.raw, &Measurement::cpu_us), num(r.rpc, &Measurement::cpu_us));
  }
}

}  // namespace rlswarm::bench
