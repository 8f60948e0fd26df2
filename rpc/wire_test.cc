#include "rpc/wire.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <msgpack.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "common/errors.h"

namespace rlswarm::rpc {
namespace {

constexpr DType kAllDTypes[] = {DType::kBool,  DType::kUInt8,   DType::kInt32,
                                DType::kInt64, DType::kFloat32, DType::kFloat64};

std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

Header Decode(const std::string& frame, const WireLimits& limits = {}) {
  return DecodeHeader(AsBytes(frame), limits);
}

// The header's fields as MessagePack sees them, written with msgpack's packer
// directly so that tests can send what EncodeHeader never would: wrong
// versions, unknown enums, negative dimensions, wrong arity.
struct RawDescriptor {
  std::int64_t dtype = 1;
  std::vector<std::int64_t> shape;
};

struct RawHeader {
  std::int64_t version = kWireVersion;
  std::int64_t kind = 1;
  std::string method = "echo";
  std::uint64_t request_id = 7;
  std::int64_t status = 0;
  std::string error_message;
  std::int64_t timeout_ms = 0;
  bool idempotent = false;
  std::vector<RawDescriptor> payloads;
  // Fields to pack (9 = all); fewer drops the trailing ones, more appends nils.
  std::uint32_t arity = 9;
};

std::string Pack(const RawHeader& h) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_array(h.arity);
  std::uint32_t written = 0;
  auto field = [&](auto&& pack_one) {
    if (written < h.arity) pack_one();
    ++written;
  };
  field([&] { pk.pack(h.version); });
  field([&] { pk.pack(h.kind); });
  field([&] { pk.pack(h.method); });
  field([&] { pk.pack(h.request_id); });
  field([&] { pk.pack(h.status); });
  field([&] { pk.pack(h.error_message); });
  field([&] { pk.pack(h.timeout_ms); });
  field([&] { pk.pack(h.idempotent); });
  field([&] {
    pk.pack_array(static_cast<std::uint32_t>(h.payloads.size()));
    for (const auto& d : h.payloads) {
      pk.pack_array(2);
      pk.pack(d.dtype);
      pk.pack(d.shape);
    }
  });
  for (; written < h.arity; ++written) pk.pack_nil();
  return std::string(buffer.data(), buffer.size());
}

// Expects DecodeHeader to throw InvalidArgument whose message contains `why`.
void ExpectRejected(const std::string& frame, const std::string& why,
                    const WireLimits& limits = {}) {
  try {
    Decode(frame, limits);
    ADD_FAILURE() << "accepted a header that should fail with '" << why << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos)
        << "message '" << e.what() << "' does not say '" << why << "'";
  }
}

Header FullRequest() {
  Header h;
  h.kind = MessageKind::kRequest;
  h.method = "replay.sample";
  h.request_id = std::numeric_limits<std::uint64_t>::max();
  h.timeout_ms = std::numeric_limits<std::int64_t>::max();
  h.idempotent = true;
  h.payloads = {{DType::kFloat32, {128, 4}}, {DType::kInt64, {128}}, {DType::kUInt8, {}}};
  return h;
}

void ExpectSameHeader(const Header& a, const Header& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.request_id, b.request_id);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.error_message, b.error_message);
  EXPECT_EQ(a.timeout_ms, b.timeout_ms);
  EXPECT_EQ(a.idempotent, b.idempotent);
  ASSERT_EQ(a.payloads.size(), b.payloads.size());
  for (std::size_t i = 0; i < a.payloads.size(); ++i) {
    EXPECT_EQ(a.payloads[i].dtype, b.payloads[i].dtype) << "payload " << i;
    EXPECT_EQ(a.payloads[i].shape, b.payloads[i].shape) << "payload " << i;
  }
}

// ---------------------------------------------------------------- round trips

TEST(WireTest, RequestRoundTripsEveryField) {
  const Header h = FullRequest();
  ExpectSameHeader(Decode(EncodeHeader(h)), h);
}

