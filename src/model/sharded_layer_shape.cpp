#include "model/sharded_layer_shape.hpp"

namespace eaglesim {

RankLayerShape rank_layer_shape(const ModelConfig& m, int tp) {
  check_tp(m, tp);
  RankLayerShape s;
  s.config_file = m.file;
  s.model_name = m.name;
  s.model_type = m.model_type;
  s.layers = m.layers;
  s.dense_gqa = !m.is_moe() && !m.is_mla() && !m.is_draft();
  s.qk_norm = m.qk_norm;
  s.hidden = m.hidden;
  s.heads = heads_per_rank(m, tp);
  s.kv_heads = kv_heads_per_rank(m, tp);
  s.head_dim = m.head_dim;
  s.intermediate = m.intermediate / tp;
  s.vocab = vocab_per_rank(m.vocab, tp);
  return s;
}

}  // namespace eaglesim
