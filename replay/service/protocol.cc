#include "replay/service/protocol.h"

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "replay/json.h"

namespace rlswarm::replay::protocol {
namespace {

using Json = nlohmann::json;

Json ParseJson(const Payload& payload, const char* what) {
  if (payload.dtype() != DType::kUInt8) {
    throw InvalidArgument(std::string(what) + ": expected a uint8 JSON payload");
  }
  Json j = Json::parse(payload.ToString(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    throw InvalidArgument(std::string(what) + ": malformed JSON");
  }
  return j;
}

void ExpectPayloads(const std::vector<Payload>& payloads, std::size_t min, const char* what) {
  if (payloads.size() < min) {
    throw InvalidArgument(std::string(what) + ": expected at least " + std::to_string(min) +
                          " payloads, got " + std::to_string(payloads.size()));
  }
}

// A 1-D payload of T with `n` elements (n < 0: any).
template <class T>
std::span<const T> Vector(const Payload& payload, std::int64_t n, const char* what) {
  const std::span<const T> values = payload.As<T>();  // throws on a wrong dtype
  if (payload.shape().size() != 1 || (n >= 0 && payload.shape()[0] != n)) {
    throw InvalidArgument(std::string(what) + ": expected shape [" +
                          (n >= 0 ? std::to_string(n) : std::string("N")) + "], got " +
                          ShapeToString(payload.shape()));
  }
  return values;
}

template <class T>
Payload FromVector(DType dtype, std::vector<T> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return Payload::FromVector(dtype, {n}, std::move(values));
}

template <class T>
std::vector<T> ToVector(std::span<const T> values) {
  return {values.begin(), values.end()};
}

}  // namespace

std::uint64_t GlobalKey(int shard, std::uint64_t local_key) {
  if (ShardOfKey(local_key) != 0) {
    throw Internal("table key " + std::to_string(local_key) + " uses the shard bits");
  }
  return (static_cast<std::uint64_t>(shard) << kLocalKeyBits) | local_key;
}

// --- insert ------------------------------------------------------------------------

std::vector<Payload> EncodeInsert(const InsertBatch& batch) {
  return EncodeInsertSharing(batch, nullptr);
}

std::vector<Payload> EncodeInsertSharing(const InsertBatch& batch,
                                         const std::shared_ptr<const void>& owner) {
  // Without an owner every array is copied into its frame; with one the
  // frames point into the caller's memory.
  const auto frame = [&owner](DType dtype, std::vector<std::int64_t> shape, const void* data,
                              std::size_t bytes) {
    return owner ? Payload::Adopt(dtype, std::move(shape), owner, data, bytes)
                 : Payload::Copy(dtype, std::move(shape), data, bytes);
  };
  Json names = Json::array();
  for (const FieldView& field : batch.fields) names.push_back(std::string(field.name));
  const Json meta = {{"fields", std::move(names)},
                     {"policy_version", batch.policy_version},
                     {"priorities", !batch.priorities.empty()}};
  std::vector<Payload> payloads;
  payloads.reserve(batch.fields.size() + 2);
  payloads.push_back(Payload::FromString(meta.dump()));
  for (const FieldView& field : batch.fields) {
    payloads.push_back(frame(field.dtype, {field.shape.begin(), field.shape.end()},
                             field.data.data(), field.data.size()));
  }
  if (!batch.priorities.empty()) {
    payloads.push_back(frame(DType::kFloat64, {static_cast<std::int64_t>(batch.priorities.size())},
                             batch.priorities.data(), batch.priorities.size_bytes()));
  }
  return payloads;
}

std::vector<Payload> EncodeInsertAdopting(const Signature& signature, std::int64_t items,
                                          std::vector<ColumnBuffer> columns,
                                          std::vector<double> priorities,
                                          std::int64_t policy_version) {
  Json names = Json::array();
  for (const FieldSpec& field : signature.fields) names.push_back(field.name);
  const Json meta = {{"fields", std::move(names)},
                     {"policy_version", policy_version},
                     {"priorities", !priorities.empty()}};
  std::vector<Payload> payloads;
  payloads.reserve(signature.fields.size() + 2);
  payloads.push_back(Payload::FromString(meta.dump()));
  for (std::size_t f = 0; f < signature.fields.size(); ++f) {
    std::vector<std::int64_t> shape = {items};
    shape.insert(shape.end(), signature.fields[f].shape.begin(), signature.fields[f].shape.end());
    const void* data = columns[f]->data();
    const std::size_t bytes = columns[f]->size();
    payloads.push_back(Payload::Adopt(signature.fields[f].dtype, std::move(shape),
                                      std::move(columns[f]), data, bytes));
  }
  if (!priorities.empty()) payloads.push_back(FromVector(DType::kFloat64, std::move(priorities)));
  return payloads;
}

void DecodeInsert(const std::vector<Payload>& payloads, DecodedInsert& decoded) {
  ExpectPayloads(payloads, 2, "insert");
  const Json meta = ParseJson(payloads[0], "insert meta");
  const auto fields = meta.find("fields");
  const auto version = meta.find("policy_version");
  const auto has_priorities = meta.find("priorities");
  if (fields == meta.end() || !fields->is_array() || version == meta.end() ||
      !version->is_number_integer() || has_priorities == meta.end() ||
      !has_priorities->is_boolean()) {
    throw InvalidArgument(
        "insert meta: needs \"fields\" (array of names), \"policy_version\" (integer) and "
        "\"priorities\" (bool)");
  }
  const std::size_t num_fields = fields->size();
  const std::size_t expected = 1 + num_fields + (has_priorities->get<bool>() ? 1 : 0);
  if (num_fields == 0 || payloads.size() != expected) {
    throw InvalidArgument("insert: " + std::to_string(num_fields) + " field names and " +
                          (has_priorities->get<bool>() ? "priorities" : "no priorities") +
                          " need " + std::to_string(expected) + " payloads, got " +
                          std::to_string(payloads.size()));
  }
  decoded.names.clear();
  for (const Json& name : *fields) {
    if (!name.is_string()) throw InvalidArgument("insert meta: field names must be strings");
    decoded.names.push_back(name.get<std::string>());
  }
  decoded.fields.clear();
  for (std::size_t f = 0; f < num_fields; ++f) {
    const Payload& p = payloads[1 + f];
    decoded.fields.push_back({decoded.names[f], p.dtype(), p.shape(), p.bytes()});
  }
  decoded.priorities = {};
  if (has_priorities->get<bool>()) {
    decoded.priorities = Vector<double>(payloads.back(), -1, "insert priorities");
  }
  decoded.policy_version = version->get<std::int64_t>();
}

InsertBatch ToInsertBatch(const DecodedInsert& decoded) {
  return {decoded.fields, decoded.priorities, decoded.policy_version};
}

Payload EncodeKeys(int shard, const std::vector<std::uint64_t>& local_keys) {
  std::vector<std::uint64_t> keys(local_keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = GlobalKey(shard, local_keys[i]);
  return FromVector(DType::kInt64, std::move(keys));
}

std::vector<std::uint64_t> DecodeKeys(const std::vector<Payload>& payloads) {
  ExpectPayloads(payloads, 1, "insert reply");
  return ToVector(Vector<std::uint64_t>(payloads[0], -1, "insert reply keys"));
}

// --- sample ------------------------------------------------------------------------

std::vector<Payload> EncodeSampleRequest(const SampleRequest& request) {
  Json meta = {{"batch_size", request.batch_size}, {"policy_version", nullptr}};
  if (request.policy_version) meta["policy_version"] = *request.policy_version;
  if (request.seed) meta["seed"] = *request.seed;
  std::vector<Payload> payloads;
  payloads.push_back(Payload::FromString(meta.dump()));
  return payloads;
}

SampleRequest DecodeSampleRequest(const std::vector<Payload>& payloads) {
  ExpectPayloads(payloads, 1, "sample");
  const Json meta = ParseJson(payloads[0], "sample meta");
  const auto batch_size = meta.find("batch_size");
  if (batch_size == meta.end() || !batch_size->is_number_integer()) {
    throw InvalidArgument("sample meta: needs \"batch_size\" (integer)");
  }
  SampleRequest request;
  request.batch_size = batch_size->get<std::int64_t>();
  const auto version = meta.find("policy_version");
  if (version != meta.end() && !version->is_null()) {
    if (!version->is_number_integer()) {
      throw InvalidArgument("sample meta: \"policy_version\" must be an integer or null");
    }
    request.policy_version = version->get<std::int64_t>();
  }
  const auto seed = meta.find("seed");  // absent from older clients: the table's stream
  if (seed != meta.end() && !seed->is_null()) {
    if (!seed->is_number_unsigned()) {  // the parser reads every integer >= 0 as unsigned
      throw InvalidArgument("sample meta: \"seed\" must be an unsigned integer or null");
    }
    request.seed = seed->get<std::uint64_t>();
  }
  return request;
}

std::vector<Payload> EncodeSampleReply(int shard, const TableTotals& totals, SampledBatch batch) {
  Json names = Json::array();
  for (const SampledField& field : batch.fields) names.push_back(field.name);
  const Json meta = {{"shard", shard}, {"beta", batch.beta}, {"fields", std::move(names)}};
  std::vector<std::uint64_t> keys(batch.keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = GlobalKey(shard, batch.keys[i]);
  std::vector<Payload> payloads;
  payloads.reserve(10 + batch.fields.size());
  payloads.push_back(Payload::FromString(meta.dump()));
  payloads.push_back(EncodeTotals(totals));
  payloads.push_back(FromVector(DType::kInt64, std::move(keys)));
  payloads.push_back(FromVector(DType::kFloat64, std::move(batch.priorities)));
  payloads.push_back(FromVector(DType::kFloat64, std::move(batch.probabilities)));
  payloads.push_back(FromVector(DType::kInt64, std::move(batch.table_sizes)));
  payloads.push_back(FromVector(DType::kFloat64, std::move(batch.weights)));
  payloads.push_back(FromVector(DType::kInt64, std::move(batch.times_sampled)));
  payloads.push_back(FromVector(DType::kInt64, std::move(batch.policy_versions)));
  payloads.push_back(FromVector(DType::kInt64, std::move(batch.insert_times_ns)));
  for (SampledField& field : batch.fields) {
    const std::byte* data = field.data.get();
    payloads.push_back(Payload::Adopt(field.dtype, std::move(field.shape),
                                      std::shared_ptr<const void>(std::move(field.data)), data,
                                      field.num_bytes));
  }
  return payloads;
}

ShardSample DecodeSampleReply(const std::vector<Payload>& payloads) {
  constexpr std::size_t kFixed = 10;
  ExpectPayloads(payloads, kFixed, "sample reply");
  const Json meta = ParseJson(payloads[0], "sample reply meta");
  ShardSample sample;
  try {
    sample.shard = meta.at("shard").get<int>();
    sample.batch.beta = meta.at("beta").get<double>();
  } catch (const Json::exception& e) {
    throw InvalidArgument(std::string("sample reply meta: ") + e.what());
  }
  const auto names = meta.find("fields");
  if (names == meta.end() || !names->is_array() || payloads.size() != kFixed + names->size()) {
    throw InvalidArgument("sample reply: field names do not match the payloads");
  }
  sample.totals = DecodeTotals(payloads, 1);
  SampledBatch& batch = sample.batch;
  batch.keys = ToVector(Vector<std::uint64_t>(payloads[2], -1, "sample keys"));
  const auto n = static_cast<std::int64_t>(batch.keys.size());
  batch.priorities = ToVector(Vector<double>(payloads[3], n, "sample priorities"));
  batch.probabilities = ToVector(Vector<double>(payloads[4], n, "sample probabilities"));
  batch.table_sizes = ToVector(Vector<std::int64_t>(payloads[5], n, "sample table_sizes"));
  batch.weights = ToVector(Vector<double>(payloads[6], n, "sample weights"));
  batch.times_sampled = ToVector(Vector<std::int64_t>(payloads[7], n, "sample times_sampled"));
  batch.policy_versions = ToVector(Vector<std::int64_t>(payloads[8], n, "sample versions"));
  batch.insert_times_ns = ToVector(Vector<std::int64_t>(payloads[9], n, "sample insert times"));
  for (std::size_t f = 0; f < names->size(); ++f) {
    const Payload& p = payloads[kFixed + f];
    if (!(*names)[f].is_string() || p.shape().empty() || p.shape()[0] != n) {
      throw InvalidArgument("sample reply: field " + std::to_string(f) + " is malformed");
    }
    SampledField field;
    field.name = (*names)[f].get<std::string>();
    field.dtype = p.dtype();
    field.shape = p.shape();
    // Alias the received frame: no copy, the frame lives as long as `data`.
    field.data = std::shared_ptr<std::byte[]>(
        p.owner(), const_cast<std::byte*>(p.bytes().data()));  // read-only by contract
    field.num_bytes = p.bytes().size();
    batch.fields.push_back(std::move(field));
  }
  return sample;
}

// --- priorities and totals -------------------------------------------------------------

std::vector<Payload> EncodePriorityUpdate(std::span<const std::uint64_t> keys,
                                          std::span<const double> priorities) {
  std::vector<Payload> payloads;
  payloads.push_back(Payload::Copy(DType::kInt64, {static_cast<std::int64_t>(keys.size())},
                                   keys.data(), keys.size_bytes()));
  payloads.push_back(Payload::Copy(DType::kFloat64, {static_cast<std::int64_t>(priorities.size())},
                                   priorities.data(), priorities.size_bytes()));
  return payloads;
}

void DecodePriorityUpdate(const std::vector<Payload>& payloads,
                          std::span<const std::uint64_t>& keys,
                          std::span<const double>& priorities) {
  if (payloads.size() != 2) {
    throw InvalidArgument("update_priorities: expected 2 payloads (keys, priorities), got " +
                          std::to_string(payloads.size()));
  }
  keys = Vector<std::uint64_t>(payloads[0], -1, "update_priorities keys");
  priorities = Vector<double>(payloads[1], static_cast<std::int64_t>(keys.size()),
                              "update_priorities priorities");
}

Payload EncodeTotals(const TableTotals& totals) {
  return FromVector(
      DType::kFloat64,
      std::vector<double>{static_cast<double>(totals.inserted), static_cast<double>(totals.sampled),
                          static_cast<double>(totals.size), totals.total_weight});
}

TableTotals DecodeTotals(const std::vector<Payload>& payloads, std::size_t index) {
  ExpectPayloads(payloads, index + 1, "totals");
  const std::span<const double> v = Vector<double>(payloads[index], 4, "totals");
  return {static_cast<std::int64_t>(v[0]), static_cast<std::int64_t>(v[1]),
          static_cast<std::int64_t>(v[2]), v[3]};
}

std::vector<Payload> EncodePriorityUpdateReply(const PriorityUpdateResult& result,
                                               const TableTotals& totals) {
  std::vector<Payload> payloads;
  payloads.push_back(
      FromVector(DType::kInt64, std::vector<std::int64_t>{result.updated, result.ignored}));
  payloads.push_back(EncodeTotals(totals));
  return payloads;
}

std::pair<PriorityUpdateResult, TableTotals> DecodePriorityUpdateReply(
    const std::vector<Payload>& payloads) {
  ExpectPayloads(payloads, 2, "update_priorities reply");
  const std::span<const std::int64_t> counts =
      Vector<std::int64_t>(payloads[0], 2, "update_priorities reply");
  return {{counts[0], counts[1]}, DecodeTotals(payloads, 1)};
}

// --- reconfigure ------------------------------------------------------------------------

std::string EncodeReconfig(const TableReconfig& change) {
  Json j = Json::object();
  if (change.rate_limiter) j["rate_limiter"] = RateLimiterOptionsToJson(*change.rate_limiter);
  if (change.max_times_sampled) j["max_times_sampled"] = *change.max_times_sampled;
  if (change.alpha) j["alpha"] = *change.alpha;
  if (change.beta) j["beta"] = *change.beta;
  return j.dump();
}

TableReconfig DecodeReconfig(const std::string& json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw InvalidArgument("reconfigure: malformed JSON");
  TableReconfig change;
  for (const auto& [key, value] : j.items()) {
    if (key == "rate_limiter") {
      change.rate_limiter = RateLimiterOptionsFromJson(value);
    } else if (key == "max_times_sampled") {
      if (!value.is_number_integer()) {
        throw InvalidArgument("reconfigure: max_times_sampled must be an integer");
      }
      change.max_times_sampled = value.get<std::int64_t>();
    } else if (key == "alpha" || key == "beta") {
      if (!value.is_number()) throw InvalidArgument("reconfigure: " + key + " must be a number");
      (key == "alpha" ? change.alpha : change.beta) = value.get<double>();
    } else {
      throw InvalidArgument("reconfigure: unknown key '" + key +
                            "' (rate_limiter, max_times_sampled, alpha, beta)");
    }
  }
  return change;
}

}  // namespace rlswarm::replay::protocol
