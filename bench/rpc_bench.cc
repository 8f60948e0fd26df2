// rpc_bench: the rpc layer against raw ZeroMQ, measured in the same run.
//
//   rpc_bench [--json] [--seconds S] [--rounds N] [--cases REGEX] [--pin]
//             [--skip-broadcast] [--echo-on-workers] [--raw-heartbeats]
//             [--log-level L]
//
// Request/reply ("reqrep_<size>_k<in flight>", and "curve_reqrep_..." with
// CURVE on): 64 B, 64 KiB and 1 MiB payloads echoed back, 1 or 16 calls in
// flight, over tcp://127.0.0.1.
//   raw: a DEALER sends the payload as one zero-copy frame; a ROUTER echoes
//        the frames it received (moved, not copied). Bare sockets: the rpc
//        side carries its ZMTP heartbeats (on by default in rpc's client
//        and server); --raw-heartbeats gives the raw sockets the same.
//        CURVE: the zmq socket options directly, no ZAP handler.
//   rpc: rpc::Client calls "echo" on an rpc::Server whose handler replies
//        with the request's payloads. CURVE: rpc::SecurityOptions with keys
//        generated for this run (ZAP-authenticated). k1 uses Client::Invoke;
//        k16 a pipeline of CallAsync completions, each starting the next
//        call on the client's I/O thread (as the replay writer streams);
//        "..._k16_futures" keeps 16 Call futures and awaits the oldest from
//        the measuring thread. The JSON's "rpc_api" names the one used.
// Broadcast ("broadcast_50MB_4subs"): one 50 MB blob published to 4
// subscribers, timed until all 4 hold it; raw PUB/SUB vs rpc::Publisher and
// rpc::Subscriber.
//
// The servers (and the subscribers) run in a child process (this binary
// re-executed with the internal --serve); the measuring client runs here. Each
// request/reply case connects both sides once, then measures them in
// --rounds alternating rounds (raw, rpc, raw, rpc, ...) of --seconds/N each
// and merges each side's rounds: a noisy machine then weighs on both alike. A control
// pipe carries the child's endpoints back, and broadcast commands to it.
//
// JSON: {"results": [{"case", "payload_bytes", "in_flight", "curve",
//   "rpc_api", "raw_per_sec", "rpc_per_sec", "raw_p50_us", "rpc_p50_us", "raw_cpu_us",
//   "rpc_cpu_us"}, ...],
//   "baseline": {"first_touch_GB_per_sec"}, ...}; a side that failed has null
// figures and its error on stderr.
//
// The rpc echo handler runs on the server's I/O thread
// (HandlerOptions::run_on_io_thread), as cheap handlers should;
// --echo-on-workers measures the worker-pool path instead.

#include "bench/rpc_bench.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <regex>
#include <thread>
#include <tuple>
#include <type_traits>

#include "common/logging.h"

namespace {

using namespace rlswarm::bench;

// Runs `f`; on failure reports the error and returns nothing (the figure,
// or the side, stays empty).
template <class F>
std::optional<std::invoke_result_t<F>> Try(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::cerr << "rpc_bench: " << what << " failed: " << e.what() << "\n";
    return std::nullopt;
  }
}

