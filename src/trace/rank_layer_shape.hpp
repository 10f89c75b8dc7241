#pragma once
// What one decoder layer of a model computes on one tensor-parallel rank: the widths its GEMMs,
// attention, norms and allreduces have there. The model module derives it from a config
// (model/sharded_layer_shape.hpp); the importer reads kernels that carry no shapes against it.
#include <cstdint>
#include <string>

namespace eaglesim {

struct RankLayerShape {
  std::string config_file;  // for messages
  std::string model_name;
  std::string model_type;
  int layers = 0;
  bool dense_gqa = true;    // false (MoE, MLA, draft head): no fixed role order to read shapes from
  bool qk_norm = false;     // per-head RMSNorm of q and k before attention (Qwen3)
  std::int64_t hidden = 0;
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;  // per rank
  std::int64_t intermediate = 0;                       // dense MLP width per rank
  std::int64_t vocab = 0;                              // lm_head rows per rank
};

}  // namespace eaglesim
