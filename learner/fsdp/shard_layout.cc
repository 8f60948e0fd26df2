#include "learner/fsdp/shard_layout.h"

#include <algorithm>

namespace rlswarm::learner {

int64_t UnitLayout::ValidNumel(int rank) const {
  return std::clamp<int64_t>(numel - rank * shard_numel, 0, shard_numel);
}

std::vector<UnitLayout> MakeUnitLayouts(const models::ModelSpec& spec,
                                        const std::vector<int>& layers_per_unit, int shard_count) {
  std::vector<int> sizes = layers_per_unit;
  if (sizes.empty()) sizes.assign(spec.layers.size(), 1);
  std::vector<UnitLayout> units;
  size_t layer = 0;
  int64_t local_offset = 0;
  for (int count : sizes) {
    UnitLayout u;
    u.first_layer = layer;
    u.num_layers = static_cast<size_t>(count);
    for (size_t l = layer; l < layer + u.num_layers; ++l) {
      const models::LayerSpec& ls = spec.layers[l];
      u.name += (u.name.empty() ? "" : "+") + ls.name;
      u.layer_offsets.push_back(u.numel);
      for (const models::ParamSpec& p : ls.params) {
        u.params.push_back({ls.name + "." + p.name, p.shape, u.numel, p.Numel()});
        u.numel += p.Numel();
      }
    }
    u.shard_numel = (u.numel + shard_count - 1) / shard_count;
    u.padded_numel = u.shard_numel * shard_count;
    u.local_offset = local_offset;
    local_offset += u.shard_numel;
    layer += u.num_layers;
    units.push_back(std::move(u));
  }
  return units;
}

std::vector<int> WrapBySize(const models::ModelSpec& spec, int64_t min_params) {
  if (min_params <= 0) return std::vector<int>(spec.layers.size(), 1);
  std::vector<int> sizes;
  int layers = 0;
  int64_t held = 0;
  for (const models::LayerSpec& layer : spec.layers) {
    ++layers;
    held += layer.Numel();
    if (held >= min_params) {
      sizes.push_back(layers);
      layers = 0;
      held = 0;
    }
  }
  if (layers > 0) {
    if (sizes.empty()) {
      sizes.push_back(layers);
    } else {
      sizes.back() += layers;
    }
  }
  return sizes;
}

int64_t LocalNumel(const std::vector<UnitLayout>& units) {
  int64_t n = 0;
  for (const UnitLayout& u : units) n += u.shard_numel;
  return n;
}

}  // namespace rlswarm::learner
