#include "rpc/internal/context.h"

namespace rlswarm::rpc::internal {

zmq::context_t& ProcessContext() {
  static zmq::context_t* context = [] {
    auto* c = new zmq::context_t(1);
    // Blocky off: zmq_ctx_term does not wait for sockets with pending
    // messages (belt and braces with explicit linger on every socket).
    c->set(zmq::ctxopt::blocky, 0);
    return c;
  }();
  return *context;
}

}  // namespace rlswarm::rpc::internal