// The bytes are the documented array, packed field by field by msgpack's own
// packer (Pack above): any MessagePack reader sees the same fields.
TEST(WireTest, EncodeHeaderWritesTheDocumentedArray) {
  Header h = FullRequest();
  h.kind = MessageKind::kReply;
  h.status = StatusCode::kResourceExhausted;
  h.error_message = "queue full";
  RawHeader raw;
  raw.kind = 2;
  raw.method = h.method;
  raw.request_id = h.request_id;
  raw.status = static_cast<std::int64_t>(StatusCode::kResourceExhausted);
  raw.error_message = h.error_message;
  raw.timeout_ms = h.timeout_ms;
  raw.idempotent = true;
  for (const PayloadDescriptor& p : h.payloads) {
    raw.payloads.push_back({static_cast<std::int64_t>(p.dtype), p.shape});
  }
  EXPECT_EQ(EncodeHeader(h), Pack(raw));
}

// Hot paths keep one Header and one string per connection: reuse must not
// leak a field, payload or dimension of the previous message.
TEST(WireTest, ReusedBuffersHoldOnlyTheLatestHeader) {
  std::string encoded = "stale bytes";
  EncodeHeader(FullRequest(), encoded);
  EXPECT_EQ(encoded, EncodeHeader(FullRequest()));
  Header decoded;
  DecodeHeader(AsBytes(encoded), WireLimits{}, decoded);
  ExpectSameHeader(decoded, FullRequest());

  Header smaller;
  smaller.kind = MessageKind::kReply;
  smaller.request_id = 3;
  smaller.payloads = {{DType::kInt32, {2}}};
  EncodeHeader(smaller, encoded);
  DecodeHeader(AsBytes(encoded), WireLimits{}, decoded);
  ExpectSameHeader(decoded, smaller);
  EncodeHeader(Header{}, encoded);
  DecodeHeader(AsBytes(encoded), WireLimits{}, decoded);
  ExpectSameHeader(decoded, Header{});
}

TEST(WireTest, AFieldOfTheWrongTypeIsNamed) {
  const std::string frame = Pack(RawHeader{});
  // The method (third field) as an integer instead of a string.
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_array(9);
  pk.pack(kWireVersion);
  pk.pack(1);
  pk.pack(42);
  pk.pack(7);
  pk.pack(0);
  pk.pack(std::string());
  pk.pack(0);
  pk.pack(false);
  pk.pack_array(0);
  ExpectRejected(std::string(buffer.data(), buffer.size()), "field 'method'");
  EXPECT_NO_THROW(Decode(frame));
}

TEST(WireTest, DefaultHeaderRoundTrips) {
  const Header h;
  ExpectSameHeader(Decode(EncodeHeader(h)), h);
}

TEST(WireTest, ReplyRoundTripsEveryStatusCodeAndItsMessage) {
  for (int code = 0; code <= static_cast<int>(StatusCode::kInternal); ++code) {
    Header h;
    h.kind = MessageKind::kReply;
    h.request_id = 1000 + static_cast<std::uint64_t>(code);
    h.status = static_cast<StatusCode>(code);
    h.error_message = code == 0 ? "" : "failed: " + std::string(StatusCodeName(h.status));
    ExpectSameHeader(Decode(EncodeHeader(h)), h);
  }
}

TEST(WireTest, PayloadDescriptorsOfEveryDTypeRoundTrip) {
  Header h;
  for (DType d : kAllDTypes) {
    h.payloads.push_back({d, {}});              // a scalar
    h.payloads.push_back({d, {0}});             // empty
    h.payloads.push_back({d, {3, 1, 7}});       // ordinary
    h.payloads.push_back({d, {1LL << 20, 2}});  // large dims encode as wider ints
  }
  ExpectSameHeader(Decode(EncodeHeader(h)), h);
}

TEST(WireTest, FieldsAtTheirLimitsAreAccepted) {
  const WireLimits limits;
  Header h;
  h.kind = MessageKind::kReply;
  h.status = StatusCode::kInternal;
  h.method = std::string(limits.max_method_bytes, 'm');
  h.error_message = std::string(limits.max_error_bytes, 'e');
  h.payloads.push_back({DType::kUInt8, std::vector<std::int64_t>(limits.max_dims, 1)});
  ExpectSameHeader(Decode(EncodeHeader(h), limits), h);

  Header many;
  many.payloads.assign(limits.max_payloads, PayloadDescriptor{DType::kBool, {1}});
  EXPECT_EQ(Decode(EncodeHeader(many), limits).payloads.size(), limits.max_payloads);
}

