#pragma once

// Internal: the ZeroMQ context every rpc socket of this process uses, so that
// inproc:// endpoints connect any server with any client of the process
// (embedded mode), and one ZAP handler serves all of them.

#include <zmq.hpp>

namespace rlswarm::rpc::internal {

// Created on first use and intentionally never destroyed: destroying a
// context at exit blocks while any socket is open, and rpc objects may be
// static. Every socket sets ZMQ_LINGER explicitly, so nothing is left to
// flush.
zmq::context_t& ProcessContext();

}  // namespace rlswarm::rpc::internal
