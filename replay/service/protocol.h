#pragma once

// The wire format of the replay service: how each method's request and reply
// map onto rpc payloads (common/payload.h: one frame per array, with its dtype
// and shape). The service (replay_service.h) and the clients
// (replay_writer.h, replay_sampler.h) both use these functions, so the format
// is defined once. A small JSON payload carries names and scalars; arrays
// travel as raw frames, never serialised element by element.
//
//   insert             [meta {"fields": [names], "policy_version": v,
//                      "priorities": bool}] [field 0] ... [field F-1]
//                      [priorities float64 [N], if "priorities"]
//                      -> [keys uint64 [N]]
//   sample             [meta {"batch_size": B, "policy_version": v | null}]
//                      -> [meta {"shard", "beta", "fields": [names]}] [totals]
//                         [keys] [priorities] [probabilities] [table_sizes]
//                         [weights] [times_sampled] [policy_versions]
//                         [insert_times_ns] [field 0] ... [field F-1]
//   update_priorities  [keys uint64 [K]] [priorities float64 [K]]
//                      -> [int64 [updated, ignored]] [totals]
//   totals             -> [totals]
//   info               -> [JSON: shard, table info, server stats, checkpoints]
//   checkpoint         -> [JSON: the checkpoint written]
//   reconfigure        [JSON {"rate_limiter": {...}, "max_times_sampled",
//                      "alpha", "beta"}, each optional] -> [JSON info]
//
// Keys travel as int64 frames holding the uint64 bits (LibTorch has no
// uint64). [totals] is float64 [inserted, sampled, size, total_weight] (TableTotals;
// counts are exact in a double up to 2^53).
//
// Keys: a table's keys use the low 56 bits; the service puts its shard index
// in the top 8, so a key names its shard and any client can route a priority
// update to the shard that owns it (at most kMaxShards shards).
//
// Every Decode* throws InvalidArgument saying what is malformed: the service
// turns it into an error reply, so nothing a client sends crashes a shard.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/payload.h"
#include "replay/table_types.h"

namespace rlswarm::replay::protocol {

inline constexpr char kInsert[] = "insert";
inline constexpr char kSample[] = "sample";
inline constexpr char kUpdatePriorities[] = "update_priorities";
inline constexpr char kTotals[] = "totals";
inline constexpr char kInfo[] = "info";
inline constexpr char kCheckpoint[] = "checkpoint";
inline constexpr char kReconfigure[] = "reconfigure";

inline constexpr int kShardBits = 8;
inline constexpr int kMaxShards = 1 << kShardBits;
inline constexpr int kLocalKeyBits = 64 - kShardBits;

// Throws Internal if `local_key` uses the shard bits (a table that issued
// 2^56 / capacity keys: never in practice).
std::uint64_t GlobalKey(int shard, std::uint64_t local_key);
inline int ShardOfKey(std::uint64_t key) { return static_cast<int>(key >> kLocalKeyBits); }
inline std::uint64_t LocalKey(std::uint64_t key) {
  return key & ((std::uint64_t{1} << kLocalKeyBits) - 1);
}

// --- insert ------------------------------------------------------------------

// The decoded request: views into the request's payloads, which must outlive
// it (the service keeps the payloads until the insert completes).
struct DecodedInsert {
  std::vector<std::string> names;
  std::vector<FieldView> fields;
  std::span<const double> priorities;
  std::int64_t policy_version = 0;
};

// `batch` must be a valid InsertBatch (the table checks it again).
std::vector<Payload> EncodeInsert(const InsertBatch& batch);
// As EncodeInsert, but the frames point into the batch's memory, which
// `owner` keeps alive (no copy); a null owner copies.
std::vector<Payload> EncodeInsertSharing(const InsertBatch& batch,
                                         const std::shared_ptr<const void>& owner);
// As EncodeInsert for `items` rows of `signature` held in `columns` (one
// buffer per field, signature order), which the frames share: no copy. A
// buffer's owner may carry a deleter (the writer recycles its buffers).
using ColumnBuffer = std::shared_ptr<const std::vector<std::byte>>;
std::vector<Payload> EncodeInsertAdopting(const Signature& signature, std::int64_t items,
                                          std::vector<ColumnBuffer> columns,
                                          std::vector<double> priorities,
                                          std::int64_t policy_version);
// Checks the frame layout and dtypes; the table checks the fields against
// its signature. `decoded.fields` point into `decoded.names` and `payloads`.
void DecodeInsert(const std::vector<Payload>& payloads, DecodedInsert& decoded);
InsertBatch ToInsertBatch(const DecodedInsert& decoded);

Payload EncodeKeys(int shard, const std::vector<std::uint64_t>& local_keys);
std::vector<std::uint64_t> DecodeKeys(const std::vector<Payload>& payloads);

// --- sample ------------------------------------------------------------------

std::vector<Payload> EncodeSampleRequest(const SampleRequest& request);
SampleRequest DecodeSampleRequest(const std::vector<Payload>& payloads);

// One shard's reply: the batch (keys already global) and the shard's totals
// after the draw.
struct ShardSample {
  int shard = 0;
  TableTotals totals;
  SampledBatch batch;
};

// Zero-copy: the field payloads share the batch's buffers.
std::vector<Payload> EncodeSampleReply(int shard, const TableTotals& totals, SampledBatch batch);
// Zero-copy for the fields: they keep the reply's frames alive.
ShardSample DecodeSampleReply(const std::vector<Payload>& payloads);

// --- priorities and totals -----------------------------------------------------

std::vector<Payload> EncodePriorityUpdate(std::span<const std::uint64_t> keys,
                                          std::span<const double> priorities);
// Views into `payloads`.
void DecodePriorityUpdate(const std::vector<Payload>& payloads,
                          std::span<const std::uint64_t>& keys,
                          std::span<const double>& priorities);

Payload EncodeTotals(const TableTotals& totals);
// From payloads[index].
TableTotals DecodeTotals(const std::vector<Payload>& payloads, std::size_t index);

std::vector<Payload> EncodePriorityUpdateReply(const PriorityUpdateResult& result,
                                               const TableTotals& totals);
std::pair<PriorityUpdateResult, TableTotals> DecodePriorityUpdateReply(
    const std::vector<Payload>& payloads);

// --- reconfigure ----------------------------------------------------------------

std::string EncodeReconfig(const TableReconfig& change);
// Throws InvalidArgument for unknown keys or wrong types (not range checks:
// the table validates the change).
TableReconfig DecodeReconfig(const std::string& json);

}  // namespace rlswarm::replay::protocol
