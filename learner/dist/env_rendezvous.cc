#include "learner/dist/env_rendezvous.h"

#include <charconv>
#include <limits>

#include "common/errors.h"

namespace rlswarm::learner {
namespace {

std::optional<long long> ReadInt(const EnvGetter& getenv, const char* name, long long lo,
                                 long long hi) {
  std::optional<std::string> value = getenv(name);
  if (!value) return std::nullopt;
  long long out = 0;
  const char* end = value->data() + value->size();
  auto [ptr, ec] = std::from_chars(value->data(), end, out);
  if (ec != std::errc() || ptr != end || value->empty() || out < lo || out > hi) {
    throw InvalidArgument(std::string("environment variable ") + name + "='" + *value +
                          "' is not an integer in [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
  }
  return out;
}

// The first of `names` that is set.
std::optional<long long> ReadFirstInt(const EnvGetter& getenv,
                                      std::initializer_list<const char*> names, long long lo,
                                      long long hi) {
  for (const char* name : names) {
    if (auto v = ReadInt(getenv, name, lo, hi)) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string FirstHostOfSlurmNodeList(const std::string& list) {
  // "gpu[01-04,07],cpu3" -> "gpu01": every bracket contributes the first
  // number of its first range (its zero padding kept), a top-level comma
  // ends the first entry.
  std::string host;
  for (std::size_t i = 0; i < list.size() && list[i] != ','; ++i) {
    if (list[i] != '[') {
      host += list[i];
      continue;
    }
    const std::size_t close = list.find(']', i);
    if (close == std::string::npos) {
      throw InvalidArgument("Slurm node list '" + list + "' has an unclosed '['");
    }
    const std::string inside = list.substr(i + 1, close - i - 1);
    const std::string first = inside.substr(0, inside.find_first_of(",-"));
    if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos) {
      throw InvalidArgument("Slurm node list '" + list + "': '[" + inside +
                            "]' does not start with a number");
    }
    host += first;
    i = close;
  }
  if (host.empty()) throw InvalidArgument("Slurm node list '" + list + "' names no node");
  return host;
}

RendezvousOptions RendezvousOptionsFromEnv(const EnvGetter& getenv, RendezvousOptions defaults) {
  constexpr long long kMaxInt = std::numeric_limits<int>::max();
  RendezvousOptions o = std::move(defaults);
  if (auto addr = getenv("MASTER_ADDR"); addr && !addr->empty()) {
    o.master_addr = *addr;
  } else {
    // Under srun without MASTER_ADDR: rank 0 runs on the first node of the
    // step (block distribution), which is the job's first node when the
    // step spans the job.
    for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      if (auto list = getenv(name); list && !list->empty()) {
        try {
          o.master_addr = FirstHostOfSlurmNodeList(*list);
        } catch (const InvalidArgument& e) {
          throw InvalidArgument(std::string("environment variable ") + name + ": " + e.what());
        }
        break;
      }
    }
  }
  if (auto port = ReadInt(getenv, "MASTER_PORT", 1, 65535))
    o.master_port = static_cast<uint16_t>(*port);
  if (auto rank = ReadFirstInt(getenv, {"RANK", "SLURM_PROCID"}, 0, kMaxInt))
    o.rank = static_cast<int>(*rank);
  if (auto world = ReadFirstInt(getenv, {"WORLD_SIZE", "SLURM_NTASKS"}, 1, kMaxInt)) {
    o.world_size = static_cast<int>(*world);
  }
  if (auto local = ReadFirstInt(getenv, {"LOCAL_RANK", "SLURM_LOCALID"}, 0, kMaxInt)) {
    o.local_rank = static_cast<int>(*local);
  }
  if (auto local_world = ReadInt(getenv, "LOCAL_WORLD_SIZE", 1, kMaxInt)) {
    o.local_world_size = static_cast<int>(*local_world);
  }
  o.Validate();
  return o;
}

}  // namespace rlswarm::learner
