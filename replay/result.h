#pragma once

// Result<T>: a value or the exception that prevented it, handed to the
// callbacks of the table's asynchronous calls (which cannot throw to their
// caller). value() rethrows the stored exception, so a callback that does
// not care can write `auto batch = result.value();` inside a try block, and
// the service maps the exception type to a status on the wire as usual.

#include <exception>
#include <utility>
#include <variant>

namespace rlswarm::replay {

template <class T>
class Result {
 public:
  explicit Result(T value) : state_(std::move(value)) {}
  explicit Result(std::exception_ptr error) : state_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }
  // The value; rethrows the error if there is none.
  T& value() {
    if (!ok()) std::rethrow_exception(std::get<std::exception_ptr>(state_));
    return std::get<T>(state_);
  }
  // The error, or null.
  std::exception_ptr error() const { return ok() ? nullptr : std::get<std::exception_ptr>(state_); }

 private:
  std::variant<T, std::exception_ptr> state_;
};

}  // namespace rlswarm::replay
