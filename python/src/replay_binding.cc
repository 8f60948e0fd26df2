// rlswarm._core.ReplayServer / ReplayWriter / ReplaySampler: the replay
// service (replay/service/) from Python. rlswarm.replay (Python) wraps them.
//
// Data path: Writer.append takes one C-contiguous NumPy array per signature
// field ([N, *shape]) and hands views of them to ReplayWriter::Append, which
// copies them into its staging batch (GIL released). Sampler.sample returns
// the sampled fields as NumPy arrays over the received buffers (no copy; each
// array keeps its buffer alive). Every blocking call releases the GIL and
// takes a deadline; errors arrive as rlswarm.errors classes (Unavailable,
// DeadlineExceeded, InvalidArgument, ...).

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "common/errors.h"
#include "python/src/bindings.h"
#include "replay/service/replay_sampler.h"
#include "replay/service/replay_service.h"
#include "replay/service/replay_writer.h"
#include "rpc/security.h"

namespace nb = nanobind;

namespace rlswarm::python {
namespace {

using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using FieldTuple = std::tuple<std::string, std::string, std::vector<std::int64_t>>;
using Ms = std::chrono::milliseconds;

Ms Millis(double seconds) {
  if (!(seconds >= 0)) throw InvalidArgument("a timeout must be >= 0 seconds");
  return Ms(static_cast<std::int64_t>(seconds * 1000.0));
}

replay::Signature MakeSignature(const std::vector<FieldTuple>& fields) {
  replay::Signature s;
  for (const auto& [name, dtype, shape] : fields)
    s.fields.push_back({name, ParseDType(dtype), shape});
  s.Validate();
  return s;
}

DType DTypeOf(const Array& a, const std::string& field) {
  const nb::dlpack::dtype d = a.dtype();
  if (d == nb::dtype<bool>()) return DType::kBool;
  if (d == nb::dtype<std::uint8_t>()) return DType::kUInt8;
  if (d == nb::dtype<std::int32_t>()) return DType::kInt32;
  if (d == nb::dtype<std::int64_t>()) return DType::kInt64;
  if (d == nb::dtype<float>()) return DType::kFloat32;
  if (d == nb::dtype<double>()) return DType::kFloat64;
  throw InvalidArgument("field '" + field + "': unsupported dtype (bool, uint8, int32, int64, " +
                        "float32, float64)");
}

// CURVE for a client socket: the keys rlswarm keygen writes.
rpc::SecurityOptions ClientSecurity(const std::optional<std::string>& client_secret_key_file,
                                    const std::optional<std::string>& server_public_key_file) {
  rpc::SecurityOptions o;
  if (!client_secret_key_file && !server_public_key_file) return o;
  o.curve = true;
  o.client_secret_key_file = client_secret_key_file.value_or("");
  o.server_public_key_file = server_public_key_file.value_or("");
  o.Validate();
  return o;
}

// One sampled field (shape [B, *field shape]) as an array over the received
// buffer.
nb::object FieldArray(const replay::SampledField& f) {
  std::vector<std::size_t> shape;
  for (std::int64_t d : f.shape) shape.push_back(static_cast<std::size_t>(d));
  auto* keep = new std::shared_ptr<std::byte[]>(f.data);
  nb::capsule owner(keep,
                    [](void* p) noexcept { delete static_cast<std::shared_ptr<std::byte[]>*>(p); });
  return nb::ndarray<nb::numpy>(f.data.get(), shape.size(), shape.data(), owner, nullptr,
                                ToDLPack(f.dtype))
      .cast();
}

// A shard served from this process (tests, notebooks). Thread safe.
class PyReplayServer {
 public:
  PyReplayServer(const std::vector<FieldTuple>& signature, std::int64_t capacity,
                 const std::string& selector, double alpha, double beta, double samples_per_insert,
                 std::int64_t min_size_to_sample, double error_buffer, const std::string& bind,
                 const std::optional<std::string>& server_secret_key_file,
                 const std::optional<std::string>& authorized_clients_dir) {
    replay::ReplayServiceOptions o;
    o.table.signature = MakeSignature(signature);
    o.table.capacity = capacity;
    o.table.selector.kind = replay::ParseSelectorKind(selector);
    o.table.selector.alpha = alpha;
    o.table.selector.beta = beta;
    o.table.rate_limiter = error_buffer > 0
                               ? replay::RateLimiterOptions::SampleToInsertRatio(
                                     samples_per_insert, min_size_to_sample, error_buffer)
                               : replay::RateLimiterOptions::MinSize(min_size_to_sample);
    o.server.endpoint = bind;
    if (server_secret_key_file || authorized_clients_dir) {
      o.server.security.curve = true;
      o.server.security.server_secret_key_file = server_secret_key_file.value_or("");
      o.server.security.authorized_clients_dir = authorized_clients_dir.value_or("");
    }
    o.checkpoint_on_stop = false;
    service_ = std::make_unique<replay::ReplayService>(std::move(o));
    nb::gil_scoped_release release;
    service_->Start();
  }

