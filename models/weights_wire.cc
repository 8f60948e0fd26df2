#include "models/weights_wire.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "models/dtype_translation.h"

namespace rlswarm::models {
namespace {

// Parameters travel as float32 or float64 only.
DType ToWireDType(at::ScalarType type) {
  if (type != at::kFloat && type != at::kDouble) {
    throw InvalidArgument(std::string("weights: cannot send a tensor of dtype ") +
                          c10::toString(type));
  }
  return ToDType(type);
}

at::ScalarType FromWireDType(DType dtype) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    throw InvalidArgument("weights: a parameter frame must be float32 or float64");
  }
  return ToScalarType(dtype);
}

}  // namespace

std::vector<Payload> EncodeWeights(const NamedTensors& named, int shard, int num_shards) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& [name, tensor] : named) names.push_back(name);
  const nlohmann::json meta = {{"names", names}, {"shard", shard}, {"num_shards", num_shards}};
  std::vector<Payload> payloads;
  payloads.push_back(Payload::FromString(meta.dump()));
  for (const auto& [name, tensor] : named) {
    at::Tensor t = tensor.detach().to(at::kCPU);
    if (t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble) t = t.to(at::kFloat);
    t = t.contiguous();
    const auto* owner = new at::Tensor(t);  // the frame keeps the storage alive
    payloads.push_back(
        Payload::Adopt(ToWireDType(t.scalar_type()), t.sizes().vec(),
                       std::shared_ptr<const void>(
                           owner, [](const void* p) { delete static_cast<const at::Tensor*>(p); }),
                       t.data_ptr(), static_cast<std::size_t>(t.nbytes())));
  }
  return payloads;
}

WeightsPart DecodeWeights(const std::vector<Payload>& payloads) {
  if (payloads.empty()) throw InvalidArgument("weights: empty blob");
  const nlohmann::json meta =
      nlohmann::json::parse(payloads[0].ToString(), nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("names") ||
      !meta["names"].is_array() || !meta.contains("shard") || !meta["shard"].is_number_integer() ||
      !meta.contains("num_shards") || !meta["num_shards"].is_number_integer()) {
    throw InvalidArgument("weights: malformed header");
  }
  const auto& names = meta["names"];
  if (names.size() + 1 != payloads.size()) {
    throw InvalidArgument("weights: " + std::to_string(names.size()) + " names for " +
                          std::to_string(payloads.size() - 1) + " tensors");
  }
  WeightsPart part;
  part.shard = meta["shard"].get<int>();
  part.num_shards = meta["num_shards"].get<int>();
  if (part.num_shards < 1 || part.shard < 0 || part.shard >= part.num_shards) {
    throw InvalidArgument("weights: bad shard " + std::to_string(part.shard) + " of " +
                          std::to_string(part.num_shards));
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string()) throw InvalidArgument("weights: names must be strings");
    const Payload& p = payloads[i + 1];
    const at::ScalarType type = FromWireDType(p.dtype());
    auto owner = std::make_shared<Payload>(p);  // keeps the received frame alive
    at::Tensor t = at::from_blob(
        const_cast<std::byte*>(p.bytes().data()), p.shape(),
        [owner](void*) mutable { owner.reset(); }, at::TensorOptions().dtype(type));
    part.tensors.emplace_back(names[i].get<std::string>(), t);
  }
  return part;
}

}  // namespace rlswarm::models
