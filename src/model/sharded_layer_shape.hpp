#pragma once
// A model config sharded over `tp` ranks as SGLang lays it out (model_config.hpp), as the
// per-rank layer shape the importer matches kernel sequences against.
#include "model/model_config.hpp"
#include "trace/rank_layer_shape.hpp"

namespace eaglesim {

// Throws InputError naming the config file when `tp` does not divide the model (check_tp).
RankLayerShape rank_layer_shape(const ModelConfig& config, int tp);

}  // namespace eaglesim
