#include "calibration/layer_chain.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace eaglesim {

LayerChain layer_chain(const AllreduceLayerCase& layer, int copies) {
  if (copies < 1) throw std::invalid_argument("layer_chain: copies must be >= 1");
  const std::size_t core = layer.layer_size;
  if (core == 0 || core > layer.ops.size()) throw std::invalid_argument("layer_chain: layer_size out of range");
  LayerChain chain;
  for (int c = 0; c < copies; ++c) chain.ops.insert(chain.ops.end(), layer.ops.begin(), layer.ops.begin() + static_cast<std::ptrdiff_t>(core));
  chain.ops.insert(chain.ops.end(), layer.ops.begin() + static_cast<std::ptrdiff_t>(core), layer.ops.end());
  // Op d of copy c sits at c * core + d; for d beyond the layer that is the next copy's head
  // (the tail after the last copy), which is what the allreduce of copy c absorbs.
  std::vector<bool> drop(chain.ops.size(), false);
  for (std::size_t d : layer.dropped) {
    if (d >= layer.ops.size()) throw std::invalid_argument("layer_chain: a dropped op is outside the layer and its tail");
    for (int c = 0; c < copies; ++c) drop[static_cast<std::size_t>(c) * core + d] = true;
  }
  for (std::size_t j = 0; j < chain.ops.size(); ++j) {
    chain.with.push_back(j);
    if (!drop[j]) chain.without.push_back(j);
    else if (!chain.ops[j].is_comm()) chain.absorbed.push_back(j);
  }
  return chain;
}

LayerChain repeated(const LayerChain& chain, std::size_t core_ops) {
  auto twice = [core_ops](const std::vector<std::size_t>& idx) {
    std::vector<std::size_t> out;
    for (int round = 0; round < 2; ++round)
      for (std::size_t i : idx)
        if (i < core_ops) out.push_back(i);
    for (std::size_t i : idx)
      if (i >= core_ops) out.push_back(i);
    return out;
  };
  LayerChain r;
  r.ops = chain.ops;
  r.with = twice(chain.with);
  r.without = twice(chain.without);
  r.absorbed = chain.absorbed;  // the ops a fused kernel must absorb: the same program ops
  return r;
}

double layer_weight_bytes(const std::vector<Op>& ops, std::size_t n) {
  double weights = 0;
  for (std::size_t j = 0; j < n && j < ops.size(); ++j) weights += ops[j].weight_bytes();
  return weights;
}

int layer_chain_copies(double weight_bytes, double l2_bytes) {
  const double need = weight_bytes > 0 ? std::ceil(2 * l2_bytes / weight_bytes) : 8;
  return static_cast<int>(std::clamp(need, 8.0, 32.0));
}

int compute_layer_chain_copies(double weight_bytes, double l2_bytes) {
  constexpr double kStreamedBytes = 4.0 * (1ull << 30);
  const int floor = layer_chain_copies(weight_bytes, l2_bytes);
  const double need = weight_bytes > 0 ? std::ceil(kStreamedBytes / weight_bytes) : floor;
  return static_cast<int>(std::clamp(need, static_cast<double>(floor), 64.0));
}

int compute_layer_placements(double chain_weight_bytes, double free_bytes) {
  constexpr int kPlacements = 3;
  constexpr double kFootprintPerWeightByte = 1.25;  // KV caches, activations, allocation rounding
  constexpr double kFreeShare = 0.5;
  const double one = std::max(1.0, chain_weight_bytes * kFootprintPerWeightByte);
  const double fit = std::floor(kFreeShare * std::max(0.0, free_bytes) / one);
  return static_cast<int>(std::clamp(fit, 1.0, static_cast<double>(kPlacements)));
}

int layer_chain_copies(const AllreduceLayerCase& layer, double l2_bytes) {
  return layer_chain_copies(layer_weight_bytes(layer.ops, layer.layer_size), l2_bytes);
}

}  // namespace eaglesim
