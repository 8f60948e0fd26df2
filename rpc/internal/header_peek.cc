#include "rpc/internal/header_peek.h"

#include <algorithm>
#include <msgpack.hpp>

namespace rlswarm::rpc::internal {

std::optional<std::uint64_t> PeekRequestId(std::span<const std::byte> frame,
                                           const WireLimits& limits) {
  if (frame.size() > limits.max_header_bytes) return std::nullopt;
  try {
    const msgpack::unpack_limit unpack_limits(
        /*array=*/std::max<std::size_t>(limits.max_payloads, limits.max_dims) + 16,
        /*map=*/0,
        /*str=*/std::max(limits.max_method_bytes, limits.max_error_bytes),
        /*bin=*/0, /*ext=*/0, /*depth=*/4);
    std::size_t offset = 0;
    const msgpack::object_handle handle =
        msgpack::unpack(reinterpret_cast<const char*>(frame.data()), frame.size(), offset, nullptr,
                        nullptr, unpack_limits);
    const msgpack::object& root = handle.get();
    if (root.type != msgpack::type::ARRAY || root.via.array.size < 4) return std::nullopt;
    const msgpack::object* fields = root.via.array.ptr;
    if (fields[0].type != msgpack::type::POSITIVE_INTEGER || fields[0].via.u64 != kWireVersion) {
      return std::nullopt;
    }
    if (fields[3].type != msgpack::type::POSITIVE_INTEGER || fields[3].via.u64 == 0) {
      return std::nullopt;
    }
    return fields[3].via.u64;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace rlswarm::rpc::internal
