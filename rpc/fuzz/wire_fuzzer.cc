// libFuzzer target for the rpc wire format: everything a peer controls on the
// way into a Server (or a Client receiving a reply) before a handler runs.
//
// Input layout (the first byte chooses what the rest is):
//   byte 0, bit 0 = 0: header mode. The rest is one header frame for
//                      DecodeHeader (and PeekRequestId, which the server
//                      runs on a header DecodeHeader rejected).
//   byte 0, bit 0 = 1: message mode, the server's receive path. Bytes 1-2
//                      (little endian) give the header frame's length, then
//                      the header frame, then payload frames, each prefixed
//                      by a 2-byte little-endian length (clamped to what is
//                      left). Runs DecodeHeader, CheckPayloadFrames, then
//                      builds Payload views over the frames as the server
//                      does and reads every element.
//   byte 0, bit 1 = 1: decode with tight WireLimits (small header, method,
//                      payload counts and sizes) so the limit checks are
//                      reachable with small inputs.
//
// Beyond "no crash, no sanitizer report, no exception but InvalidArgument",
// an accepted header must respect every limit and survive
// EncodeHeader/DecodeHeader unchanged; a violation traps.
//
// Built with -DRLSWARM_WIRE_FUZZER_SEEDS this file is instead a program that
// writes a seed corpus of valid messages into the directory given as argv[1]
// (scripts/fuzz.sh does both).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/errors.h"
#include "common/payload.h"
#include "rpc/internal/header_peek.h"
#include "rpc/wire.h"

namespace rlswarm::rpc {
namespace {

constexpr std::uint8_t kMessageMode = 1;
constexpr std::uint8_t kTightLimits = 2;
constexpr std::size_t kMaxFrames = 4096;

WireLimits TightLimits() {
  WireLimits l;
  l.max_header_bytes = 512;
  l.max_method_bytes = 8;
  l.max_error_bytes = 32;
  l.max_payloads = 4;
  l.max_dims = 3;
  l.max_payload_bytes = 4096;
  return l;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "wire_fuzzer invariant violated: %s\n", what);
    __builtin_trap();
  }
}

void CheckWithinLimits(const Header& h, const WireLimits& limits) {
  Check(h.kind == MessageKind::kRequest || h.kind == MessageKind::kReply, "kind");
  Check(static_cast<int>(h.status) >= 0 && h.status <= StatusCode::kInternal, "status");
  Check(h.method.size() <= limits.max_method_bytes, "method length");
  Check(h.error_message.size() <= limits.max_error_bytes, "error length");
  Check(h.timeout_ms >= 0, "timeout");
  Check(h.payloads.size() <= limits.max_payloads, "payload count");
  for (const auto& p : h.payloads) {
    Check(DTypeSize(p.dtype) != 0, "dtype");
    Check(p.shape.size() <= limits.max_dims, "dims");
    try {
      Check(PayloadBytes(p, limits) <= limits.max_payload_bytes, "payload bytes");
    } catch (const InvalidArgument&) {
      Check(false, "accepted descriptor fails PayloadBytes");
    }
  }
}

bool SameHeader(const Header& a, const Header& b) {
  if (a.kind != b.kind || a.method != b.method || a.request_id != b.request_id ||
      a.status != b.status || a.error_message != b.error_message || a.timeout_ms != b.timeout_ms ||
      a.idempotent != b.idempotent || a.payloads.size() != b.payloads.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.payloads.size(); ++i) {
    if (a.payloads[i].dtype != b.payloads[i].dtype || a.payloads[i].shape != b.payloads[i].shape) {
      return false;
    }
  }
  return true;
}

// Decodes `frame` as the server does: DecodeHeader, and on rejection
// PeekRequestId (so an error reply can name the request). On success checks
// the invariants, and that both read the same request id, and returns true.
bool DecodeAndCheck(std::span<const std::byte> frame, const WireLimits& limits, Header* out) {
  const std::optional<std::uint64_t> peeked = internal::PeekRequestId(frame, limits);
  try {
    *out = DecodeHeader(frame, limits);
  } catch (const InvalidArgument&) {
    return false;  // the expected outcome for most inputs; anything else escapes and crashes
  }
  Check(out->request_id == 0 ? !peeked.has_value() : peeked == out->request_id,
        "PeekRequestId disagrees with DecodeHeader");
  CheckWithinLimits(*out, limits);
  const std::string again = EncodeHeader(*out);
  // EncodeHeader writes the shortest MessagePack form, so it is never longer.
  Check(again.size() <= frame.size(), "re-encoded header is longer");
  try {
    const Header round_trip =
        DecodeHeader({reinterpret_cast<const std::byte*>(again.data()), again.size()}, limits);
    Check(SameHeader(*out, round_trip), "header changed in a round trip");
  } catch (const InvalidArgument&) {
    Check(false, "re-encoded header rejected");
  }
  return true;
}

template <class T>
std::uint64_t Touch(const Payload& p) {
  const auto values = p.As<T>();
  Check(values.size() == static_cast<std::size_t>(p.NumElements()), "element count");
  std::uint64_t sum = 0;
  for (const T& v : values) {
    std::uint64_t bits = 0;  // the bit pattern: any float, NaN included, is fine
    std::memcpy(&bits, &v, sizeof(T));
    sum += bits;
  }
  return sum;
}