  std::string endpoint() const { return service_->endpoint(); }
  std::string Info() const { return service_->InfoJson(); }
  void Stop() {
    nb::gil_scoped_release release;
    service_->Stop();
  }

 private:
  std::unique_ptr<replay::ReplayService> service_;
};

// Thread safe (as ReplayWriter).
class PyReplayWriter {
 public:
  PyReplayWriter(std::vector<std::string> endpoints, const std::vector<FieldTuple>& signature,
                 std::int64_t max_batch_items, double flush_interval, double insert_timeout,
                 double max_block, rpc::SecurityOptions security) {
    replay::ReplayWriterOptions o;
    o.endpoints = std::move(endpoints);
    o.signature = MakeSignature(signature);
    o.max_batch_items = max_batch_items;
    o.flush_interval = Millis(flush_interval);
    o.insert_timeout = Millis(insert_timeout);
    o.max_block = Millis(max_block);
    o.client.security = std::move(security);
    writer_ = std::make_unique<replay::ReplayWriter>(std::move(o));
  }

  void Append(const nb::dict& fields, std::optional<Array> priorities,
              std::int64_t policy_version) {
    std::vector<Array> arrays;
    std::vector<std::string> names;
    std::vector<std::vector<std::int64_t>> shapes;
    for (auto [key, value] : fields) {
      names.push_back(nb::cast<std::string>(key));
      arrays.push_back(nb::cast<Array>(value));
    }
    replay::InsertBatch batch;
    shapes.resize(arrays.size());
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const Array& a = arrays[i];
      if (a.ndim() < 1) throw InvalidArgument("field '" + names[i] + "': needs a batch dimension");
      for (std::size_t d = 0; d < a.ndim(); ++d) shapes[i].push_back(a.shape(d));
      batch.fields.push_back({names[i],
                              DTypeOf(a, names[i]),
                              shapes[i],
                              {static_cast<const std::byte*>(a.data()), a.nbytes()}});
    }
    if (priorities) {
      if (priorities->dtype() != nb::dtype<double>() || priorities->ndim() != 1) {
        throw InvalidArgument("priorities must be a 1-D float64 array");
      }
      batch.priorities = {static_cast<const double*>(priorities->data()), priorities->size()};
    }
    batch.policy_version = policy_version;
    nb::gil_scoped_release release;
    writer_->Append(batch);
  }

  bool Flush(double timeout) {
    nb::gil_scoped_release release;
    return writer_->Flush(Millis(timeout));
  }
  void Close() {
    nb::gil_scoped_release release;
    writer_->Close();
  }
  nb::dict Stats() const {
    const replay::ReplayWriterStats s = writer_->stats();
    nb::dict d;
    d["items_appended"] = s.items_appended;
    d["items_acknowledged"] = s.items_acknowledged;
    d["items_dropped"] = s.items_dropped;
    d["batches_sent"] = s.batches_sent;
    d["batches_retried"] = s.batches_retried;
    d["batches_rejected"] = s.batches_rejected;
    d["in_flight"] = s.in_flight;
    d["buffered"] = s.buffered;
    return d;
  }

 private:
  std::unique_ptr<replay::ReplayWriter> writer_;
};

// Thread safe (as ReplaySampler).
class PyReplaySampler {
 public:
  PyReplaySampler(std::vector<std::string> endpoints, double timeout,
                  rpc::SecurityOptions security) {
    replay::ReplaySamplerOptions o;
    o.endpoints = std::move(endpoints);
    o.timeout = Millis(timeout);
    o.client.security = std::move(security);
    sampler_ = std::make_unique<replay::ReplaySampler>(std::move(o));
  }

