// PayloadFrame: small payloads are copied into the frame, large ones are
// handed to ZeroMQ without a copy and kept alive until ZeroMQ lets go.

#include "rpc/internal/frames.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace rlswarm::rpc::internal {
namespace {

Payload BytesPayload(std::size_t bytes) {
  return Payload::FromVector(DType::kUInt8, {static_cast<std::int64_t>(bytes)},
                             std::vector<std::uint8_t>(bytes, 7));
}

TEST(PayloadFrameTest, CopiesUpToTheThresholdAndSharesLargerPayloads) {
  const Payload small = BytesPayload(kCopiedFrameBytes);
  const zmq::message_t small_frame = PayloadFrame(small);
  EXPECT_NE(small_frame.data(), static_cast<const void*>(small.bytes().data()));
  EXPECT_EQ(small.owner().use_count(), 1);
  EXPECT_EQ(FrameBytes(small_frame).size(), kCopiedFrameBytes);

  const Payload large = BytesPayload(kCopiedFrameBytes + 1);
  const zmq::message_t large_frame = PayloadFrame(large);
  EXPECT_EQ(large_frame.data(), static_cast<const void*>(large.bytes().data()));
  EXPECT_EQ(large.owner().use_count(), 2);  // the frame holds the buffer too
}

TEST(PayloadFrameTest, ASharedBufferLivesUntilTheLastFrameIsReleased) {
  std::weak_ptr<const void> buffer;
  zmq::message_t frame;
  {
    const Payload payload = BytesPayload(64 * 1024);
    buffer = payload.owner();
    frame = PayloadFrame(payload);
  }
  ASSERT_FALSE(buffer.expired());
  EXPECT_EQ(static_cast<const std::uint8_t*>(frame.data())[100], 7);
  frame = zmq::message_t();
  EXPECT_TRUE(buffer.expired());
}

}  // namespace
}  // namespace rlswarm::rpc::internal
