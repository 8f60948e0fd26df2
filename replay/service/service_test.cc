// The replay service over real ZeroMQ sockets on tcp loopback, in one
// process: ReplayService shards, ReplayWriter, ReplaySampler and raw rpc
// clients sending malformed requests.

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/errors.h"
#include "replay/service/protocol.h"
#include "replay/service/replay_sampler.h"
#include "replay/service/replay_service.h"
#include "replay/service/replay_writer.h"
#include "replay/test_util.h"
#include "rpc/client.h"

namespace rlswarm::replay {
namespace {

using namespace std::chrono_literals;
using testing::FieldAt;
using testing::TestBatch;
using testing::TestOptions;
using testing::WaitFor;
using Json = nlohmann::json;

ReplayServiceOptions ShardOptions(int shard, int num_shards, std::int64_t capacity = 1000,
                                  SelectorKind kind = SelectorKind::kUniform) {
  ReplayServiceOptions o;
  o.shard = shard;
  o.num_shards = num_shards;
  o.table = TestOptions(capacity, kind);
  o.table.seed = 100 + static_cast<std::uint64_t>(shard);
  o.server.endpoint = "tcp://127.0.0.1:*";
  return o;
}

std::unique_ptr<ReplayService> StartShard(ReplayServiceOptions options) {
  auto service = std::make_unique<ReplayService>(std::move(options));
  service->Start();
  return service;
}

ReplaySampler MakeSampler(const std::vector<std::string>& endpoints,
                          std::chrono::milliseconds timeout = 5000ms) {
  ReplaySamplerOptions o;
  o.endpoints = endpoints;
  o.timeout = timeout;
  return ReplaySampler(o);
}

ReplayWriterOptions WriterOptions(const std::vector<std::string>& endpoints) {
  ReplayWriterOptions o;
  o.endpoints = endpoints;
  o.signature = testing::TestSignature();
  o.max_batch_items = 8;
  o.flush_interval = 10ms;
  return o;
}

rpc::Client RawClient(const std::string& endpoint) {
  rpc::ClientOptions o;
  o.endpoint = endpoint;
  o.default_timeout = 5000ms;
  return rpc::Client(o);
}

TEST(ReplayServiceTest, WriterAndSamplerMoveItemsIntact) {
  auto shard = StartShard(ShardOptions(0, 1));
  ReplayWriter writer(WriterOptions({shard->endpoint()}));
  TestBatch items(20, /*first=*/100);
  writer.Append(items.Get({}, /*version=*/7));
  ASSERT_TRUE(writer.Flush(5s));
  EXPECT_EQ(writer.stats().items_acknowledged, 20);
  EXPECT_EQ(shard->table().Info().size, 20);

  ReplaySampler sampler = MakeSampler({shard->endpoint()});
  const SampledBatch batch = sampler.Sample(64);
  ASSERT_EQ(batch.size(), 64);
  ASSERT_EQ(batch.fields.size(), 3u);
  for (std::size_t i = 0; i < 64; ++i) {
    // Item k carries k in every field (TestBatch): rows stay together.
    const auto action = FieldAt<std::int64_t>(batch.fields[1], i);
    EXPECT_GE(action, 100);
    EXPECT_LT(action, 120);
    EXPECT_EQ(FieldAt<float>(batch.fields[0], 4 * i), static_cast<float>(action));
    EXPECT_EQ(FieldAt<float>(batch.fields[2], i), static_cast<float>(action));
    EXPECT_EQ(batch.policy_versions[i], 7);
    EXPECT_EQ(protocol::ShardOfKey(batch.keys[i]), 0);
    EXPECT_DOUBLE_EQ(batch.weights[i], 1.0);
  }
}

TEST(ReplayServiceTest, SharedBatchesAreSentWithoutCopiesAfterTheStagedItems) {
  auto shard = StartShard(ShardOptions(0, 1));
  ReplayWriter writer(WriterOptions({shard->endpoint()}));
  TestBatch staged(3, /*first=*/10);
  writer.Append(staged.Get({}, /*version=*/1));  // 3 < max_batch_items: stays staged
  auto shared = std::make_shared<TestBatch>(20, /*first=*/100);
  std::weak_ptr<TestBatch> watch = shared;
  writer.AppendShared(shared->Get({}, /*version=*/2), shared);
  shared.reset();  // the writer's frames keep it alive until acknowledged
  ASSERT_TRUE(writer.Flush(5s));
  EXPECT_EQ(writer.stats().items_acknowledged, 23);
  EXPECT_EQ(writer.stats().batches_sent, 2);
  EXPECT_TRUE(WaitFor([&] { return watch.expired(); }, 5s)) << "the shared batch was not released";
  // The staged items went first: the FIFO table holds them under smaller keys.
  const SampledBatch batch = shard->table().Sample({200});
  for (std::size_t i = 0; i < batch.keys.size(); ++i) {
    const auto action = FieldAt<std::int64_t>(batch.fields[1], i);
    const bool was_staged = action < 100;
    EXPECT_EQ(batch.policy_versions[i], was_staged ? 1 : 2);
    EXPECT_EQ(FieldAt<float>(batch.fields[2], i), static_cast<float>(action));
    const std::uint64_t seq = protocol::LocalKey(batch.keys[i]) >> 10;  // capacity 1000
    EXPECT_EQ(seq <= 3, was_staged) << action;
  }
  // Bad input is refused before anything is sent.
  TestBatch bad(4);
  InsertBatch renamed = bad.Get();
  renamed.fields[1].name = "actoin";
  EXPECT_THROW(writer.AppendShared(renamed, std::make_shared<int>(0)), InvalidArgument);
  EXPECT_THROW(writer.AppendShared(bad.Get(), nullptr), InvalidArgument);
  EXPECT_EQ(shard->table().Info().size, 23);
}

TEST(ReplayServiceTest, MismatchedInsertIsRejectedWholeNamingTheField) {
  auto shard = StartShard(ShardOptions(0, 1));
  rpc::Client client = RawClient(shard->endpoint());
  TestBatch items(4);
  InsertBatch good = items.Get();
  // Wrong dtype of one field.
  std::vector<Payload> payloads = protocol::EncodeInsert(good);
  const std::vector<float> rewards_as_double_size(8, 1.0f);
  payloads[3] = Payload::Copy(DType::kFloat64, {4}, rewards_as_double_size.data(), 32);
  try {
    client.Call(protocol::kInsert, payloads).get();
    FAIL() << "accepted a float64 reward";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("reward"), std::string::npos) << e.what();
  }
  // An unknown field name.
  InsertBatch renamed = items.Get();
  renamed.fields[1].name = "actoin";
  EXPECT_THROW(client.Call(protocol::kInsert, protocol::EncodeInsert(renamed)).get(),
               InvalidArgument);
  // Different item counts in two fields.
  InsertBatch uneven = items.Get();
  const std::vector<std::int64_t> three = {3};
  uneven.fields[1].shape = three;
  uneven.fields[1].data = uneven.fields[1].data.first(24);
  EXPECT_THROW(client.Call(protocol::kInsert, protocol::EncodeInsert(uneven)).get(),
               InvalidArgument);
  // A negative priority.
  const std::vector<double> bad_priorities = {1, 1, -1, 1};
  EXPECT_THROW(
      client.Call(protocol::kInsert, protocol::EncodeInsert(items.Get(bad_priorities))).get(),
      InvalidArgument);
  EXPECT_EQ(shard->table().Info().size, 0);  // nothing partial stored
  client.Call(protocol::kInsert, protocol::EncodeInsert(good)).get();
  EXPECT_EQ(shard->table().Info().size, 4);
}

TEST(ReplayServiceTest, MalformedRequestsGetErrorsAndTheShardKeepsServing) {
  auto shard = StartShard(ShardOptions(0, 1));
  rpc::Client client = RawClient(shard->endpoint());
  auto call = [&](const char* method, std::vector<Payload> payloads) {
    return client.Call(method, std::move(payloads));
  };
  EXPECT_THROW(call(protocol::kInsert, {}).get(), InvalidArgument);
  std::vector<Payload> not_json;
  not_json.push_back(Payload::FromString("{not json"));
  not_json.push_back(Payload::FromString("x"));
  EXPECT_THROW(call(protocol::kInsert, not_json).get(), InvalidArgument);
  std::vector<Payload> lying_meta;  // says 3 fields, sends 1
  lying_meta.push_back(Payload::FromString(
      R"({"fields": ["observation", "action", "reward"], "policy_version": 0, "priorities": false})"));
  lying_meta.push_back(Payload::FromString("x"));
  EXPECT_THROW(call(protocol::kInsert, lying_meta).get(), InvalidArgument);
  std::vector<Payload> bad_sample;
  bad_sample.push_back(Payload::FromString(R"({"batch_size": "many"})"));
  EXPECT_THROW(call(protocol::kSample, bad_sample).get(), InvalidArgument);
  std::vector<Payload> huge_sample;
  huge_sample.push_back(Payload::FromString(R"({"batch_size": 1000000000000})"));
  EXPECT_THROW(call(protocol::kSample, huge_sample).get(), InvalidArgument);
  std::vector<Payload> uneven_update;
  uneven_update.push_back(Payload::FromVector(DType::kInt64, {2}, std::vector<std::int64_t>{1, 2}));
  uneven_update.push_back(Payload::FromVector(DType::kFloat64, {1}, std::vector<double>{1}));
  EXPECT_THROW(call(protocol::kUpdatePriorities, uneven_update).get(), InvalidArgument);
  std::vector<Payload> bad_reconfig;
  bad_reconfig.push_back(Payload::FromString(R"({"alpha": -3})"));
  EXPECT_THROW(call(protocol::kReconfigure, bad_reconfig).get(), InvalidArgument);
  std::vector<Payload> unknown_key;
  unknown_key.push_back(Payload::FromString(R"({"capacity": 3})"));
  EXPECT_THROW(call(protocol::kReconfigure, unknown_key).get(), InvalidArgument);
  EXPECT_THROW(call(protocol::kCheckpoint, {}).get(), FailedPrecondition);  // no directory
  // Still serving.
  TestBatch items(2);
  EXPECT_EQ(protocol::DecodeKeys(
                call(protocol::kInsert, protocol::EncodeInsert(items.Get())).get().payloads)
                .size(),
            2u);
}

TEST(ReplayServiceTest, HeldSampleDoesNotBlockInsertsAndCompletesWhenAdmitted) {
  ReplayServiceOptions options = ShardOptions(0, 1);
  options.table.rate_limiter = RateLimiterOptions::MinSize(10);
  options.server.num_workers = 1;  // a held sample must not occupy the only worker
  auto shard = StartShard(options);
  ReplaySampler sampler = MakeSampler({shard->endpoint()});
  auto sample = std::async(std::launch::async, [&] { return sampler.Sample(4); });
  EXPECT_EQ(sample.wait_for(100ms), std::future_status::timeout);
  ReplayWriter writer(WriterOptions({shard->endpoint()}));
  for (int i = 0; i < 5; ++i) {
    TestBatch items(2, 2 * i);
    writer.Append(items.Get());
    ASSERT_TRUE(writer.Flush(5s));  // inserts complete while the sample waits
  }
  ASSERT_EQ(sample.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(sample.get().size(), 4);
}

TEST(ReplayServiceTest, SampleThatTheRateLimiterHoldsPastItsDeadlineFails) {
  ReplayServiceOptions options = ShardOptions(0, 1);
  options.table.rate_limiter = RateLimiterOptions::MinSize(10);
  auto shard = StartShard(options);
  ReplaySampler sampler = MakeSampler({shard->endpoint()}, 200ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(sampler.Sample(4), DeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  // The server expires the waiter at the same deadline (within its expiry interval).
  EXPECT_TRUE(WaitFor([&] { return shard->table().Info().rate_limiter.pending_samples == 0; }, 2s));
}

TEST(ReplayServiceTest, PriorityUpdatesReachTheShardThatOwnsEachKey) {
  auto a = StartShard(ShardOptions(0, 2, 1000, SelectorKind::kPrioritized));
  auto b = StartShard(ShardOptions(1, 2, 1000, SelectorKind::kPrioritized));
  ReplayWriter writer(WriterOptions({a->endpoint(), b->endpoint()}));
  TestBatch items(8);
  writer.Append(items.Get());
  writer.Append(items.Get());  // round-robin: 8 items to each shard
  ASSERT_TRUE(writer.Flush(5s));
  ASSERT_EQ(a->table().Info().size, 8);
  ASSERT_EQ(b->table().Info().size, 8);
  ReplaySampler sampler = MakeSampler({a->endpoint(), b->endpoint()});
  const SampledBatch batch = sampler.Sample(64);
  std::set<int> shards;
  for (auto key : batch.keys) shards.insert(protocol::ShardOfKey(key));
  EXPECT_EQ(shards, (std::set<int>{0, 1}));
  std::vector<double> priorities(batch.keys.size(), 5.0);
  const PriorityUpdateResult result = sampler.UpdatePriorities(batch.keys, priorities);
  EXPECT_EQ(result.updated, 64);
  EXPECT_EQ(result.ignored, 0);
  EXPECT_EQ(a->table().Info().max_priority, 5.0);
  EXPECT_EQ(b->table().Info().max_priority, 5.0);
  // Evicted or foreign keys are ignored and counted; a bad priority changes nothing.
  const std::vector<std::uint64_t> stale = {protocol::GlobalKey(0, 12345),
                                            protocol::GlobalKey(7, 1)};
  EXPECT_EQ(sampler.UpdatePriorities(stale, std::vector<double>{1.0, 1.0}).ignored, 2);
  const std::vector<double> nan = {std::nan("")};
  EXPECT_THROW(sampler.UpdatePriorities(std::span(batch.keys).first(1), nan), InvalidArgument);
}

TEST(ReplayServiceTest, ShardsAreDrawnInProportionToTheirPriorityMass) {
  // alpha 1: shard 1's items have 3x the priority of shard 0's, so a global
  // PER draw takes 3/4 of the batch from shard 1.
  auto make = [](int shard) {
    ReplayServiceOptions o = ShardOptions(shard, 2, 1000, SelectorKind::kPrioritized);
    o.table.selector.alpha = 1.0;
    o.table.selector.beta = 1.0;
    return StartShard(o);
  };
  auto a = make(0);
  auto b = make(1);
  TestBatch items(50);
  const std::vector<double> ones(50, 1.0);
  const std::vector<double> threes(50, 3.0);
  a->table().Insert(items.Get(ones));
  b->table().Insert(items.Get(threes));
  ReplaySampler sampler = MakeSampler({a->endpoint(), b->endpoint()});
  std::int64_t from_b = 0;
  std::int64_t total = 0;
  for (int round = 0; round < 20; ++round) {
    const SampledBatch batch = sampler.Sample(200);
    for (std::size_t i = 0; i < batch.keys.size(); ++i) {
      const bool in_b = protocol::ShardOfKey(batch.keys[i]) == 1;
      from_b += in_b;
      // Global P(i) = p_i / sum p = p_i / 200; N = 100; beta = 1:
      // w = (N P)^-1 normalised by the batch max, which is a shard-0 item.
      EXPECT_NEAR(batch.probabilities[i], (in_b ? 3.0 : 1.0) / 200.0, 1e-12);
      EXPECT_EQ(batch.table_sizes[i], 100);
      EXPECT_NEAR(batch.weights[i], in_b ? 1.0 / 3.0 : 1.0, 1e-12);
    }
    total += batch.size();
  }
  // 4000 draws, p = 0.75: sd ~ 0.007; 0.05 is 7 sd.
  EXPECT_NEAR(static_cast<double>(from_b) / static_cast<double>(total), 0.75, 0.05);
}

TEST(ReplayServiceTest, SamplerDrawsFromTheShardsThatAreUp) {
  auto a = StartShard(ShardOptions(0, 2));
  auto b = StartShard(ShardOptions(1, 2));
  TestBatch items(10);
  a->table().Insert(items.Get());
  b->table().Insert(items.Get());
  ReplaySampler sampler = MakeSampler({a->endpoint(), b->endpoint()}, 3000ms);
  ASSERT_EQ(sampler.Sample(32).size(), 32);
  b->Stop();
  b.reset();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    const SampledBatch batch = sampler.Sample(32);
    ASSERT_EQ(batch.size(), 32);
    for (auto key : batch.keys) EXPECT_EQ(protocol::ShardOfKey(key), 0);
  }
  EXPECT_GE(sampler.stats().shard_failures, 1);
  // A dead shard costs at most a straggler timeout, not the call timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2500ms);
}

TEST(ReplayServiceTest, WriterBuffersBoundedlyWhileReplayIsDownAndDeliversLater) {
  // Find a free port, then start the writer before any shard is up.
  std::string endpoint;
  {
    auto probe = StartShard(ShardOptions(0, 1));
    endpoint = probe->endpoint();
  }
  ReplayWriterOptions options = WriterOptions({endpoint});
  options.max_buffered_batches = 4;
  options.max_in_flight = 1;
  options.max_block = 10ms;
  options.insert_timeout = 300ms;
  ReplayWriter writer(options);
  for (int i = 0; i < 10; ++i) {
    TestBatch items(8, 8 * i);  // one batch per append
    writer.Append(items.Get());
  }
  const ReplayWriterStats waiting = writer.stats();
  EXPECT_LE(waiting.buffered, 4);
  // The first batch went out at once and failed (or is still in flight):
  // it waits beside the buffer, not in it.
  EXPECT_LE(waiting.resending + waiting.in_flight, 1);
  EXPECT_GT(waiting.items_dropped, 0);  // counted, not silently lost
  ReplayServiceOptions restart = ShardOptions(0, 1);
  restart.server.endpoint = endpoint;
  auto shard = StartShard(restart);
  ASSERT_TRUE(writer.Flush(10s));
  const ReplayWriterStats done = writer.stats();
  EXPECT_EQ(done.items_acknowledged + done.items_dropped, 80);
  EXPECT_EQ(shard->table().Info().size, done.items_acknowledged);
  // The buffered batches and the failed first one, which a full buffer
  // must not drop: it was sent before the outage showed.
  EXPECT_GE(done.items_acknowledged, 8 * 5);
  std::set<std::int64_t> stored;
  const SampledBatch batch = shard->table().Sample({1000});
  for (std::size_t i = 0; i < batch.size(); ++i) {
    stored.insert(FieldAt<std::int64_t>(batch.fields[1], i));
  }
  for (std::int64_t first_batch_item = 0; first_batch_item < 8; ++first_batch_item) {
    EXPECT_TRUE(stored.count(first_batch_item)) << first_batch_item;
  }
}

// The actor's promise (actor.writer_max_block_s): while replay holds its
// inserts back (no learner samples), the writer waits instead of dropping,
// for much longer than insert_timeout and with more batches than its buffer
// holds, and everything arrives once sampling resumes.
TEST(ReplayServiceTest, WriterHeldBackByTheRateLimiterWaitsWithinMaxBlockAndDropsNothing) {
  ReplayServiceOptions shard_options = ShardOptions(0, 1);
  // Inserts stop 16 items ahead of the samples.
  shard_options.table.rate_limiter = RateLimiterOptions::SampleToInsertRatio(1.0, 8, 8);
  auto shard = StartShard(shard_options);
  ReplayWriterOptions options = WriterOptions({shard->endpoint()});
  options.max_buffered_batches = 2;
  options.max_in_flight = 2;
  options.insert_timeout = 150ms;  // every held insert times out, many times over
  options.retry_backoff = 20ms;
  options.max_block = 30s;
  ReplayWriter writer(options);
  std::atomic<int> appended{0};
  std::thread actor([&] {
    for (int i = 0; i < 12; ++i) {
      TestBatch items(8, 8 * i);  // one batch per append
      writer.Append(items.Get());
      ++appended;
    }
  });
  // Held back for ~1.5 s: ten insert timeouts, the buffer full, the actor
  // blocked in Append.
  std::this_thread::sleep_for(1500ms);
  EXPECT_LT(appended.load(), 12);
  EXPECT_EQ(writer.stats().items_dropped, 0);
  EXPECT_GT(writer.stats().batches_retried, 0);
  // The learner comes back: sampling lets the inserts through.
  ReplaySampler sampler = MakeSampler({shard->endpoint()});
  for (int i = 0; i < 200 && shard->table().Info().size < 96; ++i) sampler.Sample(8);
  actor.join();
  ASSERT_TRUE(writer.Flush(10s));
  const ReplayWriterStats done = writer.stats();
  EXPECT_EQ(done.items_dropped, 0);
  EXPECT_EQ(done.items_acknowledged, 96);
}

TEST(ReplayServiceTest, GlobalRatioLetsAShardSampleWhatOtherShardsInserted) {
  // samples_per_insert 1, error buffer 10: alone, shard 1 (20 inserts) may
  // serve ~30 samples; with shard 0's 200 inserts counted, far more.
  auto make = [](int shard, std::vector<std::string> peers) {
    ReplayServiceOptions o = ShardOptions(shard, 2);
    o.table.rate_limiter = RateLimiterOptions::SampleToInsertRatio(1.0, 1, 10.0);
    o.peers = std::move(peers);
    o.peer_poll_interval = 10ms;
    return StartShard(o);
  };
  auto a = make(0, {});
  TestBatch many(200);
  a->table().Insert(many.Get());
  auto b = make(1, {a->endpoint()});
  TestBatch few(20);
  b->table().Insert(few.Get());
  ASSERT_TRUE(WaitFor([&] { return b->table().Info().rate_limiter.cursor > 100; }, 5s));
  EXPECT_EQ(b->table().Sample({100}, testing::In(2000ms)).size(), 100);
  // Without the peer the same request waits and times out.
  auto lone = make(1, {});
  lone->table().Insert(few.Get());
  // 20 inserts with an error buffer of 10 admit batches while the cursor
  // stays above -9: two batches of 25, not three.
  EXPECT_EQ(lone->table().Sample({25}, testing::In(300ms)).size(), 25);
  EXPECT_EQ(lone->table().Sample({25}, testing::In(300ms)).size(), 25);
  EXPECT_THROW(lone->table().Sample({25}, testing::In(300ms)), DeadlineExceeded);
}

TEST(ReplayServiceTest, ReconfigureChangesALiveTable) {
  ReplayServiceOptions options = ShardOptions(0, 1, 1000, SelectorKind::kPrioritized);
  options.table.rate_limiter = RateLimiterOptions::MinSize(100);
  auto shard = StartShard(options);
  TestBatch items(10);
  shard->table().Insert(items.Get());
  ReplaySampler sampler = MakeSampler({shard->endpoint()}, 200ms);
  EXPECT_THROW(sampler.Sample(4), DeadlineExceeded);
  TableReconfig change;
  change.rate_limiter = RateLimiterOptions::MinSize(5);
  change.alpha = 0.9;
  change.max_times_sampled = 3;
  const Json info = Json::parse(sampler.Reconfigure(0, change));
  EXPECT_EQ(info["table"]["rate_limiter"]["options"]["min_size_to_sample"], 5);
  EXPECT_EQ(info["table"]["selector"]["alpha"], 0.9);
  EXPECT_EQ(info["table"]["max_times_sampled"], 3);
  EXPECT_EQ(sampler.Sample(4).size(), 4);
  TableReconfig bad;
  bad.beta = 2.0;
  EXPECT_THROW(sampler.Reconfigure(0, bad), InvalidArgument);
  EXPECT_EQ(Json::parse(sampler.Info(0))["table"]["selector"]["beta"], 0.4);
}

TEST(ReplayServiceTest, InfoReportsCountersRatesStalenessAndHistogram) {
  auto shard = StartShard(ShardOptions(0, 1, 1000, SelectorKind::kPrioritized));
  TestBatch items(10);
  const std::vector<double> priorities(10, 2.0);
  shard->table().Insert(items.Get(priorities, /*version=*/3));
  ReplaySampler sampler = MakeSampler({shard->endpoint()});
  sampler.Sample(16, /*policy_version=*/5);
  const Json info = Json::parse(sampler.Info(0));
  EXPECT_EQ(info["shard"], 0);
  EXPECT_EQ(info["table"]["size"], 10);
  EXPECT_EQ(info["table"]["counters"]["sampled"], 16);
  EXPECT_EQ(info["table"]["staleness"]["version_lag"]["p50"], 2);
  EXPECT_EQ(info["table"]["priorities"]["count"], 10);
  EXPECT_GE(info["server"]["requests"].get<int>(), 2);
}

TEST(ReplayServiceTest, RestartedShardResumesFromItsCheckpoint) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("replay_service_" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(dir);
  ReplayServiceOptions options = ShardOptions(0, 1);
  options.checkpoints = CheckpointerOptions{dir, 2};
  std::string endpoint;
  {
    auto shard = StartShard(options);
    TestBatch items(30);
    shard->table().Insert(items.Get());
    ReplaySampler sampler = MakeSampler({shard->endpoint()});
    const Json written = Json::parse(sampler.Checkpoint(0));
    EXPECT_EQ(written["items"], 30);
    TestBatch more(5, 30);
    shard->table().Insert(more.Get());
  }  // Stop(): a last checkpoint with all 35
  auto shard = StartShard(options);
  EXPECT_EQ(shard->table().Info().size, 35);
  ASSERT_TRUE(shard->stats().loaded.has_value());
  EXPECT_EQ(shard->stats().loaded->items, 35);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rlswarm::replay
