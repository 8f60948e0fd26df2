// The ranks of the watchdog tests (harness.h, watchdog_test.cc).

#include <ATen/ATen.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "common/errors.h"
#include "learner/dist/rendezvous.h"
#include "learner/dist/watchdog.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {

void RunWatchdogScenario(const std::string& scenario, int rank, int world_size, uint16_t port,
                         const std::string& dir) {
  using namespace std::chrono_literals;
  RendezvousOptions o;
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  o.rank = rank;
  o.world_size = world_size;
  // Far above the watchdog's: an exit before it is the watchdog's doing.
  o.timeout = 60s;
  o.host_store = false;
  o.gloo_hostname = "127.0.0.1";
  ProcessGroupHandle pg = Rendezvous(o);
  std::shared_ptr<Communicator> comm = pg.MakeCommunicator();
  WatchdogOptions w;
  w.timeout = 2s;
  w.bind_address = LocalAddressTowards(o.master_addr);
  Watchdog watchdog(*comm, w, [&](const WatchdogAlarm& alarm) {
    std::ofstream(dir + "/alarm.rank" + std::to_string(rank) + ".txt") << alarm.message << "\n";
    std::_Exit(kWatchdogExitCode);
  });
  auto all_reduce = [&] {
    at::Tensor x = at::ones({16}, at::kFloat);
    comm->AllReduceSum(x, "test all-reduce").Wait();
  };
  if (scenario == "watchdog_stop") {
    for (int i = 0; i < 3; ++i) all_reduce();
    std::ofstream(dir + "/ready.rank" + std::to_string(rank)) << getpid() << "\n";
    for (;;) all_reduce();
  }
  if (scenario == "watchdog_wait") {
    all_reduce();
    // Rank 1 stands for a rank that samples replay for a long time before its
    // next collective; rank 0 is blocked in that collective meanwhile.
    if (rank == 1) std::this_thread::sleep_for(5s);
    all_reduce();
    // Every rank outside any collective: all waiting on an empty replay.
    std::this_thread::sleep_for(5s);
    all_reduce();
    return;
  }
  throw InvalidArgument("unknown watchdog scenario " + scenario);
}

}  // namespace rlswarm::learner::testing