// Reads every element, so ASan sees any view that points outside its frame.
std::uint64_t TouchAll(const Payload& p) {
  switch (p.dtype()) {
    case DType::kBool:
    case DType::kUInt8:
      return Touch<std::uint8_t>(p);
    case DType::kInt32:
      return Touch<std::int32_t>(p);
    case DType::kInt64:
      return Touch<std::int64_t>(p);
    case DType::kFloat32:
      return Touch<float>(p);
    case DType::kFloat64:
      return Touch<double>(p);
  }
  Check(false, "unknown dtype in a payload");
  return 0;
}

void RunMessage(std::span<const std::byte> rest, const WireLimits& limits) {
  if (rest.size() < 2) return;
  std::size_t header_len =
      std::to_integer<std::size_t>(rest[0]) | (std::to_integer<std::size_t>(rest[1]) << 8);
  rest = rest.subspan(2);
  header_len = std::min(header_len, rest.size());
  const auto header_frame = rest.first(header_len);
  rest = rest.subspan(header_len);

  std::vector<std::span<const std::byte>> frames;
  while (rest.size() >= 2 && frames.size() < kMaxFrames) {
    std::size_t len =
        std::to_integer<std::size_t>(rest[0]) | (std::to_integer<std::size_t>(rest[1]) << 8);
    rest = rest.subspan(2);
    len = std::min(len, rest.size());
    frames.push_back(rest.first(len));
    rest = rest.subspan(len);
  }

  Header header;
  if (!DecodeAndCheck(header_frame, limits, &header)) return;
  std::vector<std::size_t> sizes;
  sizes.reserve(frames.size());
  for (const auto& f : frames) sizes.push_back(f.size());
  try {
    CheckPayloadFrames(header, sizes, limits);
  } catch (const InvalidArgument&) {
    return;
  }
  volatile std::uint64_t sink = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    // Each frame gets its own heap block, as a received zmq message does, so
    // that ASan catches a view reading past the end of its frame.
    auto copy = std::make_shared<std::vector<std::byte>>(frames[i].begin(), frames[i].end());
    try {
      const Payload p = Payload::Adopt(header.payloads[i].dtype, header.payloads[i].shape, copy,
                                       copy->data(), copy->size());
      sink = sink + TouchAll(p);
    } catch (const InvalidArgument&) {
      Check(false, "Payload::Adopt rejected a frame that CheckPayloadFrames accepted");
    }
  }
}

}  // namespace
}  // namespace rlswarm::rpc

#ifndef RLSWARM_WIRE_FUZZER_SEEDS

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace rlswarm::rpc;
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const WireLimits limits = (control & kTightLimits) ? TightLimits() : WireLimits{};
  const std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  if (control & kMessageMode) {
    RunMessage(rest, limits);
  } else {
    Header header;
    DecodeAndCheck(rest, limits, &header);
  }
  return 0;
}

#else  // RLSWARM_WIRE_FUZZER_SEEDS: the seed corpus generator

#include <fstream>

namespace {

using namespace rlswarm;
using namespace rlswarm::rpc;

void Append16(std::string& s, std::size_t n) {
  s += static_cast<char>(n & 0xff);
  s += static_cast<char>((n >> 8) & 0xff);
}

std::vector<Header> SeedHeaders() {
  std::vector<Header> out;
  out.emplace_back();  // all defaults
  Header request;
  request.method = "echo";
  request.request_id = 42;
  request.timeout_ms = 10000;
  request.idempotent = true;
  request.payloads = {{DType::kUInt8, {4}}, {DType::kFloat32, {2, 3}}};
  out.push_back(request);
  Header every_dtype;
  every_dtype.method = "replay";
  every_dtype.request_id = ~0ULL;
  every_dtype.payloads = {{DType::kBool, {2}},  {DType::kUInt8, {}},    {DType::kInt32, {1, 1}},
                          {DType::kInt64, {0}}, {DType::kFloat32, {2}}, {DType::kFloat64, {1}}};
  out.push_back(every_dtype);
  Header reply;
  reply.kind = MessageKind::kReply;
  reply.request_id = 7;
  reply.payloads = {{DType::kInt64, {2}}};
  out.push_back(reply);
  Header error;
  error.kind = MessageKind::kReply;
  error.request_id = 8;
  error.status = StatusCode::kResourceExhausted;
  error.error_message = "queue full";
  out.push_back(error);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  int n = 0;
  auto write = [&](const std::string& bytes) {
    std::ofstream(std::string(argv[1]) + "/seed-" + std::to_string(n++), std::ios::binary) << bytes;
  };
  for (const Header& h : SeedHeaders()) {
    const std::string header = EncodeHeader(h);
    for (char limits : {char{0}, static_cast<char>(kTightLimits)}) {
      write(std::string(1, limits) + header);
      std::string message(1, static_cast<char>(limits | kMessageMode));
      Append16(message, header.size());
      message += header;
      for (const auto& p : h.payloads) {
        const std::size_t bytes = PayloadBytes(p);
        Append16(message, bytes);
        for (std::size_t i = 0; i < bytes; ++i) message += static_cast<char>(i * 37 + 1);
      }
      write(message);
    }
  }
  std::printf("wrote %d seeds to %s\n", n, argv[1]);
  return 0;
}

#endif
