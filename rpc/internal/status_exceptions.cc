#include "rpc/internal/status_exceptions.h"

namespace rlswarm::rpc::internal {

std::exception_ptr MakeStatusException(StatusCode code, const std::string& message) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return std::make_exception_ptr(InvalidArgument(message));
    case StatusCode::kNotFound:
      return std::make_exception_ptr(NotFound(message));
    case StatusCode::kFailedPrecondition:
      return std::make_exception_ptr(FailedPrecondition(message));
    case StatusCode::kDeadlineExceeded:
      return std::make_exception_ptr(DeadlineExceeded(message));
    case StatusCode::kUnavailable:
      return std::make_exception_ptr(Unavailable(message));
    case StatusCode::kResourceExhausted:
      return std::make_exception_ptr(ResourceExhausted(message));
    case StatusCode::kCancelled:
      return std::make_exception_ptr(Cancelled(message));
    case StatusCode::kDataLoss:
      return std::make_exception_ptr(DataLoss(message));
    case StatusCode::kInternal:
      return std::make_exception_ptr(Internal(message));
    case StatusCode::kOk:
      break;
  }
  return std::make_exception_ptr(Internal("error reply with status OK: " + message));
}

WireStatus StatusFromException(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    if (e.code() == StatusCode::kOk) return {StatusCode::kInternal, e.what()};
    return {e.code(), e.what()};
  } catch (const std::exception& e) {
    return {StatusCode::kInternal, e.what()};
  } catch (...) {
    return {StatusCode::kInternal, "unknown exception"};
  }
}

}  // namespace rlswarm::rpc::internal
