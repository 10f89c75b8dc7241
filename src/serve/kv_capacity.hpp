#pragma once
// How many token positions an engine's KV cache holds on each rank: the memory fraction the
// engine may use (SGLang --mem-fraction-static, vLLM --gpu-memory-utilization) of one GPU, less
// the rank's share of the target's and the EAGLE-3 head's weights, over the KV bytes one position
// takes on the rank (target and head; fp8 KV halves it). Activations, CUDA graphs and
// communication buffers live in the fraction left over (SGLang) or are part of what the engine
// profiles before sizing the cache (vLLM): both are outside this count. A rank holds the model as
// RankHolding says (sweep/memory_check.hpp): with data-parallel attention every weight but the
// routed experts unsharded and each position's KV at full width (attention TP 1), its own
// requests only; with the target's MTP layer as the draft, that layer's weights and KV.
#include <cstdint>
#include <optional>

#include "core/dtype.hpp"
#include "model/checkpoint_quantization.hpp"
#include "model/model_config.hpp"
#include "sweep/memory_check.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

struct KvCapacity {
  std::int64_t tokens = 0;          // 0: the weights fill the fraction
  double weights_gb = 0;            // target + head on one rank
  double pool_gb = 0;               // what the cache gets
  double bytes_per_token = 0;       // on one rank
};

KvCapacity kv_capacity(const ModelConfig& target, const ModelConfig* draft, int tp, const LinearFormats& formats,
                       DType kv_cache_dtype, const GpuSpec& gpu, double mem_fraction);
// One rank of a layout (`draft` null with holding.mtp_layer: the MTP layer is the draft).
KvCapacity kv_capacity(const ModelConfig& target, const ModelConfig* draft, const RankHolding& holding,
                       const LinearFormats& formats, DType kv_cache_dtype, const GpuSpec& gpu, double mem_fraction);

}  // namespace eaglesim