TEST(WireTest, PayloadBytesIsElementSizeTimesElementCount) {
  EXPECT_EQ(PayloadBytes({DType::kBool, {5}}), 5u);
  EXPECT_EQ(PayloadBytes({DType::kUInt8, {2, 3}}), 6u);
  EXPECT_EQ(PayloadBytes({DType::kInt32, {2, 3}}), 24u);
  EXPECT_EQ(PayloadBytes({DType::kInt64, {2, 3}}), 48u);
  EXPECT_EQ(PayloadBytes({DType::kFloat32, {10}}), 40u);
  EXPECT_EQ(PayloadBytes({DType::kFloat64, {10}}), 80u);
  EXPECT_EQ(PayloadBytes({DType::kFloat64, {}}), 8u);              // scalar
  EXPECT_EQ(PayloadBytes({DType::kFloat64, {0, 1LL << 40}}), 0u);  // empty
}

// ------------------------------------------------------------------ rejection

TEST(WireTest, RejectsEmptyInput) { ExpectRejected("", "malformed rpc header"); }

TEST(WireTest, RejectsEveryTruncationOfAValidHeader) {
  Header h = FullRequest();
  h.error_message = "x";
  const std::string frame = EncodeHeader(h);
  ASSERT_GT(frame.size(), 20u);
  for (std::size_t n = 0; n < frame.size(); ++n) {
    SCOPED_TRACE("prefix of " + std::to_string(n) + " of " + std::to_string(frame.size()));
    ExpectRejected(frame.substr(0, n), "malformed rpc header");
  }
}

TEST(WireTest, RejectsTrailingBytes) {
  ExpectRejected(EncodeHeader(FullRequest()) + '\0', "trailing bytes");
  // Two valid headers back to back are not one header either.
  ExpectRejected(EncodeHeader(Header{}) + EncodeHeader(Header{}), "trailing bytes");
}

TEST(WireTest, RejectsAHeaderThatIsNotAnArray) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, 42);
  ExpectRejected(std::string(buffer.data(), buffer.size()), "malformed rpc header");
  ExpectRejected(std::string("\x80", 1), "malformed rpc header");  // empty map
}

TEST(WireTest, RejectsMissingOrExtraFields) {
  RawHeader h;
  for (std::uint32_t arity : {0u, 1u, 2u, 8u, 10u}) {
    SCOPED_TRACE("arity " + std::to_string(arity));
    h.arity = arity;
    ExpectRejected(Pack(h), "fields");
  }
  RawHeader ok;
  ASSERT_NO_THROW(Decode(Pack(ok)));
}

TEST(WireTest, RejectsADescriptorWithMissingOrExtraFields) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_array(9);
  pk.pack(1).pack(1).pack(std::string("m")).pack(1).pack(0).pack(std::string()).pack(0);
  pk.pack(false);
  pk.pack_array(1);
  pk.pack_array(1);  // [dtype] without a shape
  pk.pack(1);
  ExpectRejected(std::string(buffer.data(), buffer.size()), "descriptor");
}

TEST(WireTest, RejectsFieldsOfTheWrongType) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_array(9);
  pk.pack(1).pack(1).pack(12345);  // method is an int
  pk.pack(1).pack(0).pack(std::string()).pack(0).pack(false);
  pk.pack_array(0);
  ExpectRejected(std::string(buffer.data(), buffer.size()), "malformed rpc header");
}

TEST(WireTest, RejectsAWrongVersion) {
  for (std::int64_t v : {0, kWireVersion + 1, 255}) {
    RawHeader h;
    h.version = v;
    ExpectRejected(Pack(h), "wire version " + std::to_string(v));
  }
  RawHeader too_wide;
  too_wide.version = 257;  // does not even fit the field
  ExpectRejected(Pack(too_wide), "malformed rpc header");
}

TEST(WireTest, RejectsAnUnknownKind) {
  for (std::int64_t k : {0, 3, 255}) {
    RawHeader h;
    h.kind = k;
    ExpectRejected(Pack(h), "unknown message kind " + std::to_string(k));
  }
}

TEST(WireTest, RejectsAnUnknownStatus) {
  for (std::int64_t s : {-1LL, static_cast<long long>(StatusCode::kInternal) + 1, 1LL << 30}) {
    RawHeader h;
    h.kind = 2;
    h.status = s;
    ExpectRejected(Pack(h), "unknown status " + std::to_string(s));
  }
}

