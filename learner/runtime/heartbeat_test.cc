// The watchdog's rules on hand-made states (heartbeat.h) and its record of
// the collectives in flight (in_flight_collectives.h), without LibTorch.

#include "learner/runtime/heartbeat.h"

#include <gtest/gtest.h>

#include <string>

#include "learner/runtime/in_flight_collectives.h"

namespace rlswarm::learner {
namespace {

using namespace std::chrono_literals;
constexpr auto kTimeout = std::chrono::milliseconds(2000);

BlockedCollective Blocked(int64_t seq, WatchdogClock::time_point since,
                          const std::string& name = "all-gather of unit 'fc1'") {
  return {name, CollectivePlane::kData, seq, since};
}

PeerView Peer(int rank, WatchdogClock::time_point heard) {
  PeerView p;
  p.rank = rank;
  p.heard = true;
  p.last_heard = heard;
  return p;
}

TEST(HeartbeatTest, EncodesAndDecodesWithTheCollectiveAndDropsGarbage) {
  const auto now = WatchdogClock::now();
  CollectiveProgress progress;
  progress.issued = {57, 3};
  progress.done = {56, 3};
  progress.blocked = Blocked(57, now - 1500ms, "all-gather of unit 'fc 1'");
  const Heartbeat h = OwnHeartbeat(12345678901234ULL, 1, 9, progress, now);
  const std::optional<Heartbeat> back = DecodeHeartbeat(EncodeHeartbeat(h));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->token, 12345678901234ULL);
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->beat, 9u);
  EXPECT_FALSE(back->leaving);
  EXPECT_EQ(back->issued, progress.issued);
  EXPECT_EQ(back->done, progress.done);
  ASSERT_TRUE(back->blocked.has_value());
  EXPECT_EQ(back->blocked->name, "all-gather of unit 'fc 1'");
  EXPECT_EQ(back->blocked->seq, 57);
  EXPECT_EQ(back->blocked_ms, 1500);

  CollectiveProgress idle;
  const std::optional<Heartbeat> idle_back =
      DecodeHeartbeat(EncodeHeartbeat(OwnHeartbeat(1, 0, 1, idle, now)));
  ASSERT_TRUE(idle_back.has_value());
  EXPECT_FALSE(idle_back->blocked.has_value());

  for (const std::string& garbage :
       {std::string(), std::string("GET / HTTP/1.1\r\n\r\n"), std::string(100, '\xff'),
        std::string("rlswarm-heartbeat/1 1 2"),
        std::string("rlswarm-heartbeat/1 1 -3 1 0 0 0 0 0 0"),
        std::string("rlswarm-heartbeat/1 1 0 1 0 0 0 0 0 1 7 1 5 x")}) {
    EXPECT_FALSE(DecodeHeartbeat(garbage).has_value()) << garbage;
  }
}

TEST(HeartbeatTest, OlderOrRepeatedBeatsAreIgnored) {
  const auto now = WatchdogClock::now();
  PeerView peer = Peer(1, now - 10s);
  Heartbeat h;
  h.rank = 1;
  h.beat = 5;
  Hear(peer, h, now);
  EXPECT_EQ(peer.last_heard, now);
  h.beat = 4;
  Hear(peer, h, now + 1s);
  EXPECT_EQ(peer.last_heard, now);
}

TEST(WatchdogRulesTest, ASilentPeerIsNamedWithItsLastCollectiveAndThisRanks) {
  const auto now = WatchdogClock::now();
  CollectiveProgress own;
  own.issued = {58, 0};
  own.done = {57, 0};
  own.blocked = Blocked(58, now - 2500ms);
  PeerView peer = Peer(1, now - 2100ms);
  peer.progress.issued = {58, 0};
  peer.progress.done = {57, 0};
  peer.progress.blocked = Blocked(58, now - 2200ms);
  const auto alarm = JudgePeers(0, own, {peer}, now, kTimeout);
  ASSERT_TRUE(alarm.has_value());
  EXPECT_EQ(alarm->peer, 1);
  EXPECT_TRUE(alarm->stopped);
  EXPECT_NE(alarm->message.find("rank 1 stopped"), std::string::npos) << alarm->message;
  EXPECT_NE(alarm->message.find("'all-gather of unit 'fc1'' (#58"), std::string::npos)
      << alarm->message;
  EXPECT_NE(alarm->message.find("this rank (0) is blocked in"), std::string::npos)
      << alarm->message;
  // Within the timeout: nothing.
  peer.last_heard = now - 1900ms;
  EXPECT_FALSE(JudgePeers(0, own, {peer}, now, kTimeout).has_value());
  // A peer that said it was leaving is never judged.
  peer.last_heard = now - 20s;
  peer.left = true;
  EXPECT_FALSE(JudgePeers(0, own, {peer}, now, kTimeout).has_value());
}

