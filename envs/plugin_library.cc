#include "envs/plugin_library.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <system_error>

#include "common/errors.h"
#include "common/thread_annotations.h"
#include "envs/registry.h"

namespace rlswarm::envs {
namespace {

// dlopen once per file: keyed by the canonical path, so "./x.so" and its
// absolute path are one library. Leaked on purpose (never unloaded).
struct LoadedLibraries {
  Mutex mu;
  std::map<std::string, std::shared_ptr<const PluginLibrary>> by_path RLSWARM_GUARDED_BY(mu);
};

LoadedLibraries& Loaded() {
  static auto* loaded = new LoadedLibraries;
  return *loaded;
}

std::string Canonical(const PluginAddress& address) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path canonical = fs::canonical(address.path, error);
  if (error) {
    std::string where;
    if (fs::path(address.path).is_relative()) {
      where = " (relative to the working directory " + fs::current_path(error).string() + ")";
    }
    throw NotFound(address.ToString() + ": no such file" + where);
  }
  if (!fs::is_regular_file(canonical, error)) {
    throw InvalidArgument(address.ToString() + ": " + canonical.string() + " is not a file");
  }
  return canonical.string();
}

}  // namespace

std::string PluginAddress::ToString() const {
  return std::string(kPluginPrefix) + path + (name ? ":" + *name : "");
}

PluginAddress ParsePluginAddress(std::string_view address) {
  PluginAddress a;
  const std::size_t colon = address.rfind(':');
  if (colon != std::string_view::npos && address.find('/', colon) == std::string_view::npos) {
    a.path = std::string(address.substr(0, colon));
    a.name = std::string(address.substr(colon + 1));
  } else {
    a.path = std::string(address);
  }
  if (a.path.empty()) {
    throw InvalidArgument(a.ToString() + ": no library path; expected plugin:PATH.so[:NAME]");
  }
  if (a.name && a.name->empty()) {
    throw InvalidArgument(a.ToString() + ": empty NAME after ':'; expected plugin:PATH.so[:NAME]");
  }
  return a;
}

std::shared_ptr<const PluginLibrary> PluginLibrary::Load(const PluginAddress& address) {
  std::string path = Canonical(address);
  LoadedLibraries& loaded = Loaded();
  MutexLock lock(loaded.mu);
  if (auto it = loaded.by_path.find(path); it != loaded.by_path.end()) return it->second;

  // The canonical path contains a '/', so dlopen opens exactly that file
  // instead of searching LD_LIBRARY_PATH and the system's directories.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw InvalidArgument(address.ToString() +
                          ": cannot load the library: " + (why ? why : "unknown dlopen error"));
  }
  dlerror();  // clears any earlier error, as dlsym's documentation asks
  void* symbol = dlsym(handle, RLSWARM_ENV_PLUGIN_ENTRY_NAME);
  if (symbol == nullptr) {
    dlclose(handle);  // nothing of it has run but its constructors
    throw InvalidArgument(address.ToString() + ": not an rlswarm env plugin: it does not export " +
                          RLSWARM_ENV_PLUGIN_ENTRY_NAME + " (see rlswarm/plugin_api.h)");
  }
  auto entry = reinterpret_cast<rlswarm_env_plugin_entry>(symbol);
  std::shared_ptr<const PluginLibrary> library(new PluginLibrary(path, entry));
  loaded.by_path.emplace(std::move(path), library);
  return library;
}

const rlswarm_env_plugin& PluginLibrary::Table(const PluginAddress& address) const {
  const rlswarm_env_plugin* table = entry_(address.name ? address.name->c_str() : nullptr);
  if (table == nullptr) {
    throw NotFound(address.ToString() + ": the library has " +
                   (address.name ? "no env named '" + *address.name + "'" : "no default env") +
                   " (" RLSWARM_ENV_PLUGIN_ENTRY_NAME " returned NULL)");
  }
  if (table->abi_version != RLSWARM_PLUGIN_ABI_VERSION) {
    throw InvalidArgument(address.ToString() + ": plugin ABI version " +
                          std::to_string(table->abi_version) + ", this rlswarm takes version " +
                          std::to_string(RLSWARM_PLUGIN_ABI_VERSION) +
                          ": rebuild the plugin against this rlswarm's plugin_api.h");
  }
  const char* missing = !table->create       ? "create"
                        : !table->spec       ? "spec"
                        : !table->reset      ? "reset"
                        : !table->step       ? "step"
                        : !table->last_error ? "last_error"
                        : !table->destroy    ? "destroy"
                                             : nullptr;
  if (missing) {
    throw InvalidArgument(address.ToString() + ": the plugin's function table has no '" + missing +
                          "'");
  }
  return *table;
}

}  // namespace rlswarm::envs
