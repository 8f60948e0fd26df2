#pragma once

// PluginEnv: an environment from a shared library that implements the C ABI
// of envs/plugin_api.h ("plugin:PATH.so[:NAME]"), stepped through Env like
// the built-in envs, in a VectorEnv at their speed (one indirect call and a
// copy of the observation per step).
//
// Randomness stays in the plugin: Reset(seed) hands the seed to the plugin's
// reset, Reset(nullopt) asks it to continue its own stream, and an env that
// was never seeded gets a seed drawn from std::random_device (Env's
// generator) on its first reset, so a plugin that follows the ABI is
// deterministic exactly as the built-in envs are.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "envs/env.h"
#include "envs/plugin_api.h"
#include "envs/registry.h"

namespace rlswarm::envs {

class PluginLibrary;

// Not thread-safe (see Env). Envs of one library may be stepped on different
// threads (the ABI asks plugins to allow it).
class PluginEnv final : public Env {
 public:
  // Creates env `address` ("PATH.so[:NAME]", what follows "plugin:") with
  // options.kwargs_json ("{}" when empty) as its create config;
  // options.max_episode_steps overrides the spec's time limit. Loads the
  // library on first use (PluginLibrary). Throws NotFound for a missing file
  // or an unknown NAME; InvalidArgument for a library that cannot be loaded
  // or is not a plugin, another ABI version, an invalid spec (plugin_spec.h)
  // or a create that fails, each naming the address and, where the plugin
  // gave one, its message.
  static std::unique_ptr<PluginEnv> Create(std::string_view address, const EnvOptions& options);

  ~PluginEnv() override;

  // "plugin:PATH[:NAME]", as written.
  const std::string& address() const { return address_; }

 private:
  PluginEnv(EnvSpec spec, std::string address, std::shared_ptr<const PluginLibrary> library,
            const rlswarm_env_plugin& table, void* instance);

  // Throw EnvFailure with the plugin's last_error when its reset or step fails;
  // a failed env must be Reset before it is stepped again.
  void ResetState() override;
  Transition Advance(std::int64_t action) override;
  Transition Advance(std::span<const float> action) override;
  Transition Call(const void* action);
  void WriteObservation(std::byte* out) const override;
  [[noreturn]] void Fail(const char* what);
  [[noreturn]] void StepAfterFailure() const;
  [[noreturn]] void NonFiniteReward(float reward);

  std::string address_;
  std::shared_ptr<const PluginLibrary> library_;  // keeps the code of table_ loaded
  const rlswarm_env_plugin& table_;
  void* instance_;  // what the plugin's create returned; destroyed with this
  // The plugin writes here and WriteObservation copies out, since Env asks
  // for the observation after Advance.
  std::vector<std::byte> observation_;
  bool seeded_ = false;  // the plugin's generator has had a seed
  bool failed_ = false;  // the last reset or step failed
};

}  // namespace rlswarm::envs
