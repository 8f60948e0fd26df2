#include "replay/json.h"

#include <cmath>
#include <limits>
#include <string>

#include "common/errors.h"

namespace rlswarm::replay {
namespace {

using nlohmann::json;

json Double(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

const json& At(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) {
    throw InvalidArgument(std::string("json: missing key '") + key + "'");
  }
  return j.at(key);
}

double GetDouble(const json& j, const char* key) {
  const json& v = At(j, key);
  if (v.is_number()) return v.get<double>();
  if (v == "inf") return std::numeric_limits<double>::infinity();
  if (v == "-inf") return -std::numeric_limits<double>::infinity();
  if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
  throw InvalidArgument(std::string("json: '") + key + "' is not a number");
}

template <class T>
T Get(const json& j, const char* key) {
  const json& v = At(j, key);
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    throw InvalidArgument(std::string("json: '") + key + "' has the wrong type");
  }
}

json PercentilesToJson(const Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}};
}

json CountersToJson(const TableCounters& c) {
  return {{"inserted", c.inserted},
          {"sampled", c.sampled},
          {"evicted", c.evicted},
          {"removed_max_times_sampled", c.removed_max_times_sampled},
          {"priorities_updated", c.priorities_updated},
          {"priority_updates_ignored", c.priority_updates_ignored},
          {"inserts_waited", c.inserts_waited},
          {"samples_waited", c.samples_waited},
          {"waiters_expired", c.waiters_expired}};
}

TableCounters CountersFromJson(const json& j) {
  TableCounters c;
  c.inserted = Get<std::int64_t>(j, "inserted");
  c.sampled = Get<std::int64_t>(j, "sampled");
  c.evicted = Get<std::int64_t>(j, "evicted");
  c.removed_max_times_sampled = Get<std::int64_t>(j, "removed_max_times_sampled");
  c.priorities_updated = Get<std::int64_t>(j, "priorities_updated");
  c.priority_updates_ignored = Get<std::int64_t>(j, "priority_updates_ignored");
  c.inserts_waited = Get<std::int64_t>(j, "inserts_waited");
  c.samples_waited = Get<std::int64_t>(j, "samples_waited");
  c.waiters_expired = Get<std::int64_t>(j, "waiters_expired");
  return c;
}

}  // namespace

json SignatureToJson(const Signature& signature) {
  json fields = json::array();
  for (const FieldSpec& f : signature.fields) {
    fields.push_back({{"name", f.name}, {"dtype", DTypeName(f.dtype)}, {"shape", f.shape}});
  }
  return fields;
}

Signature SignatureFromJson(const json& j) {
  if (!j.is_array()) throw InvalidArgument("json: signature is not an array");
  Signature signature;
  for (const json& f : j) {
    FieldSpec spec;
    spec.name = Get<std::string>(f, "name");
    spec.dtype = ParseDType(Get<std::string>(f, "dtype"));
    spec.shape = Get<std::vector<std::int64_t>>(f, "shape");
    signature.fields.push_back(std::move(spec));
  }
  return signature;
}

json RateLimiterOptionsToJson(const RateLimiterOptions& o) {
  return {{"samples_per_insert", Double(o.samples_per_insert)},
          {"min_size_to_sample", o.min_size_to_sample},
          {"min_diff", Double(o.min_diff)},
          {"max_diff", Double(o.max_diff)}};
}

RateLimiterOptions RateLimiterOptionsFromJson(const json& j) {
  RateLimiterOptions o;
  o.samples_per_insert = GetDouble(j, "samples_per_insert");
  o.min_size_to_sample = Get<std::int64_t>(j, "min_size_to_sample");
  o.min_diff = GetDouble(j, "min_diff");
  o.max_diff = GetDouble(j, "max_diff");
  return o;
}

json TableOptionsToJson(const TableOptions& o) {
  return {{"name", o.name},
          {"signature", SignatureToJson(o.signature)},
          {"capacity", o.capacity},
          {"selector",
           {{"kind", SelectorKindName(o.selector.kind)},
            {"alpha", Double(o.selector.alpha)},
            {"beta", Double(o.selector.beta)}}},
          {"rate_limiter", RateLimiterOptionsToJson(o.rate_limiter)},
          {"max_times_sampled", o.max_times_sampled},
          {"seed", o.seed},
          {"chunk_rows", o.chunk_rows},
          {"staleness_window", o.staleness_window},
          {"frame_fields", o.frame_fields}};
}