  nb::dict Sample(std::int64_t batch_size, std::optional<std::uint64_t> draw_seed) {
    replay::SampledBatch b;
    {
      nb::gil_scoped_release release;
      b = sampler_->Sample(batch_size, std::nullopt, draw_seed);
    }
    nb::dict fields;
    for (const replay::SampledField& f : b.fields) fields[f.name.c_str()] = FieldArray(f);
    nb::dict d;
    d["fields"] = fields;
    d["keys"] = ToNumPy(std::move(b.keys));
    d["probabilities"] = ToNumPy(std::move(b.probabilities));
    d["weights"] = ToNumPy(std::move(b.weights));
    d["priorities"] = ToNumPy(std::move(b.priorities));
    d["times_sampled"] = ToNumPy(std::move(b.times_sampled));
    d["policy_versions"] = ToNumPy(std::move(b.policy_versions));
    return d;
  }

  nb::tuple UpdatePriorities(const Array& keys, const Array& priorities) {
    if (keys.dtype() != nb::dtype<std::uint64_t>() || keys.ndim() != 1) {
      throw InvalidArgument("keys must be a 1-D uint64 array (as sample returns them)");
    }
    if (priorities.dtype() != nb::dtype<double>() || priorities.ndim() != 1) {
      throw InvalidArgument("priorities must be a 1-D float64 array");
    }
    replay::PriorityUpdateResult r;
    {
      nb::gil_scoped_release release;
      r = sampler_->UpdatePriorities(
          {static_cast<const std::uint64_t*>(keys.data()), keys.size()},
          {static_cast<const double*>(priorities.data()), priorities.size()});
    }
    return nb::make_tuple(r.updated, r.ignored);
  }

  std::string Info(int shard) {
    if (shard < 0 || shard >= sampler_->num_shards()) {
      throw InvalidArgument("shard " + std::to_string(shard) + " not in [0, " +
                            std::to_string(sampler_->num_shards()) + ")");
    }
    nb::gil_scoped_release release;
    return sampler_->Info(shard);
  }

  int num_shards() const { return sampler_->num_shards(); }

 private:
  std::unique_ptr<replay::ReplaySampler> sampler_;
};

// The C++ client's own rate on the same service, as bench/python_bench.py's
// baseline: Sample(batch_size) calls per second over `seconds`, GIL released.
double MeasureCppSampler(std::vector<std::string> endpoints, std::int64_t batch_size,
                         double seconds) {
  nb::gil_scoped_release release;
  replay::ReplaySamplerOptions o;
  o.endpoints = std::move(endpoints);
  replay::ReplaySampler sampler(std::move(o));
  sampler.Sample(batch_size);  // connect
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::int64_t calls = 0;
  auto now = start;
  for (; now < end; now = std::chrono::steady_clock::now(), ++calls) sampler.Sample(batch_size);
  return static_cast<double>(calls) / std::chrono::duration<double>(now - start).count();
}

// As above for ReplayWriter: items per second appended in batches of
// `batch_size` rows of zeros, flushed at the end.
double MeasureCppWriter(std::vector<std::string> endpoints, const std::vector<FieldTuple>& fields,
                        std::int64_t batch_size, double seconds) {
  nb::gil_scoped_release release;
  replay::ReplayWriterOptions o;
  o.endpoints = std::move(endpoints);
  o.signature = MakeSignature(fields);
  o.max_batch_items = batch_size;
  replay::ReplayWriter writer(o);
  std::vector<std::vector<std::byte>> data;
  std::vector<std::vector<std::int64_t>> shapes;
  replay::InsertBatch batch;
  for (const replay::FieldSpec& f : o.signature.fields) {
    shapes.push_back({batch_size});
    shapes.back().insert(shapes.back().end(), f.shape.begin(), f.shape.end());
    std::int64_t elements = batch_size;
    for (std::int64_t d : f.shape) elements *= d;
    data.emplace_back(static_cast<std::size_t>(elements) * DTypeSize(f.dtype));
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    batch.fields.push_back(
        {o.signature.fields[i].name, o.signature.fields[i].dtype, shapes[i], data[i]});
  }
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::int64_t items = 0;
  for (; std::chrono::steady_clock::now() < end; items += batch_size) writer.Append(batch);
  writer.Flush(std::chrono::seconds(30));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(items) / elapsed;
}

}  // namespace

