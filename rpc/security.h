#pragma once

// CURVE encryption and authentication for every rpc socket (ZeroMQ's
// CurveZMQ, RFC 26, with a ZAP handler, RFC 27).
//
// Off by default (loopback); `security.curve: true` in a config turns it on
// for the whole system. Then every server socket has a long-term key pair,
// every client socket its own key pair plus the server's public key, and a
// server admits only clients whose public key is listed in
// `authorized_clients_dir` (one `*.key` public key file per client).
// A server with CURVE on but no readable authorized keys fails closed.

#include <string>
#include <vector>

namespace rlswarm::rpc {

// Z85-encoded (40 characters) CURVE keys.
struct KeyPair {
  std::string public_key;
  std::string secret_key;
};

// Generates a new key pair (zmq_curve_keypair); throws Internal if libzmq
// was built without CURVE.
KeyPair GenerateKeyPair();

// Writes `<path_prefix>.key` (public key only, shareable) and
// `<path_prefix>.key_secret` (both keys, mode 0600), atomically. Throws
// what common/atomic_file.h's ThrowFileError says: NotFound for a missing
// directory, ResourceExhausted for a full disk, FailedPrecondition for no
// permission, Unavailable for other I/O errors.
void WriteKeyPair(const std::string& path_prefix, const KeyPair& keys);
// Reads a file written by WriteKeyPair (either one); the secret key is empty
// when reading a public `.key` file. Throws NotFound / InvalidArgument naming
// the file.
KeyPair ReadKeyFile(const std::string& path);
// Public keys of every `*.key` file in `dir`; throws NotFound if there is
// none, so an empty directory cannot silently admit nobody or everybody.
std::vector<std::string> ReadAuthorizedKeys(const std::string& dir);

struct SecurityOptions {
  bool curve = false;
  // Server side: its own key pair (a `.key_secret` file) and the directory
  // of admitted client public keys.
  std::string server_secret_key_file;
  std::string authorized_clients_dir;
  // Client side: its own key pair and the server's public key file.
  std::string client_secret_key_file;
  std::string server_public_key_file;

  void Validate() const;  // throws InvalidArgument naming the missing field
};

}  // namespace rlswarm::rpc
