#pragma once

// Env plugin libraries (envs/plugin_api.h): where "plugin:PATH.so[:NAME]"
// points, and the shared library behind it, loaded once per file.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "envs/plugin_api.h"

namespace rlswarm::envs {

// The parts of an env name "plugin:PATH.so[:NAME]".
struct PluginAddress {
  std::string path;                 // as written; relative to the working directory
  std::optional<std::string> name;  // NAME; none: the library's default env

  std::string ToString() const;  // "plugin:PATH[:NAME]", for messages
};

// Splits what follows "plugin:". The last ':' starts NAME unless a '/'
// follows it (then it belongs to the path). Throws InvalidArgument for an
// empty path or NAME.
PluginAddress ParsePluginAddress(std::string_view address);

// A loaded plugin library. Libraries are loaded with RTLD_NOW (a missing
// symbol fails here, not in the middle of a run) and RTLD_LOCAL, and never
// unloaded: a plugin may have started threads or registered destructors that
// would run into unmapped code, and DescribeEnv followed by MakeEnv would
// load it twice. Thread-safe.
class PluginLibrary {
 public:
  // The library of `address`, loaded on its first use in this process (the
  // same file under another path shares it). Throws NotFound for a missing
  // file, InvalidArgument when the dynamic loader refuses it (with its
  // message) or it does not export RLSWARM_ENV_PLUGIN_ENTRY_NAME.
  static std::shared_ptr<const PluginLibrary> Load(const PluginAddress& address);

  // The function table of `address.name`, checked: NotFound when the library
  // has no such env, InvalidArgument for another ABI version or a missing
  // function. The table lives as long as the process.
  const rlswarm_env_plugin& Table(const PluginAddress& address) const;

  const std::string& canonical_path() const { return canonical_path_; }

 private:
  PluginLibrary(std::string canonical_path, rlswarm_env_plugin_entry entry)
      : canonical_path_(std::move(canonical_path)), entry_(entry) {}

  std::string canonical_path_;
  rlswarm_env_plugin_entry entry_;
};

}  // namespace rlswarm::envs
