#include "envs/plugin_env.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "common/errors.h"
#include "envs/env_failure.h"
#include "envs/plugin_library.h"
#include "envs/plugin_spec.h"

namespace rlswarm::envs {
namespace {

// Room for create's message; longer ones are cut.
constexpr std::size_t kCreateErrorBytes = 4096;

// Owns a created instance until PluginEnv takes it, so that an invalid spec
// does not leak it.
class Instance {
 public:
  Instance(const rlswarm_env_plugin& table, void* env) : table_(table), env_(env) {}
  ~Instance() {
    if (env_) table_.destroy(env_);
  }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  void* get() const { return env_; }
  void* release() { return std::exchange(env_, nullptr); }

 private:
  const rlswarm_env_plugin& table_;
  void* env_;
};

}  // namespace

std::unique_ptr<PluginEnv> PluginEnv::Create(std::string_view address_text,
                                             const EnvOptions& options) {
  const PluginAddress address = ParsePluginAddress(address_text);
  const std::string where = address.ToString();
  std::shared_ptr<const PluginLibrary> library = PluginLibrary::Load(address);
  const rlswarm_env_plugin& table = library->Table(address);

  const std::string config = options.kwargs_json.empty() ? "{}" : options.kwargs_json;
  std::vector<char> error(kCreateErrorBytes, '\0');
  Instance instance(table, table.create(config.c_str(), error.data(), error.size()));
  if (instance.get() == nullptr) {
    error.back() = '\0';  // a plugin that filled the buffer without its NUL
    throw InvalidArgument(where + ": create failed with config " + config + ": " +
                          (error[0] != '\0' ? error.data() : "(the plugin gave no message)"));
  }

  rlswarm_env_spec plugin_spec;
  std::memset(&plugin_spec, 0, sizeof(plugin_spec));
  table.spec(instance.get(), &plugin_spec);
  EnvSpec spec = ToEnvSpec(plugin_spec, where);
  if (options.max_episode_steps) spec.max_episode_steps = *options.max_episode_steps;

  // Not make_unique: the constructor is private.
  void* env = instance.release();
  try {
    return std::unique_ptr<PluginEnv>(
        new PluginEnv(std::move(spec), where, std::move(library), table, env));
  } catch (...) {
    table.destroy(env);
    throw;
  }
}

PluginEnv::PluginEnv(EnvSpec spec, std::string address,
                     std::shared_ptr<const PluginLibrary> library, const rlswarm_env_plugin& table,
                     void* instance)
    : Env(std::move(spec)),
      address_(std::move(address)),
      library_(std::move(library)),
      table_(table),
      instance_(instance),
      observation_(this->spec().observation.NumBytes()) {}

PluginEnv::~PluginEnv() { table_.destroy(instance_); }

void PluginEnv::Fail(const char* what) {
  failed_ = true;
  const char* message = table_.last_error(instance_);
  throw EnvFailure(address_ + " (" + spec().name + "): " + what + " failed: " +
                   (message && message[0] != '\0' ? message : "(the plugin gave no message)"));
}

void PluginEnv::ResetState() {
  // Env has already reseeded rng() when the Reset had a seed; rng() is the
  // source only of the first seed of a never-seeded env.
  std::optional<std::uint64_t> seed = reset_seed();
  if (!seed && !seeded_) seed = rng().NextU64();
  failed_ = true;  // until the reset succeeds
  if (table_.reset(instance_, seed ? &*seed : nullptr, observation_.data()) != 0) Fail("reset");
  seeded_ = seeded_ || seed.has_value();
  failed_ = false;
}

// The hot path: one indirect call, and the rare failures out of line so that
// Call stays small enough to inline into both Advance overloads.
inline Env::Transition PluginEnv::Call(const void* action) {
  if (failed_) [[unlikely]] {
    StepAfterFailure();
  }
  rlswarm_step_result result{};
  if (table_.step(instance_, action, observation_.data(), &result) != 0) [[unlikely]] {
    Fail("step");
  }
  if (!std::isfinite(result.reward)) [[unlikely]] {
    NonFiniteReward(result.reward);
  }
  return {result.reward, result.terminated != 0, result.truncated != 0};
}

Env::Transition PluginEnv::Advance(std::int64_t action) { return Call(&action); }

Env::Transition PluginEnv::Advance(std::span<const float> action) { return Call(action.data()); }

void PluginEnv::StepAfterFailure() const {
  throw FailedPrecondition(address_ + " (" + spec().name +
                           "): step after a failed reset or step; call Reset");
}

void PluginEnv::NonFiniteReward(float reward) {
  failed_ = true;
  throw EnvFailure(address_ + " (" + spec().name + "): step returned the reward " +
                   std::to_string(reward));
}

void PluginEnv::WriteObservation(std::byte* out) const {
  std::memcpy(out, observation_.data(), observation_.size());
}

}  // namespace rlswarm::envs
