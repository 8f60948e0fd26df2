// `rlswarm keygen`: makes a CURVE key pair for `security.curve` (see
// SecuritySection in apps/experiment_config.h for where the files go).

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "common/errors.h"
#include "rpc/security.h"

namespace rlswarm::apps {
namespace {

struct KeygenArgs {
  std::string out;
  bool force = false;
  bool json = false;
};

void RunKeygen(const KeygenArgs& args) {
  namespace fs = std::filesystem;
  const std::string public_file = args.out + ".key";
  const std::string secret_file = args.out + ".key_secret";
  // Replacing a key silently would lock out every peer holding the old one.
  if (!args.force) {
    for (const std::string& file : {public_file, secret_file}) {
      std::error_code ec;
      if (fs::exists(fs::symlink_status(file, ec))) {
        throw FailedPrecondition(file + " already exists; pass --force to replace the key pair " +
                                 "(peers holding the old public key stop accepting it)");
      }
    }
  }
  const fs::path parent = fs::path(args.out).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw Unavailable(parent.string() + ": cannot create directory: " + ec.message());
  }
  const rpc::KeyPair keys = rpc::GenerateKeyPair();
  rpc::WriteKeyPair(args.out, keys);
  if (args.json) {
    std::cout << nlohmann::json{{"public_key", keys.public_key},
                                {"public_key_file", public_file},
                                {"secret_key_file", secret_file}}
                     .dump()
              << "\n";
    return;
  }
  fmt::print("public key  {}\n", keys.public_key);
  fmt::print("wrote       {} (public, shareable)\n", public_file);
  fmt::print("            {} (secret, mode 0600: never copy it to another host)\n", secret_file);
}

}  // namespace

void AddKeygenCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "keygen", "Make a CURVE key pair: PREFIX.key (public) and PREFIX.key_secret (secret)");
  auto args = std::make_shared<KeygenArgs>();
  cmd->add_option("--out", args->out,
                  "path prefix, e.g. keys/server or keys/actor-3 "
                  "(missing directories are created)")
      ->required();
  cmd->add_flag("--force", args->force, "replace existing key files");
  cmd->add_flag("--json", args->json, "print the public key and file names as JSON");
  cmd->callback([args] { RunKeygen(*args); });
}

}  // namespace rlswarm::apps
