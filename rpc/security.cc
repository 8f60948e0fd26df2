// Key files and SecurityOptions (see security.h).
//
// Key file format (a flat, line-based cousin of CZMQ's zcert files):
//
//   # comment lines and blank lines are ignored
//   public-key = "<40 Z85 characters>"
//   secret-key = "<40 Z85 characters>"      (only in .key_secret files)
//
// Keys are ZeroMQ's Z85 encoding (RFC 32) of the 32-byte Curve25519 keys.
// Z85 has no '"' character, so the quotes are unambiguous.

#include "rpc/security.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace rlswarm::rpc {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kZ85KeySize = 40;
// A key file is a few hundred bytes; anything much larger is the wrong file.
constexpr std::uintmax_t kMaxKeyFileBytes = 64 * 1024;

// Why `key` is not a Z85-encoded CURVE key, or nullopt if it is one.
std::optional<std::string> Z85KeyProblem(const std::string& key) {
  if (key.size() != kZ85KeySize) {
    return "must be " + std::to_string(kZ85KeySize) + " Z85 characters, got " +
           std::to_string(key.size());
  }
  std::array<std::uint8_t, 32> binary;
  if (zmq_z85_decode(binary.data(), key.c_str()) == nullptr) {
    return "is not valid Z85 (ZeroMQ RFC 32)";
  }
  return std::nullopt;
}

// The public key that belongs to the (valid) Z85 secret key `secret`.
std::string PublicKeyOf(const std::string& secret) {
  std::array<char, kZ85KeySize + 1> public_key{};
  if (zmq_curve_public(public_key.data(), secret.c_str()) != 0) {
    throw Internal("zmq_curve_public failed: " + std::string(zmq_strerror(zmq_errno())) +
                   " (libzmq without CURVE support?)");
  }
  return public_key.data();
}

std::string Trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

[[noreturn]] void ThrowIo(const std::string& path, const std::string& what, int err) {
  throw Unavailable(path + ": " + what + ": " + std::strerror(err));
}

void RequireValidKeyPair(const KeyPair& keys, const std::string& what) {
  if (auto problem = Z85KeyProblem(keys.public_key)) {
    throw InvalidArgument(what + ": public key " + *problem);
  }
  if (auto problem = Z85KeyProblem(keys.secret_key)) {
    throw InvalidArgument(what + ": secret key " + *problem);
  }
  if (PublicKeyOf(keys.secret_key) != keys.public_key) {
    throw InvalidArgument(what + ": the public key does not belong to the secret key");
  }
}

}  // namespace

KeyPair GenerateKeyPair() {
  std::array<char, kZ85KeySize + 1> public_key{};
  std::array<char, kZ85KeySize + 1> secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
    throw Internal("zmq_curve_keypair failed: " + std::string(zmq_strerror(zmq_errno())) +
                   " (libzmq built without CURVE/libsodium?)");
  }
  return KeyPair{public_key.data(), secret_key.data()};
}

void WriteKeyPair(const std::string& path_prefix, const KeyPair& keys) {
  RequireValidKeyPair(keys, "WriteKeyPair(" + path_prefix + ")");
  // The secret file first: it holds both keys, so a crash between the two
  // writes leaves nothing that cannot be regenerated from it.
  WriteFileAtomically(path_prefix + ".key_secret",
                      "# rlswarm CURVE key pair (ZeroMQ Z85, RFC 32). SECRET: never share this\n"
                      "# file; share the matching .key file instead.\n"
                      "public-key = \"" +
                          keys.public_key +
                          "\"\n"
                          "secret-key = \"" +
                          keys.secret_key + "\"\n",
                      0600);
  WriteFileAtomically(path_prefix + ".key",
                      "# rlswarm CURVE public key (ZeroMQ Z85, RFC 32). Shareable: copy it into\n"
                      "# the authorized_clients/ directory of each server that should admit it.\n"
                      "public-key = \"" +
                          keys.public_key + "\"\n",
                      0644);
}