TEST(WireTest, RejectsAnUnknownDType) {
  for (std::int64_t d : {6, 255}) {
    RawHeader h;
    h.payloads = {{d, {1}}};
    ExpectRejected(Pack(h), "unknown dtype " + std::to_string(d));
  }
  RawHeader negative;
  negative.payloads = {{-1, {1}}};
  ExpectRejected(Pack(negative), "malformed rpc header");
}

TEST(WireTest, RejectsNegativeDimensions) {
  RawHeader h;
  h.payloads = {{4, {2, -3}}};
  ExpectRejected(Pack(h), "negative dimension -3");
  EXPECT_THROW(PayloadBytes({DType::kUInt8, {-1}}), InvalidArgument);
}

TEST(WireTest, RejectsANegativeTimeout) {
  RawHeader h;
  h.timeout_ms = -5;
  ExpectRejected(Pack(h), "negative timeout");
}

TEST(WireTest, RejectsTooManyDimensions) {
  const WireLimits limits;
  RawHeader h;
  h.payloads = {{1, std::vector<std::int64_t>(limits.max_dims + 1, 1)}};
  ExpectRejected(Pack(h), "too many dimensions");
}

TEST(WireTest, RejectsTooManyPayloads) {
  WireLimits limits;
  RawHeader h;
  h.payloads.assign(limits.max_payloads + 1, RawDescriptor{1, {1}});
  ExpectRejected(Pack(h), "too many payloads");

  limits.max_payloads = 2;
  h.payloads.resize(3);
  ExpectRejected(Pack(h), "too many payloads", limits);
  h.payloads.resize(2);
  EXPECT_EQ(Decode(Pack(h), limits).payloads.size(), 2u);
}

TEST(WireTest, RejectsAMethodNameOverTheLimit) {
  WireLimits limits;
  RawHeader h;
  h.method = std::string(limits.max_method_bytes + 1, 'm');
  ExpectRejected(Pack(h), "method name too long");
  limits.max_method_bytes = 4;
  h.method = "abcde";
  ExpectRejected(Pack(h), "method name too long", limits);
}

TEST(WireTest, RejectsAnErrorMessageOverTheLimit) {
  WireLimits limits;
  limits.max_error_bytes = 8;
  RawHeader h;
  h.kind = 2;
  h.status = 9;
  h.error_message = std::string(9, 'e');
  ExpectRejected(Pack(h), "error message too long", limits);
}

TEST(WireTest, RejectsAHeaderOverTheSizeLimitBeforeParsingIt) {
  WireLimits limits;
  limits.max_header_bytes = 64;
  Header h;
  h.error_message = std::string(100, 'e');
  ExpectRejected(EncodeHeader(h), "exceeds the limit of 64", limits);
  // Garbage over the limit is rejected for its size, not its content.
  ExpectRejected(std::string(limits.max_header_bytes + 1, '\xc1'), "exceeds the limit", limits);
  ExpectRejected(std::string(WireLimits{}.max_header_bytes + 1, '\x90'), "exceeds the limit");
}

