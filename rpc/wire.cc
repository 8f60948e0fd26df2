#include "rpc/wire.h"

#include <limits>
#include <msgpack.hpp>

namespace rlswarm::rpc {
namespace {

// The header as MessagePack sees it: an array of plain fields, so that the
// format is documented by this struct alone and stays readable from any
// MessagePack implementation (Python's msgpack.unpackb gives a list).
struct WireDescriptor {
  std::uint8_t dtype = 0;
  std::vector<std::int64_t> shape;
  MSGPACK_DEFINE_ARRAY(dtype, shape);
};

struct WireHeader {
  std::uint8_t version = kWireVersion;
  std::uint8_t kind = 0;
  std::string method;
  std::uint64_t request_id = 0;
  std::int32_t status = 0;
  std::string error_message;
  std::int64_t timeout_ms = 0;
  bool idempotent = false;
  std::vector<WireDescriptor> payloads;
  MSGPACK_DEFINE_ARRAY(version, kind, method, request_id, status, error_message, timeout_ms,
                       idempotent, payloads);
};

// Field counts of the two arrays above. MSGPACK_DEFINE_ARRAY alone would
// fill missing trailing fields with defaults and ignore extra ones, so a
// header cut short (or padded) at a field boundary would decode silently.
constexpr std::uint32_t kHeaderFields = 9;
constexpr std::uint32_t kDescriptorFields = 2;
// First allocation of the encode buffer and of the decode zone. msgpack's
// defaults (8 KiB each) are too big for glibc's per-thread cache, so every
// call used to take a trip through the main heap, where a request that size
// first merges all freed small chunks (malloc_consolidate). With 64 B calls
// and 16 in flight, malloc and free were ~19% of all CPU samples. A header
// of a few payloads fits; bigger ones grow the buffer or zone as needed.
constexpr std::size_t kSmallBufferBytes = 512;

[[noreturn]] void Malformed(const std::string& what) {
  throw InvalidArgument("malformed rpc header: " + what);
}

}  // namespace

std::string EncodeHeader(const Header& header) {
  WireHeader w;
  w.kind = static_cast<std::uint8_t>(header.kind);
  w.method = header.method;
  w.request_id = header.request_id;
  w.status = static_cast<std::int32_t>(header.status);
  w.error_message = header.error_message;
  w.timeout_ms = header.timeout_ms;
  w.idempotent = header.idempotent;
  w.payloads.reserve(header.payloads.size());
  for (const auto& p : header.payloads) {
    w.payloads.push_back({static_cast<std::uint8_t>(p.dtype), p.shape});
  }
  msgpack::sbuffer buffer(kSmallBufferBytes);
  msgpack::pack(buffer, w);
  return std::string(buffer.data(), buffer.size());
}

Header DecodeHeader(std::span<const std::byte> frame, const WireLimits& limits) {
  if (frame.size() > limits.max_header_bytes) {
    Malformed("header of " + std::to_string(frame.size()) + " bytes exceeds the limit of " +
              std::to_string(limits.max_header_bytes));
  }
  WireHeader w;
  try {
    // The unpack limits bound every container and string the peer declares,
    // so a 5-byte header claiming a 4-billion-element array is rejected
    // before anything is allocated.
    const msgpack::unpack_limit unpack_limits(
        /*array=*/std::max<std::size_t>(limits.max_payloads, limits.max_dims) + 16,
        /*map=*/0,
        /*str=*/std::max(limits.max_method_bytes, limits.max_error_bytes),
        /*bin=*/0, /*ext=*/0, /*depth=*/4);
    std::size_t offset = 0;
    msgpack::zone zone(kSmallBufferBytes);  // grows for big headers
    const msgpack::object root =
        msgpack::unpack(zone, reinterpret_cast<const char*>(frame.data()), frame.size(), offset,
                        nullptr, nullptr, unpack_limits);
    if (offset != frame.size()) Malformed("trailing bytes after the header");
    if (root.type != msgpack::type::ARRAY || root.via.array.size != kHeaderFields) {
      Malformed("expected an array of " + std::to_string(kHeaderFields) + " fields");
    }
    const msgpack::object& descriptors = root.via.array.ptr[kHeaderFields - 1];
    if (descriptors.type == msgpack::type::ARRAY) {  // convert() rejects other types
      for (std::uint32_t i = 0; i < descriptors.via.array.size; ++i) {
        const msgpack::object& d = descriptors.via.array.ptr[i];
        if (d.type != msgpack::type::ARRAY || d.via.array.size != kDescriptorFields) {
          Malformed("payload descriptor " + std::to_string(i) + " is not an array of " +
                    std::to_string(kDescriptorFields) + " fields");
        }
      }
    }
    root.convert(w);
  } catch (const InvalidArgument&) {
    throw;
  } catch (const std::exception& e) {
    Malformed(e.what());
  }
  if (w.version != kWireVersion) {
    Malformed("wire version " + std::to_string(w.version) + ", expected " +
              std::to_string(kWireVersion));
  }
  if (w.kind != static_cast<std::uint8_t>(MessageKind::kRequest) &&
      w.kind != static_cast<std::uint8_t>(MessageKind::kReply)) {
    Malformed("unknown message kind " + std::to_string(w.kind));
  }
  if (w.method.size() > limits.max_method_bytes) Malformed("method name too long");
  if (w.error_message.size() > limits.max_error_bytes) Malformed("error message too long");
  if (w.status < 0 || w.status > static_cast<std::int32_t>(StatusCode::kInternal)) {
    Malformed("unknown status " + std::to_string(w.status));
  }
  if (w.timeout_ms < 0) Malformed("negative timeout");
  if (w.payloads.size() > limits.max_payloads) Malformed("too many payloads");

  Header h;
  h.kind = static_cast<MessageKind>(w.kind);
  h.method = std::move(w.method);
  h.request_id = w.request_id;
  h.status = static_cast<StatusCode>(w.status);
  h.error_message = std::move(w.error_message);
  h.timeout_ms = w.timeout_ms;
  h.idempotent = w.idempotent;
  h.payloads.reserve(w.payloads.size());
  for (auto& d : w.payloads) {
    if (d.dtype > static_cast<std::uint8_t>(DType::kFloat64)) {
      Malformed("unknown dtype " + std::to_string(d.dtype));
    }
    if (d.shape.size() > limits.max_dims) Malformed("too many dimensions");
    PayloadDescriptor pd{static_cast<DType>(d.dtype), std::move(d.shape)};
    PayloadBytes(pd, limits);  // rejects negative or overflowing shapes
    h.payloads.push_back(std::move(pd));
  }
  return h;
}

std::uint64_t PayloadBytes(const PayloadDescriptor& descriptor, const WireLimits& limits) {
  std::uint64_t bytes = DTypeSize(descriptor.dtype);
  for (std::int64_t d : descriptor.shape) {
    if (d < 0) Malformed("negative dimension " + std::to_string(d));
    if (d != 0 && bytes > limits.max_payload_bytes / static_cast<std::uint64_t>(d)) {
      Malformed("payload shape exceeds the limit of " + std::to_string(limits.max_payload_bytes) +
                " bytes");
    }
    bytes *= static_cast<std::uint64_t>(d);
  }
  if (bytes > limits.max_payload_bytes) Malformed("payload exceeds the size limit");
  return bytes;
}

void CheckPayloadFrames(const Header& header, std::span<const std::size_t> frame_sizes,
                        const WireLimits& limits) {
  if (frame_sizes.size() != header.payloads.size()) {
    throw InvalidArgument("header declares " + std::to_string(header.payloads.size()) +
                          " payloads, message has " + std::to_string(frame_sizes.size()));
  }
  for (std::size_t i = 0; i < frame_sizes.size(); ++i) {
    const std::uint64_t expected = PayloadBytes(header.payloads[i], limits);
    if (frame_sizes[i] != expected) {
      throw InvalidArgument("payload " + std::to_string(i) + " has " +
                            std::to_string(frame_sizes[i]) + " bytes, its " +
                            std::string(DTypeName(header.payloads[i].dtype)) + " shape needs " +
                            std::to_string(expected));
    }
  }
}

}  // namespace rlswarm::rpc