KeyPair ReadKeyFile(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) throw NotFound(path + ": no such key file");
  if (!fs::is_regular_file(status)) throw InvalidArgument(path + ": not a regular file");
  if (const auto size = fs::file_size(path, ec); !ec && size > kMaxKeyFileBytes) {
    throw InvalidArgument(path + ": too large to be a key file");
  }
  std::ifstream in(path);
  if (!in) ThrowIo(path, "cannot open key file", errno);

  KeyPair keys;
  int public_line = 0;
  int secret_line = 0;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const std::string text = Trim(line);
    if (text.empty() || text[0] == '#') continue;
    const auto eq = text.find('=');
    if (eq == std::string::npos) {
      throw InvalidArgument(where + "expected 'public-key = \"...\"' or 'secret-key = \"...\"'");
    }
    const std::string name = Trim(text.substr(0, eq));
    std::string value = Trim(text.substr(eq + 1));
    if (value.size() < 2 || value.front() != '"' || value.back() != '"') {
      throw InvalidArgument(where + name + " value must be in double quotes");
    }
    value = value.substr(1, value.size() - 2);
    int* seen;
    std::string* target;
    if (name == "public-key") {
      seen = &public_line;
      target = &keys.public_key;
    } else if (name == "secret-key") {
      seen = &secret_line;
      target = &keys.secret_key;
    } else {
      throw InvalidArgument(where + "unknown key '" + name +
                            "' (expected public-key or secret-key)");
    }
    if (*seen != 0) {
      throw InvalidArgument(where + name + " repeats line " + std::to_string(*seen));
    }
    if (auto problem = Z85KeyProblem(value)) throw InvalidArgument(where + name + " " + *problem);
    *seen = number;
    *target = value;
  }
  if (in.bad()) ThrowIo(path, "cannot read key file", errno);
  if (public_line == 0) throw InvalidArgument(path + ": no public-key line");
  if (secret_line != 0 && PublicKeyOf(keys.secret_key) != keys.public_key) {
    throw InvalidArgument(path + ":" + std::to_string(secret_line) +
                          ": secret-key does not belong to the public-key of line " +
                          std::to_string(public_line));
  }
  if (secret_line != 0) {
    const auto perms = fs::status(path, ec).permissions();
    if (!ec && (perms & (fs::perms::group_all | fs::perms::others_all)) != fs::perms::none) {
      spdlog::warn("{}: holds a secret key but others may read it (chmod 600 {})", path, path);
    }
  }
  return keys;
}

std::vector<std::string> ReadAuthorizedKeys(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw NotFound(dir + ": no such directory of authorized client keys");
  }
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".key") files.push_back(it->path().string());
  }
  if (ec) throw Unavailable(dir + ": cannot list directory: " + ec.message());
  std::sort(files.begin(), files.end());  // deterministic errors and order

  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const std::string& file : files) {
    if (!fs::is_regular_file(file, ec)) continue;  // e.g. a directory named x.key
    std::string key = ReadKeyFile(file).public_key;
    if (seen.insert(key).second) keys.push_back(std::move(key));
  }
  if (keys.empty()) {
    throw NotFound(dir +
                   ": no *.key public key file: a CURVE server with no authorized client "
                   "does not start (fail closed)");
  }
  return keys;
}

void SecurityOptions::Validate() const {
  if (!curve) return;
  const bool server_any = !server_secret_key_file.empty() || !authorized_clients_dir.empty();
  const bool client_any = !client_secret_key_file.empty() || !server_public_key_file.empty();
  if (!server_any && !client_any) {
    throw InvalidArgument(
        "SecurityOptions: curve is on but no key file is set (a server needs "
        "server_secret_key_file and authorized_clients_dir, a client needs "
        "client_secret_key_file and server_public_key_file)");
  }
  const auto require = [](const std::string& value, const char* field, const char* role) {
    if (value.empty()) {
      throw InvalidArgument(std::string("SecurityOptions.") + field + " is empty; a CURVE " + role +
                            " needs it");
    }
  };
  if (server_any) {
    require(server_secret_key_file, "server_secret_key_file", "server");
    require(authorized_clients_dir, "authorized_clients_dir", "server");
  }
  if (client_any) {
    require(client_secret_key_file, "client_secret_key_file", "client");
    require(server_public_key_file, "server_public_key_file", "client");
  }
}

}  // namespace rlswarm::rpc
