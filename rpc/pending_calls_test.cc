// PendingCalls (the client's book of unfinished calls): deadline order,
// completed calls leaving no work behind, and the send queue.

#include "rpc/internal/pending_calls.h"

#include <gtest/gtest.h>

namespace rlswarm::rpc::internal {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::unique_ptr<CallRecord> MakeCall(std::uint64_t id, Clock::time_point deadline) {
  auto call = std::make_unique<CallRecord>();
  call->id = id;
  call->deadline = deadline;
  return call;
}

std::vector<std::uint64_t> Ids(const std::vector<std::unique_ptr<CallRecord>>& calls) {
  std::vector<std::uint64_t> ids;
  for (const auto& c : calls) ids.push_back(c->id);
  return ids;
}

TEST(PendingCallsTest, ExpiresCallsInDeadlineOrderWhateverTheirOrderOfArrival) {
  PendingCalls pending;
  const auto t0 = Clock::now();
  pending.Add(MakeCall(1, t0 + milliseconds(30)));
  pending.Add(MakeCall(2, t0 + milliseconds(10)));
  pending.Add(MakeCall(3, t0 + milliseconds(20)));
  pending.Add(MakeCall(4, t0 + milliseconds(40)));
  EXPECT_EQ(pending.NextDeadline(), t0 + milliseconds(10));
  EXPECT_TRUE(pending.TakeExpired(t0 + milliseconds(5)).empty());
  EXPECT_EQ(Ids(pending.TakeExpired(t0 + milliseconds(30))), (std::vector<std::uint64_t>{2, 3, 1}));
  EXPECT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending.NextDeadline(), t0 + milliseconds(40));
}

TEST(PendingCallsTest, ACompletedCallNeitherExpiresNorSetsTheNextDeadline) {
  PendingCalls pending;
  const auto t0 = Clock::now();
  pending.Add(MakeCall(1, t0 + milliseconds(10)));
  pending.Add(MakeCall(2, t0 + milliseconds(20)));
  ASSERT_NE(pending.Remove(1), nullptr);
  EXPECT_EQ(pending.Remove(1), nullptr);  // already gone
  EXPECT_EQ(pending.NextDeadline(), t0 + milliseconds(20));
  EXPECT_EQ(Ids(pending.TakeExpired(t0 + milliseconds(50))), (std::vector<std::uint64_t>{2}));
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(pending.NextDeadline(), std::nullopt);
}

// Calls that complete long before their deadline (the usual case) must not
// pile up in the deadline book: a long stream with a few in flight keeps it
// small.
TEST(PendingCallsTest, CompletedCallsDoNotAccumulate) {
  PendingCalls pending;
  const auto far = Clock::now() + std::chrono::hours(1);
  std::uint64_t next = 1;
  for (int i = 0; i < 16; ++i) pending.Add(MakeCall(next++, far));
  for (int i = 0; i < 100000; ++i) {
    ASSERT_NE(pending.Remove(next - 16), nullptr);
    pending.Add(MakeCall(next++, far));
  }
  EXPECT_EQ(pending.size(), 16u);
  EXPECT_LE(pending.deadline_entries(), 2 * 16 + 64 + 1u);
  EXPECT_EQ(pending.TakeAll().size(), 16u);
  EXPECT_EQ(pending.deadline_entries(), 0u);
}

TEST(PendingCallsTest, SendsInOrderAndRequeuedCallsGoFirst) {
  PendingCalls pending;
  const auto far = Clock::now() + std::chrono::hours(1);
  for (std::uint64_t id = 1; id <= 3; ++id) pending.Add(MakeCall(id, far));
  ASSERT_EQ(pending.NextUnsent()->id, 1u);
  pending.MarkSent();
  ASSERT_EQ(pending.NextUnsent()->id, 2u);
  pending.MarkSent();
  ASSERT_NE(pending.Remove(3), nullptr);  // completed (failed) before it was sent
  EXPECT_EQ(pending.NextUnsent(), nullptr);
  // The connection dropped: the calls in flight are sent again, in order.
  pending.Requeue(pending.InFlight());
  ASSERT_EQ(pending.NextUnsent()->id, 1u);
  pending.MarkSent();
  ASSERT_EQ(pending.NextUnsent()->id, 2u);
}

}  // namespace
}  // namespace rlswarm::rpc::internal
