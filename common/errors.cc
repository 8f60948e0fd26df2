#include "common/errors.h"

#include <cstdio>
#include <cstdlib>

namespace rlswarm {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

void ThrowError(StatusCode code, const std::string& message) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      throw InvalidArgument(message);
    case StatusCode::kNotFound:
      throw NotFound(message);
    case StatusCode::kFailedPrecondition:
      throw FailedPrecondition(message);
    case StatusCode::kDeadlineExceeded:
      throw DeadlineExceeded(message);
    case StatusCode::kUnavailable:
      throw Unavailable(message);
    case StatusCode::kResourceExhausted:
      throw ResourceExhausted(message);
    case StatusCode::kCancelled:
      throw Cancelled(message);
    case StatusCode::kDataLoss:
      throw DataLoss(message);
    case StatusCode::kInternal:
      throw Internal(message);
    case StatusCode::kOk:
      break;
  }
  std::fprintf(stderr, "ThrowError called with OK: %s\n", message.c_str());
  std::abort();
}

}  // namespace rlswarm