// A peer can declare a container far larger than the bytes it sent. The
// decoder must refuse from the declared size alone, before reserving memory
// for the elements (2^32-1 msgpack objects would be ~64 GiB), and promptly.
TEST(WireTest, RejectsAHugeDeclaredArrayWithoutAllocatingIt) {
  const std::string cases[] = {
      std::string("\xdd\xff\xff\xff\xff\x01", 6),  // array32 of 2^32-1 elements
      std::string("\xdc\xff\xff\x01", 4),          // array16 of 65535 elements
      // A valid-looking header whose payload list claims 2^32-1 descriptors.
      std::string("\x99\x01\x01\xa1m\x00\x00\xa0\x00\xc2\xdd\xff\xff\xff\xff", 15),
      // ... and whose only descriptor claims a shape of 2^32-1 dimensions.
      std::string("\x99\x01\x01\xa1m\x00\x00\xa0\x00\xc2\x91\x92\x01\xdd\xff\xff\xff\xff", 18),
  };
  for (const auto& frame : cases) {
    const auto start = std::chrono::steady_clock::now();
    try {
      Decode(frame);
      ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& e) {
      const std::string what = e.what();
      // msgpack's unpack limit, not an allocation failure that happened to be caught.
      EXPECT_NE(what.find("size overflow"), std::string::npos) << what;
      EXPECT_EQ(what.find("alloc"), std::string::npos) << what;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  }
}

TEST(WireTest, RejectsAHugeDeclaredStringWithoutReadingPastTheFrame) {
  // str32 claiming 4 GiB inside an otherwise valid prefix: only 1 byte follows.
  ExpectRejected(std::string("\x99\x01\x01\xdb\xff\xff\xff\xffm", 9), "malformed rpc header");
  // bin and ext are not part of the format at all.
  ExpectRejected(std::string("\x99\x01\x01\xc4\x01m", 6), "malformed rpc header");
}

TEST(WireTest, RejectsDeepNesting) {
  std::string frame(64, '\x91');  // [[[[...[nil]...]]]]
  frame += '\xc0';
  ExpectRejected(frame, "malformed rpc header");
}

TEST(WireTest, RejectsAPayloadShapeWhoseByteCountOverflows) {
  // 2^80 elements of 8 bytes: overflows 64 bits, far over any limit.
  const PayloadDescriptor huge{DType::kFloat64, {1LL << 40, 1LL << 40}};
  try {
    PayloadBytes(huge);
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
  // Even with no limit at all the multiplication must not wrap around.
  WireLimits unlimited;
  unlimited.max_payload_bytes = std::numeric_limits<std::uint64_t>::max();
  EXPECT_THROW(PayloadBytes(huge, unlimited), InvalidArgument);
  EXPECT_THROW(PayloadBytes({DType::kInt64, {1LL << 62}}, unlimited), InvalidArgument);
  EXPECT_THROW(PayloadBytes({DType::kUInt8, {1LL << 32, 1LL << 32}}, unlimited), InvalidArgument);

  RawHeader h;
  h.payloads = {{5, {1LL << 40, 1LL << 40}}};
  ExpectRejected(Pack(h), "exceeds the limit");
}

TEST(WireTest, PayloadBytesRespectsTheConfiguredLimit) {
  WireLimits limits;
  limits.max_payload_bytes = 1024;
  EXPECT_EQ(PayloadBytes({DType::kFloat32, {256}}, limits), 1024u);
  EXPECT_THROW(PayloadBytes({DType::kFloat32, {257}}, limits), InvalidArgument);
  EXPECT_THROW(PayloadBytes({DType::kFloat64, {}}, WireLimits{.max_payload_bytes = 7}),
               InvalidArgument);
}

// ------------------------------------------------------------ payload frames

TEST(WireTest, CheckPayloadFramesAcceptsMatchingSizes) {
  Header h;
  h.payloads = {{DType::kFloat32, {2, 3}}, {DType::kUInt8, {0}}, {DType::kInt64, {}}};
  const std::vector<std::size_t> sizes = {24, 0, 8};
  EXPECT_NO_THROW(CheckPayloadFrames(h, sizes));
  EXPECT_NO_THROW(CheckPayloadFrames(Header{}, std::span<const std::size_t>{}));
}

TEST(WireTest, CheckPayloadFramesRejectsACountMismatch) {
  Header h;
  h.payloads = {{DType::kUInt8, {1}}, {DType::kUInt8, {2}}};
  for (const std::vector<std::size_t>& sizes :
       {std::vector<std::size_t>{}, std::vector<std::size_t>{1},
        std::vector<std::size_t>{1, 2, 3}}) {
    try {
      CheckPayloadFrames(h, sizes);
      ADD_FAILURE() << "accepted " << sizes.size() << " frames";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("header declares 2 payloads, message has " +
                                           std::to_string(sizes.size())),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(WireTest, CheckPayloadFramesNamesTheFirstFrameOfTheWrongSize) {
  Header h;
  h.payloads = {{DType::kUInt8, {4}}, {DType::kFloat32, {4}}, {DType::kInt64, {1}}};
  const std::vector<std::size_t> sizes = {4, 15, 9};
  try {
    CheckPayloadFrames(h, sizes);
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("payload 1 has 15 bytes, its float32 shape needs 16"),
              std::string::npos)
        << e.what();
  }
}

TEST(WireTest, CheckPayloadFramesRejectsAShapeOverTheLimit) {
  Header h;
  h.payloads = {{DType::kFloat64, {1LL << 40, 1LL << 40}}};
  const std::vector<std::size_t> sizes = {0};
  EXPECT_THROW(CheckPayloadFrames(h, sizes), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::rpc
