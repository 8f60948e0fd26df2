#pragma once

// The wire format of every rpc message: one header frame (MessagePack, via
// msgpack-cxx) followed by one frame per payload.
//
//   client -> server:  [header][payload 0]...[payload n-1]
//   server sees:       [peer identity][header][payload 0]...   (ROUTER)
//
// The header names the method, carries the request id, the status of a
// reply, the caller's remaining deadline, and each payload's dtype and shape.
// Decoding trusts nothing: sizes are bounded before anything is allocated,
// and every payload frame must be exactly as long as its dtype and shape say.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/errors.h"

namespace rlswarm::rpc {

inline constexpr std::uint8_t kWireVersion = 1;

enum class MessageKind : std::uint8_t { kRequest = 1, kReply = 2 };

struct PayloadDescriptor {
  DType dtype = DType::kUInt8;
  std::vector<std::int64_t> shape;
};

struct Header {
  MessageKind kind = MessageKind::kRequest;
  std::string method;
  std::uint64_t request_id = 0;
  StatusCode status = StatusCode::kOk;  // replies
  std::string error_message;            // replies with status != kOk
  // Milliseconds the caller will still wait (requests); 0 = no deadline.
  // Relative, because clocks on two machines disagree.
  std::int64_t timeout_ms = 0;
  bool idempotent = false;
  std::vector<PayloadDescriptor> payloads;
};

// Bounds on what a peer may make us decode or allocate.
struct WireLimits {
  std::size_t max_header_bytes = 64 * 1024;
  std::size_t max_method_bytes = 256;
  std::size_t max_error_bytes = 16 * 1024;
  std::size_t max_payloads = 1024;
  std::size_t max_dims = 16;
  std::uint64_t max_payload_bytes = 1ULL << 32;  // also set ZMQ_MAXMSGSIZE
};

std::string EncodeHeader(const Header& header);
// The same into `out` (cleared first): a caller that keeps `out` between
// calls reuses its capacity.
void EncodeHeader(const Header& header, std::string& out);

// Throws InvalidArgument saying what is wrong: truncated or malformed
// MessagePack, wrong wire version, unknown kind/dtype/status, a field of the
// wrong type or over its limit, a negative dimension.
Header DecodeHeader(std::span<const std::byte> frame, const WireLimits& limits = {});
// The same into `out`, whose strings and vectors keep their capacity (every
// field is overwritten). On a throw, `out` holds an unspecified mix.
void DecodeHeader(std::span<const std::byte> frame, const WireLimits& limits, Header& out);

// Bytes a payload with this descriptor occupies; throws InvalidArgument if
// the element count overflows or exceeds limits.max_payload_bytes.
std::uint64_t PayloadBytes(const PayloadDescriptor& descriptor, const WireLimits& limits = {});

// Checks that `frame_sizes` (the payload frames that followed the header)
// match the header's descriptors in count and size; throws InvalidArgument
// naming the first mismatch.
void CheckPayloadFrames(const Header& header, std::span<const std::size_t> frame_sizes,
                        const WireLimits& limits = {});

}  // namespace rlswarm::rpc
