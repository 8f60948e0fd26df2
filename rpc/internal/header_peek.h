#pragma once

// Internal: the request id of a header that DecodeHeader rejected, so that
// the server can still answer InvalidArgument (a shape over the limits, an
// unknown dtype, ...) instead of leaving the caller to time out. Reads only
// the fields the wire format fixes at known positions (wire.cc: an array
// starting [version, kind, method, request_id, ...]), under the same
// allocation limits as DecodeHeader.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "rpc/wire.h"

namespace rlswarm::rpc::internal {

// The request id if `frame` is a MessagePack array of the current wire
// version whose fourth element is a non-zero unsigned integer; else nullopt.
// Never throws.
std::optional<std::uint64_t> PeekRequestId(std::span<const std::byte> frame,
                                           const WireLimits& limits);

}  // namespace rlswarm::rpc::internal
