#pragma once

// The one error model of rlswarm (see STYLE.md, "Errors"): every failure that a
// caller can act on is an exception of this small typed hierarchy. The rpc
// layer maps each type to a status code on the wire and back, so a client
// catches the same type that the server threw.

#include <stdexcept>
#include <string>
#include <string_view>

namespace rlswarm {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kFailedPrecondition = 3,
  kDeadlineExceeded = 4,
  kUnavailable = 5,
  kResourceExhausted = 6,
  kCancelled = 7,
  kDataLoss = 8,
  kInternal = 9,
};

std::string_view StatusCodeName(StatusCode code);

// Base of every rlswarm exception.
class Error : public std::runtime_error {
 public:
  Error(StatusCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

#define RLSWARM_DEFINE_ERROR(Name)                                                     \
  class Name : public Error {                                                          \
   public:                                                                             \
    explicit Name(const std::string& message) : Error(StatusCode::k##Name, message) {} \
  }

// The caller passed something malformed: a bad action, shape, config value.
RLSWARM_DEFINE_ERROR(InvalidArgument);
// A named thing (an env, a method, a checkpoint) does not exist.
RLSWARM_DEFINE_ERROR(NotFound);
// The call is valid but not in the current state (e.g. stepping a finished episode).
RLSWARM_DEFINE_ERROR(FailedPrecondition);
RLSWARM_DEFINE_ERROR(DeadlineExceeded);
RLSWARM_DEFINE_ERROR(Unavailable);
RLSWARM_DEFINE_ERROR(ResourceExhausted);
RLSWARM_DEFINE_ERROR(Cancelled);
// Stored data is truncated or corrupt.
RLSWARM_DEFINE_ERROR(DataLoss);
RLSWARM_DEFINE_ERROR(Internal);

#undef RLSWARM_DEFINE_ERROR

// Throws the exception type that matches `code` (kOk is a programmer error).
[[noreturn]] void ThrowError(StatusCode code, const std::string& message);

}  // namespace rlswarm
