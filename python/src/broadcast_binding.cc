// rlswarm._core.BroadcastPublisher: rpc::Publisher (rpc/broadcast.h) from
// Python, so a Python learner publishes versions (its weights) that
// `rlswarm actor` processes follow. The binding moves arrays only; the
// weights' wire format (a JSON header frame, then one frame per parameter)
// is written by rlswarm.weights (Python).

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/payload.h"
#include "python/src/bindings.h"
#include "rpc/broadcast.h"

namespace nb = nanobind;

namespace rlswarm::python {
namespace {

using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

DType FrameDType(const Array& a) {
  const nb::dlpack::dtype d = a.dtype();
  if (d == nb::dtype<std::uint8_t>()) return DType::kUInt8;
  if (d == nb::dtype<float>()) return DType::kFloat32;
  if (d == nb::dtype<double>()) return DType::kFloat64;
  throw InvalidArgument("a broadcast frame must be uint8, float32 or float64");
}

// Thread safe (as rpc::Publisher).
class PyBroadcastPublisher {
 public:
  PyBroadcastPublisher(const std::string& endpoint, const std::string& snapshot_endpoint) {
    rpc::PublisherOptions o;
    o.endpoint = endpoint;
    o.snapshot_endpoint = snapshot_endpoint;
    o.name = "python-broadcast";
    publisher_ = std::make_unique<rpc::Publisher>(std::move(o));
  }

  // Copies the frames (the caller's arrays may change right after) and
  // publishes them as one version. Never blocks on subscribers.
  void Publish(std::uint64_t version, const std::vector<Array>& frames) {
    std::vector<Payload> payloads;
    payloads.reserve(frames.size());
    for (const Array& a : frames) {
      std::vector<std::int64_t> shape;
      for (std::size_t d = 0; d < a.ndim(); ++d)
        shape.push_back(static_cast<std::int64_t>(a.shape(d)));
      payloads.push_back(Payload::Copy(FrameDType(a), std::move(shape), a.data(), a.nbytes()));
    }
    nb::gil_scoped_release release;
    publisher_->Publish(version, std::move(payloads));
  }

  std::string endpoint() const { return publisher_->endpoint(); }
  std::string snapshot_endpoint() const { return publisher_->snapshot_endpoint(); }
  std::uint64_t version() const { return publisher_->version(); }

 private:
  std::unique_ptr<rpc::Publisher> publisher_;
};

}  // namespace

void BindBroadcast(nb::module_& m) {
  nb::class_<PyBroadcastPublisher>(m, "BroadcastPublisher",
                                   "Publishes versioned frames (rpc/broadcast.h).")
      .def(nb::init<const std::string&, const std::string&>(), nb::arg("endpoint"),
           nb::arg("snapshot_endpoint"))
      .def("publish", &PyBroadcastPublisher::Publish, nb::arg("version"), nb::arg("frames"),
           "Publishes the frames as one version (> the last); never blocks on subscribers.")
      .def_prop_ro("endpoint", &PyBroadcastPublisher::endpoint)
      .def_prop_ro("snapshot_endpoint", &PyBroadcastPublisher::snapshot_endpoint)
      .def_prop_ro("version", &PyBroadcastPublisher::version);
}

}  // namespace rlswarm::python
