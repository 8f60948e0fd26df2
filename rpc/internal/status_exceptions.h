#pragma once

// Internal: the two directions of the rpc error mapping. A handler's
// exception becomes a (status, message) pair on the wire; a (status, message)
// received by a client becomes an exception_ptr of the same rlswarm::Error
// type that ThrowError would throw, ready for std::promise::set_exception.

#include <exception>
#include <string>

#include "common/errors.h"

namespace rlswarm::rpc::internal {

struct WireStatus {
  StatusCode code = StatusCode::kInternal;
  std::string message;
};

// The exception type of `code` (kOk, a programmer error, gives Internal).
std::exception_ptr MakeStatusException(StatusCode code, const std::string& message);

// What a server replies for a handler that threw `error`: an rlswarm::Error
// keeps its code and message, any other std::exception is Internal with its
// what(), anything else Internal("unknown exception").
WireStatus StatusFromException(std::exception_ptr error);

}  // namespace rlswarm::rpc::internal