TEST(WatchdogRulesTest, WaitingGroupsAreLeftAlone) {
  const auto now = WatchdogClock::now();
  // All ranks waiting on replay, outside any collective, for a long time.
  CollectiveProgress idle;
  idle.issued = idle.done = {40, 0};
  PeerView peer = Peer(1, now - 100ms);
  peer.progress = idle;
  EXPECT_FALSE(JudgePeers(0, idle, {peer}, now, kTimeout).has_value());
  // This rank blocked in #41 for a minute while the peer samples replay.
  CollectiveProgress own = idle;
  own.issued = {41, 0};
  own.blocked = Blocked(41, now - 60s);
  EXPECT_FALSE(JudgePeers(0, own, {peer}, now, kTimeout).has_value());
  // The peer blocked in #41 for a minute while this rank has not issued it.
  peer.progress.issued = {41, 0};
  peer.progress.blocked = Blocked(41, now - 60s);
  EXPECT_FALSE(JudgePeers(0, idle, {peer}, now, kTimeout).has_value());
  // Both blocked in the same #41: not a peer's hang (the collective timeout
  // bounds it).
  EXPECT_FALSE(JudgePeers(0, own, {peer}, now, kTimeout).has_value());
}

TEST(WatchdogRulesTest, APeerAliveButStuckInACollectiveThisRankCompletedIsNamed) {
  const auto now = WatchdogClock::now();
  CollectiveProgress own;
  own.issued = {43, 0};
  own.done = {42, 0};
  own.done_at = {now - 3s, {}};
  own.blocked = Blocked(43, now - 3s, "all-reduce of the update's norms");
  PeerView peer = Peer(1, now - 100ms);
  peer.progress.issued = {41, 0};
  peer.progress.done = {40, 0};
  peer.progress.blocked = Blocked(41, now - 2500ms);
  const auto alarm = JudgePeers(0, own, {peer}, now, kTimeout);
  ASSERT_TRUE(alarm.has_value());
  EXPECT_FALSE(alarm->stopped);
  EXPECT_EQ(alarm->peer, 1);
  EXPECT_NE(alarm->message.find("alive but hung"), std::string::npos) << alarm->message;
  EXPECT_NE(alarm->message.find("#41"), std::string::npos) << alarm->message;
  // Blocked there for less than the timeout: nothing yet.
  peer.progress.blocked = Blocked(41, now - 1s);
  EXPECT_FALSE(JudgePeers(0, own, {peer}, now, kTimeout).has_value());
  // The peer waited 5 s for this rank, which completed #41 just now: the
  // last heartbeat, sent before the peer's own completion, still says
  // "blocked in #41 for 5 s". Not a hang.
  peer.progress.blocked = Blocked(41, now - 5s);
  own.done_at = {now - 200ms, {}};
  EXPECT_FALSE(JudgePeers(0, own, {peer}, now, kTimeout).has_value());
}

TEST(InFlightCollectivesTest, RecordsTheBlockedCollectiveAndCompletionsOutOfOrder) {
  InFlightCollectives record;
  const int64_t a = record.Issue(CollectivePlane::kData);
  const int64_t b = record.Issue(CollectivePlane::kData);
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(record.Issue(CollectivePlane::kControl), 1);  // its own count
  {
    InFlightCollectives::Waiting waiting(&record, CollectivePlane::kData, b, "second");
    const CollectiveProgress p = record.Snapshot();
    ASSERT_TRUE(p.blocked.has_value());
    EXPECT_EQ(p.blocked->name, "second");
    EXPECT_EQ(p.blocked->seq, 2);
  }
  CollectiveProgress p = record.Snapshot();
  EXPECT_FALSE(p.blocked.has_value());
  EXPECT_EQ(p.issued[0], 2);
  EXPECT_EQ(p.done[0], 0);  // #1 is still in flight
  record.Complete(CollectivePlane::kData, a);
  p = record.Snapshot();
  EXPECT_EQ(p.done[0], 2);
  EXPECT_EQ(p.done[1], 0);
  // #3 is never waited for: 1025 later completions later it counts as done.
  record.Issue(CollectivePlane::kData);
  for (int i = 0; i < 1025; ++i) {
    record.Complete(CollectivePlane::kData, record.Issue(CollectivePlane::kData));
  }
  EXPECT_EQ(record.Snapshot().done[0], 3 + 1025);
}

}  // namespace
}  // namespace rlswarm::learner
