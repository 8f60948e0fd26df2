#include "rpc/wire.h"

#include <algorithm>
#include <msgpack.hpp>

namespace rlswarm::rpc {
namespace {

// The header on the wire is a MessagePack array of plain fields, so that it
// stays readable from any MessagePack implementation (Python's
// msgpack.unpackb gives a list):
//
//   [version: uint, kind: uint, method: str, request_id: uint, status: int,
//    error_message: str, timeout_ms: int, idempotent: bool,
//    payloads: [[dtype: uint, shape: [int, ...]], ...]]
//
// Encoded and decoded field by field (not through a struct adaptor), into
// buffers the caller keeps: a call on the hot path allocates nothing here
// once the buffers have grown to fit.

// Field counts of the two arrays above; decoding demands them exactly, so a
// header cut short (or padded) at a field boundary is rejected.
constexpr std::uint32_t kHeaderFields = 9;
constexpr std::uint32_t kDescriptorFields = 2;
// First chunk of the decode zone (one per thread, reused). msgpack's default
// (8 KiB) is too big for glibc's per-thread cache, so every call used to
// take a trip through the main heap, where a request that size first merges
// all freed small chunks (malloc_consolidate). A header of a few payloads
// fits; a bigger one grows the zone for that decode only.
constexpr std::size_t kSmallBufferBytes = 512;

// msgpack's packer writes through any stream with write(data, size).
struct StringSink {
  std::string* out;
  void write(const char* data, std::size_t size) { out->append(data, size); }
};

// Converts one field, naming it when its MessagePack type does not fit.
template <class T>
void ReadField(const msgpack::object& o, const char* name, T& out) {
  try {
    o.convert(out);
  } catch (const std::exception&) {
    throw InvalidArgument(std::string("malformed rpc header: field '") + name +
                          "' has the wrong type or range");
  }
}

[[noreturn]] void Malformed(const std::string& what) {
  throw InvalidArgument("malformed rpc header: " + what);
}

}  // namespace

void EncodeHeader(const Header& header, std::string& out) {
  out.clear();
  StringSink sink{&out};
  msgpack::packer<StringSink> pk(sink);
  pk.pack_array(kHeaderFields);
  pk.pack(kWireVersion);
  pk.pack(static_cast<std::uint8_t>(header.kind));
  pk.pack(header.method);
  pk.pack(header.request_id);
  pk.pack(static_cast<std::int32_t>(header.status));
  pk.pack(header.error_message);
  pk.pack(header.timeout_ms);
  pk.pack(header.idempotent);
  pk.pack_array(static_cast<std::uint32_t>(header.payloads.size()));
  for (const PayloadDescriptor& p : header.payloads) {
    pk.pack_array(kDescriptorFields);
    pk.pack(static_cast<std::uint8_t>(p.dtype));
    pk.pack(p.shape);
  }
}

std::string EncodeHeader(const Header& header) {
  std::string out;
  EncodeHeader(header, out);
  return out;
}

void DecodeHeader(std::span<const std::byte> frame, const WireLimits& limits, Header& out) {
  if (frame.size() > limits.max_header_bytes) {
    Malformed("header of " + std::to_string(frame.size()) + " bytes exceeds the limit of " +
              std::to_string(limits.max_header_bytes));
  }
  // The unpack limits bound every container and string the peer declares,
  // so a 5-byte header claiming a 4-billion-element array is rejected
  // before anything is allocated.
  const msgpack::unpack_limit unpack_limits(
      /*array=*/std::max<std::size_t>(limits.max_payloads, limits.max_dims) + 16,
      /*map=*/0,
      /*str=*/std::max(limits.max_method_bytes, limits.max_error_bytes),
      /*bin=*/0, /*ext=*/0, /*depth=*/4);
  thread_local msgpack::zone zone(kSmallBufferBytes);
  zone.clear();  // back to its first chunk
  msgpack::object root;
  try {
    std::size_t offset = 0;
    root = msgpack::unpack(zone, reinterpret_cast<const char*>(frame.data()), frame.size(), offset,
                           nullptr, nullptr, unpack_limits);
    if (offset != frame.size()) Malformed("trailing bytes after the header");
  } catch (const InvalidArgument&) {
    throw;
  } catch (const std::exception& e) {
    Malformed(e.what());
  }
  if (root.type != msgpack::type::ARRAY || root.via.array.size != kHeaderFields) {
    Malformed("expected an array of " + std::to_string(kHeaderFields) + " fields");
  }
  const msgpack::object* f = root.via.array.ptr;
  std::uint8_t version = 0;
  ReadField(f[0], "version", version);
  if (version != kWireVersion) {
    Malformed("wire version " + std::to_string(version) + ", expected " +
              std::to_string(kWireVersion));
  }
  std::uint8_t kind = 0;
  ReadField(f[1], "kind", kind);
  if (kind != static_cast<std::uint8_t>(MessageKind::kRequest) &&
      kind != static_cast<std::uint8_t>(MessageKind::kReply)) {
    Malformed("unknown message kind " + std::to_string(kind));
  }
  out.kind = static_cast<MessageKind>(kind);
  ReadField(f[2], "method", out.method);
  if (out.method.size() > limits.max_method_bytes) Malformed("method name too long");
  ReadField(f[3], "request_id", out.request_id);
  std::int32_t status = 0;
  ReadField(f[4], "status", status);
  if (status < 0 || status > static_cast<std::int32_t>(StatusCode::kInternal)) {
    Malformed("unknown status " + std::to_string(status));
  }
  out.status = static_cast<StatusCode>(status);
  ReadField(f[5], "error_message", out.error_message);
  if (out.error_message.size() > limits.max_error_bytes) Malformed("error message too long");
  ReadField(f[6], "timeout_ms", out.timeout_ms);
  if (out.timeout_ms < 0) Malformed("negative timeout");
  ReadField(f[7], "idempotent", out.idempotent);
  const msgpack::object& descriptors = f[kHeaderFields - 1];
  if (descriptors.type != msgpack::type::ARRAY) Malformed("field 'payloads' is not an array");
  if (descriptors.via.array.size > limits.max_payloads) Malformed("too many payloads");
  // resize keeps the shape vectors already there, and their capacity.
  out.payloads.resize(descriptors.via.array.size);
  for (std::uint32_t i = 0; i < descriptors.via.array.size; ++i) {
    const msgpack::object& d = descriptors.via.array.ptr[i];
    if (d.type != msgpack::type::ARRAY || d.via.array.size != kDescriptorFields) {
      Malformed("payload descriptor " + std::to_string(i) + " is not an array of " +
                std::to_string(kDescriptorFields) + " fields");
    }
    std::uint8_t dtype = 0;
    ReadField(d.via.array.ptr[0], "dtype", dtype);
    if (dtype > static_cast<std::uint8_t>(DType::kFloat64)) {
      Malformed("unknown dtype " + std::to_string(dtype));
    }
    PayloadDescriptor& pd = out.payloads[i];
    pd.dtype = static_cast<DType>(dtype);
    const msgpack::object& shape = d.via.array.ptr[1];
    if (shape.type == msgpack::type::ARRAY && shape.via.array.size > limits.max_dims) {
      Malformed("too many dimensions");
    }
    ReadField(shape, "shape", pd.shape);
    PayloadBytes(pd, limits);  // rejects negative or overflowing shapes
  }
}

Header DecodeHeader(std::span<const std::byte> frame, const WireLimits& limits) {
  Header header;
  DecodeHeader(frame, limits, header);
  return header;
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