void BindReplay(nb::module_& m) {
  m.def("_measure_cpp_sampler", &MeasureCppSampler, nb::arg("endpoints"), nb::arg("batch_size"),
        nb::arg("seconds"), "bench/python_bench.py's baseline: C++ Sample calls per second.");
  m.def("_measure_cpp_writer", &MeasureCppWriter, nb::arg("endpoints"), nb::arg("signature"),
        nb::arg("batch_size"), nb::arg("seconds"),
        "bench/python_bench.py's baseline: C++ items appended per second.");
  m.def(
      "generate_key_pair",
      [](const std::string& path_prefix) {
        const rpc::KeyPair keys = rpc::GenerateKeyPair();
        rpc::WriteKeyPair(path_prefix, keys);
        return keys.public_key;
      },
      nb::arg("path_prefix"),
      "Writes a CURVE key pair to PREFIX.key and PREFIX.key_secret (as rlswarm keygen); "
      "returns the public key.");

  nb::class_<PyReplayServer>(m, "ReplayServer", "One replay shard served from this process.")
      .def(nb::init<const std::vector<FieldTuple>&, std::int64_t, const std::string&, double,
                    double, double, std::int64_t, double, const std::string&,
                    const std::optional<std::string>&, const std::optional<std::string>&>(),
           nb::arg("signature"), nb::kw_only(), nb::arg("capacity"), nb::arg("selector"),
           nb::arg("alpha"), nb::arg("beta"), nb::arg("samples_per_insert"),
           nb::arg("min_size_to_sample"), nb::arg("error_buffer"), nb::arg("bind"),
           nb::arg("server_secret_key_file").none(), nb::arg("authorized_clients_dir").none())
      .def_prop_ro("endpoint", &PyReplayServer::endpoint)
      .def("info", &PyReplayServer::Info, "The shard's info JSON.")
      .def("stop", &PyReplayServer::Stop, "Stops serving (idempotent).");

  nb::class_<PyReplayWriter>(m, "ReplayWriter", "Appends items to a replay service.")
      .def(
          "__init__",
          [](PyReplayWriter* self, std::vector<std::string> endpoints,
             const std::vector<FieldTuple>& signature, std::int64_t max_batch_items,
             double flush_interval, double insert_timeout, double max_block,
             std::optional<std::string> client_secret_key_file,
             std::optional<std::string> server_public_key_file) {
            new (self) PyReplayWriter(
                std::move(endpoints), signature, max_batch_items, flush_interval, insert_timeout,
                max_block, ClientSecurity(client_secret_key_file, server_public_key_file));
          },
          nb::arg("endpoints"), nb::arg("signature"), nb::kw_only(), nb::arg("max_batch_items"),
          nb::arg("flush_interval"), nb::arg("insert_timeout"), nb::arg("max_block"),
          nb::arg("client_secret_key_file").none(), nb::arg("server_public_key_file").none())
      .def("append", &PyReplayWriter::Append, nb::arg("fields"), nb::arg("priorities").none(),
           nb::arg("policy_version"),
           "Copies N items ({field: [N, *shape] array}) into the staging batch; may block up to "
           "max_block when the service falls behind.")
      .def("flush", &PyReplayWriter::Flush, nb::arg("timeout"),
           "Sends what is staged and waits until every batch is acknowledged or dropped; False "
           "if the timeout (seconds) passed first.")
      .def("close", &PyReplayWriter::Close, "Stops sending; unacknowledged batches are dropped.")
      .def("stats", &PyReplayWriter::Stats, "Counters of items and batches.");

  nb::class_<PyReplaySampler>(m, "ReplaySampler", "Samples from a replay service.")
      .def(
          "__init__",
          [](PyReplaySampler* self, std::vector<std::string> endpoints, double timeout,
             std::optional<std::string> client_secret_key_file,
             std::optional<std::string> server_public_key_file) {
            new (self)
                PyReplaySampler(std::move(endpoints), timeout,
                                ClientSecurity(client_secret_key_file, server_public_key_file));
          },
          nb::arg("endpoints"), nb::kw_only(), nb::arg("timeout"),
          nb::arg("client_secret_key_file").none(), nb::arg("server_public_key_file").none())
      .def_prop_ro("num_shards", &PyReplaySampler::num_shards)
      .def("sample", &PyReplaySampler::Sample, nb::arg("batch_size"), nb::arg("draw_seed").none(),
           "Draws batch_size items over all shards; blocks up to the timeout.")
      .def("update_priorities", &PyReplaySampler::UpdatePriorities, nb::arg("keys"),
           nb::arg("priorities"), "Returns (updated, ignored).")
      .def("info", &PyReplaySampler::Info, nb::arg("shard"), "A shard's info JSON.");
}

}  // namespace rlswarm::python
