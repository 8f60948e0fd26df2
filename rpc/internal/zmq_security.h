#pragma once

// Internal (never included by a public header): applies SecurityOptions to
// ZeroMQ sockets and authenticates CURVE clients through ZAP (RFC 27).
//
// One ZAP handler serves the whole process context (ZeroMQ allows one per
// context, at inproc://zeromq.zap.01). Each CURVE server socket gets its own
// ZAP domain with its own list of admitted client keys, so servers with
// different policies coexist. The handler thread starts with the first
// registered domain and joins when the last one is released.

#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "rpc/security.h"

namespace rlswarm::rpc::internal {

// Keeps a server socket's ZAP domain registered; release it after the socket
// is closed.
class ZapDomain {
 public:
  virtual ~ZapDomain() = default;
  virtual const std::string& name() const = 0;
  // Handshakes admitted / denied in this domain so far.
  virtual std::uint64_t admitted() const = 0;
  virtual std::uint64_t denied() const = 0;
};

// Makes `socket` (of ProcessContext()) a CURVE server with the key pair from
// options.server_secret_key_file, admitting only the public keys in
// options.authorized_clients_dir, and sets ZMQ_ZAP_ENFORCE_DOMAIN so the
// handshake fails closed if no handler answers. Call before bind. Returns
// nullptr when !options.curve. Throws NotFound / InvalidArgument for missing
// or bad key files (fail closed: the server does not start).
std::unique_ptr<ZapDomain> ConfigureCurveServer(zmq::socket_t& socket,
                                                const SecurityOptions& options);

// Makes `socket` a CURVE client (own key pair + server public key). Call
// before connect. No-op when !options.curve.
void ConfigureCurveClient(zmq::socket_t& socket, const SecurityOptions& options);

}  // namespace rlswarm::rpc::internal
