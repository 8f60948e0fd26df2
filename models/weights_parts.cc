#include "models/weights_parts.h"

#include <ATen/ATen.h>

#include <map>
#include <sstream>

#include "common/errors.h"

namespace rlswarm::models {
namespace {

struct PartName {
  std::string name;
  int index = 0;
  std::vector<int64_t> shape;
  int64_t offset = 0;
};

PartName ParsePartName(const std::string& s) {
  std::vector<std::string> fields;
  std::stringstream in(s);
  std::string field;
  while (std::getline(in, field, '#')) fields.push_back(field);
  if (!s.empty() && s.back() == '#') fields.emplace_back();
  if (fields.size() != 4) throw InvalidArgument("weights part: malformed name '" + s + "'");
  try {
    PartName p;
    p.name = fields[0];
    p.index = std::stoi(fields[1]);
    std::stringstream dims(fields[2]);
    while (std::getline(dims, field, 'x')) p.shape.push_back(std::stoll(field));
    p.offset = std::stoll(fields[3]);
    return p;
  } catch (const std::exception&) {
    throw InvalidArgument("weights part: malformed name '" + s + "'");
  }
}

}  // namespace

std::string WeightsPartName(const std::string& name, int index, const std::vector<int64_t>& shape,
                            int64_t offset) {
  std::string out = name + "#" + std::to_string(index) + "#";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += "x";
    out += std::to_string(shape[i]);
  }
  return out + "#" + std::to_string(offset);
}

NamedTensors MergeWeightParts(const std::vector<WeightsPart>& parts) {
  if (parts.empty()) throw InvalidArgument("MergeWeightParts: no parts");
  const int num_shards = parts[0].num_shards;
  std::vector<int> seen(num_shards > 0 ? num_shards : 0, 0);
  struct Full {
    std::string name;
    at::Tensor flat;
    std::vector<int64_t> shape;
    int64_t covered = 0;
  };
  std::map<int, Full> by_index;
  for (const WeightsPart& part : parts) {
    if (part.num_shards != num_shards || part.shard < 0 || part.shard >= num_shards ||
        seen[part.shard]++) {
      throw InvalidArgument("MergeWeightParts: parts must be shards 0.." +
                            std::to_string(num_shards - 1) + ", each once");
    }
    for (const auto& [encoded, tensor] : part.tensors) {
      const PartName p = ParsePartName(encoded);
      int64_t numel = 1;
      for (int64_t d : p.shape) numel *= d;
      Full& full = by_index[p.index];
      if (!full.flat.defined()) {
        full.name = p.name;
        full.shape = p.shape;
        full.flat = at::zeros({numel}, tensor.options());
      } else if (full.name != p.name || full.shape != p.shape) {
        throw InvalidArgument("MergeWeightParts: parts disagree on parameter " +
                              std::to_string(p.index));
      }
      const int64_t n = tensor.numel();
      if (p.offset < 0 || p.offset + n > numel) {
        throw InvalidArgument("MergeWeightParts: '" + encoded + "' lies outside its parameter");
      }
      full.flat.narrow(0, p.offset, n).copy_(tensor.reshape(-1));
      full.covered += n;
    }
  }
  for (int s = 0; s < num_shards; ++s) {
    if (!seen[s])
      throw InvalidArgument("MergeWeightParts: shard " + std::to_string(s) + " missing");
  }
  NamedTensors out;
  int expected_index = 0;
  for (auto& [index, full] : by_index) {
    if (index != expected_index++ || full.covered != full.flat.numel()) {
      throw InvalidArgument("MergeWeightParts: parameter " + full.name + " is not covered exactly");
    }
    out.emplace_back(full.name, full.flat.view(full.shape));
  }
  return out;
}

}  // namespace rlswarm::models