// `rounds` rounds of raw then rpc, seconds / rounds each, merged per side:
// both sides sample the same stretch of a noisy machine. A side that fails
// once keeps no figures.
void MeasureAlternately(Result& r, RequestReplySide* raw, RequestReplySide* rpc, double seconds,
                        int rounds) {
  std::optional<Sample> samples[2];
  RequestReplySide* sides[2] = {raw, rpc};
  for (int i = 0; i < 2; ++i) {
    if (sides[i] != nullptr) samples[i].emplace();
  }
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < 2; ++i) {
      if (!samples[i]) continue;
      try {
        samples[i]->Merge(sides[i]->Run(seconds / rounds));
      } catch (const std::exception& e) {
        std::cerr << "rpc_bench: " << r.name << (i == 0 ? " raw" : " rpc")
                  << " failed: " << e.what() << "\n";
        samples[i].reset();
      }
    }
  }
  const auto summary = [&](int i) -> std::optional<Measurement> {
    if (!samples[i]) return std::nullopt;
    return Try(r.name, [&] { return samples[i]->Summary(); });
  };
  r.raw = summary(0);
  r.rpc = summary(1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rpc layer vs raw ZeroMQ: request/reply, CURVE and broadcast"};
  bool json = false;
  bool skip_broadcast = false;
  double seconds = 1.0;
  std::string cases = ".*";
  std::string log_level = "warn";
  bool echo_on_workers = false;
  app.add_flag("--json", json, "Print JSON");
  app.add_option("--seconds", seconds, "Seconds per case and side")->check(CLI::PositiveNumber);
  int rounds = 3;
  app.add_option("--rounds", rounds,
                 "Request/reply: alternate raw and rpc this many times per case (--seconds split)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--cases", cases, "Run only cases whose name matches this regex");
  app.add_flag("--skip-broadcast", skip_broadcast, "Skip the 50 MB broadcast case");
  app.add_option("--log-level", log_level, "rpc library log level (to stderr)");
  bool pin = false;
  app.add_flag("--pin", pin,
               "Pin the measuring process (client) to CPU 0 and the server process to CPU 1, "
               "for raw and rpc alike");
  app.add_flag("--echo-on-workers", echo_on_workers,
               "Run the rpc echo handler on worker threads, not the server's I/O thread");
  bool raw_heartbeats = false;
  app.add_flag("--raw-heartbeats", raw_heartbeats,
               "Give the raw request/reply sockets the ZMTP heartbeats rpc uses by default");
  // The server process's side (ServerProcess re-executes this binary).
  bool serve = false;
  std::string keys_dir;
  std::optional<int> server_cpu;
  app.add_flag("--serve", serve, "Internal: be the server process (stdin closes: exit)")->group("");
  app.add_option("--keys-dir", keys_dir, "Internal: --serve's CURVE keys")->group("");
  app.add_option("--server-cpu", server_cpu, "Internal: the CPU --serve pins itself to")->group("");
  CLI11_PARSE(app, argc, argv);
  if (serve) {
    rlswarm::InitLogging("rpc_bench/server", rlswarm::ParseLogLevel(log_level));
    return RunServerProcess(keys_dir, echo_on_workers, raw_heartbeats, server_cpu);
  }
  rlswarm::InitLogging("rpc_bench", rlswarm::ParseLogLevel(log_level));
  const std::regex filter(cases);

  const CurveKeys keys = MakeCurveKeys();
  const double first_touch = FirstTouchGBPerSec();
  std::vector<Result> results;
  int status = 0;
  if (pin && std::thread::hardware_concurrency() < 2) {
    std::cerr << "rpc_bench: --pin needs 2 CPUs; running unpinned\n";
    pin = false;
  }
  // Pinned, each process keeps all its threads (application and ZeroMQ I/O)
  // on one CPU, as a deployment that pins its processes would; unpinned, the
  // kernel places them, and on a 2-vCPU VM it often splits a process across
  // both CPUs (see bench/README.md).
  const std::string placement =
      pin ? "pinned: client process on CPU 0, server process on CPU 1" : "unpinned";
  try {
    ServerProcess child(keys, echo_on_workers, raw_heartbeats,
                        pin ? std::optional<int>(1) : std::nullopt, log_level);
    if (pin && !PinToCpu(0)) throw rlswarm::Unavailable("cannot pin the client to CPU 0");
    zmq::context_t ctx(1);
    for (bool curve : {false, true}) {
      for (std::size_t bytes : {std::size_t{64}, std::size_t{64} << 10, std::size_t{1} << 20}) {
        // k16 twice: as a pipeline of CallAsync completions (how rlswarm's
        // replay writer streams), and as futures awaited by one thread.
        for (auto [in_flight, api, suffix] :
             {std::tuple{1, RpcApi::kInvoke, ""}, std::tuple{16, RpcApi::kCallAsync, ""},
              std::tuple{16, RpcApi::kCall, "_futures"}}) {
          Result r;
          r.name = fmt::format("{}reqrep_{}_k{}{}", curve ? "curve_" : "", SizeName(bytes),
                               in_flight, suffix);
          if (!std::regex_search(r.name, filter)) continue;
          r.payload_bytes = bytes;
          r.in_flight = in_flight;
          r.curve = curve;
          r.api = api;
          const CurveKeys* k = curve ? &keys : nullptr;
          const int n = in_flight;
          auto raw = Try(r.name + " raw",
                         [&] { return RawRequestReply(ctx, child, bytes, n, k, raw_heartbeats); });
          std::optional<std::unique_ptr<RequestReplySide>> rpc;
          if (child.rpc(curve)) {
            rpc = Try(r.name + " rpc", [&] { return RpcRequestReply(child, bytes, n, api, k); });
          }
          MeasureAlternately(r, raw ? raw->get() : nullptr, rpc ? rpc->get() : nullptr, seconds,
                             rounds);
          results.push_back(std::move(r));
        }
      }
    }
    Result b;
    b.name = fmt::format("broadcast_50MB_{}subs", kSubscribers);
    if (!skip_broadcast && std::regex_search(b.name, filter)) {
      b.payload_bytes = kBroadcastBytes;
      b.in_flight = kSubscribers;  // subscribers receiving each broadcast
      b.raw = Try(b.name + " raw", [&] { return RawBroadcast(ctx, child, seconds); });
      b.rpc = Try(b.name + " rpc", [&] { return RpcBroadcast(ctx, child, seconds); });
      results.push_back(std::move(b));
    }
  } catch (const std::exception& e) {
    std::cerr << "rpc_bench: " << e.what() << "\n";
    status = 1;
  }
  std::filesystem::remove_all(keys.dir);
  if (json) {
    std::cout << ToJson(results, seconds, rounds, placement, first_touch, echo_on_workers,
                        raw_heartbeats)
                     .dump(2)
              << "\n";
  } else {
    PrintTable(results);
    fmt::print("cpu: CPU us per call (broadcast: per broadcast) of both processes\n");
    fmt::print("baseline: first touch of fresh memory {:.2f} GB/s\n", first_touch);
    fmt::print("placement: {}\n", placement);
    fmt::print("raw request/reply sockets: {}\n",
               raw_heartbeats ? "with rpc's ZMTP heartbeats" : "without heartbeats");
  }
  return status;
}
