#pragma once

// Maps what c10d and Gloo throw (c10::Error with a free-form message) onto
// rlswarm's typed errors, with the context a user needs: which rank, which
// collective, which timeout.

#include <chrono>
#include <exception>
#include <string>

namespace rlswarm::learner {

// Throws DeadlineExceeded when `cause` reports a timeout, Unavailable
// otherwise (a peer closed its connection, a store is unreachable). The
// message is "<context>: <what>" plus the timeout in force.
[[noreturn]] void ThrowCollectiveError(const std::string& context, const std::exception& cause,
                                       std::chrono::milliseconds timeout);

}  // namespace rlswarm::learner