TableOptions TableOptionsFromJson(const json& j) {
  TableOptions o;
  o.name = Get<std::string>(j, "name");
  o.signature = SignatureFromJson(At(j, "signature"));
  o.capacity = Get<std::int64_t>(j, "capacity");
  const json& selector = At(j, "selector");
  o.selector.kind = ParseSelectorKind(Get<std::string>(selector, "kind"));
  o.selector.alpha = GetDouble(selector, "alpha");
  o.selector.beta = GetDouble(selector, "beta");
  o.rate_limiter = RateLimiterOptionsFromJson(At(j, "rate_limiter"));
  o.max_times_sampled = Get<std::int64_t>(j, "max_times_sampled");
  o.seed = Get<std::uint64_t>(j, "seed");
  o.chunk_rows = Get<std::int64_t>(j, "chunk_rows");
  o.staleness_window = Get<std::int64_t>(j, "staleness_window");
  // Absent in checkpoints from before frame fields existed: none.
  if (j.contains("frame_fields")) o.frame_fields = Get<std::vector<std::string>>(j, "frame_fields");
  return o;
}

json TableStateToJson(const TableState& s) {
  return {{"options", TableOptionsToJson(s.options)},
          {"limiter",
           {{"inserts", s.limiter.inserts},
            {"samples", s.limiter.samples},
            {"deletes", s.limiter.deletes}}},
          {"counters", CountersToJson(s.counters)},
          {"next_seq", s.next_seq},
          {"max_priority", Double(s.max_priority)},
          {"max_policy_version", s.max_policy_version},
          {"size", s.size}};
}

TableState TableStateFromJson(const json& j) {
  TableState s;
  s.options = TableOptionsFromJson(At(j, "options"));
  const json& limiter = At(j, "limiter");
  s.limiter.inserts = Get<std::int64_t>(limiter, "inserts");
  s.limiter.samples = Get<std::int64_t>(limiter, "samples");
  s.limiter.deletes = Get<std::int64_t>(limiter, "deletes");
  s.counters = CountersFromJson(At(j, "counters"));
  s.next_seq = Get<std::uint64_t>(j, "next_seq");
  s.max_priority = GetDouble(j, "max_priority");
  s.max_policy_version = Get<std::int64_t>(j, "max_policy_version");
  s.size = Get<std::int64_t>(j, "size");
  return s;
}

json TableInfoToJson(const TableInfo& info) {
  json histogram = json::array();
  for (int bin = 0; bin < PriorityHistogram::kNumBins; ++bin) {
    if (info.priorities.counts[bin] == 0) continue;
    histogram.push_back({{"lower", PriorityHistogram::BinLower(bin)},
                         {"upper", PriorityHistogram::BinLower(bin + 1)},
                         {"count", info.priorities.counts[bin]}});
  }
  const RateLimiterInfo& rl = info.rate_limiter;
  return {{"name", info.name},
          {"size", info.size},
          {"capacity", info.capacity},
          {"selector",
           {{"kind", SelectorKindName(info.selector.kind)},
            {"alpha", Double(info.selector.alpha)},
            {"beta", Double(info.selector.beta)}}},
          {"max_times_sampled", info.max_times_sampled},
          {"counters", CountersToJson(info.counters)},
          {"insert_rate", info.insert_rate},
          {"sample_rate", info.sample_rate},
          {"rate_limiter",
           {{"options", RateLimiterOptionsToJson(rl.options)},
            {"inserts", rl.counts.inserts},
            {"samples", rl.counts.samples},
            {"deletes", rl.counts.deletes},
            {"cursor", Double(rl.cursor)},
            {"can_insert", rl.can_insert},
            {"can_sample", rl.can_sample},
            {"pending_inserts", rl.pending_inserts},
            {"pending_samples", rl.pending_samples}}},
          {"priorities",
           {{"count", info.priorities.total},
            {"zeros", info.priorities.zeros},
            {"sum", info.priorities.sum},
            {"max_ever", info.max_priority},
            {"bins", histogram}}},
          {"staleness",
           {{"recorded", info.staleness.recorded},
            {"age_seconds", PercentilesToJson(info.staleness.age_seconds)},
            {"version_lag", PercentilesToJson(info.staleness.version_lag)}}},
          {"next_key_seq", info.next_key_seq},
          {"total_weight", info.total_weight},
          {"chunks_copied", info.chunks_copied},
          {"storage_bytes", info.storage_bytes},
          {"bytes_per_item",
           info.size > 0 ? static_cast<double>(info.storage_bytes) / static_cast<double>(info.size)
                         : 0.0},
          {"frames",
           {{"live", info.frames.live},
            {"acquired", info.frames.acquired},
            {"stored", info.frames.stored},
            {"frame_bytes", info.frames.frame_bytes},
            {"memory_bytes", info.frames.memory_bytes}}},
          {"closed", info.closed}};
}

}  // namespace rlswarm::replay
