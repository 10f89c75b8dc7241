#pragma once
// Does a model fit on one GPU of a topology at a given TP and batch? A rank holds its share of
// the target weights, the EAGLE-3 head's share, and the KV cache of every request of the batch
// at its own KV length, for both models (the head keeps a KV cache of the same positions).
// It may fill `gpu_mem_util` of the GPU's memory: the rest is what serving engines keep back for
// the CUDA context, activations, communication buffers and library workspaces (vLLM's
// --gpu-memory-utilization defaults to 0.9 for the same reason).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "model/model_config.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

struct MemoryNeed {
  double weight_bytes = 0;        // target weights on one rank
  double draft_weight_bytes = 0;  // EAGLE-3 head weights on one rank
  double kv_bytes = 0;            // KV cache of every request (target + head) on one rank
  double draft_kv_bytes = 0;      // the head's part of kv_bytes
  int requests = 1;
  std::int64_t kv_tokens = 0;     // KV positions over all requests
  double total_bytes() const { return weight_bytes + draft_weight_bytes + kv_bytes; }
};

struct MemoryVerdict {
  bool fits = true;
  double need_gb = 0;    // 1e9 bytes, as GPU memory is quoted
  double usable_gb = 0;  // gpu.mem_gb * gpu_mem_util
  std::string reason;    // when it does not fit, in words: what is needed and what there is
};

// What one rank needs for requests of the KV lengths `kv_lens` (one per request). The head's
// weights are kept in bf16 (EAGLE-3 heads ship that way); its KV cache covers the same
// positions. KV entries are bf16.
MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, int tp, DType weight_dtype,
                         const std::vector<std::int64_t>& kv_lens);
// The same with a format per class of linear layer (a checkpoint's quantization_config).
MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, int tp, const LinearFormats& formats,
                         const std::vector<std::int64_t>& kv_lens);
// How one rank of a deployment holds the model: `tp` ranks sharding it (tensor parallelism, with
// or without expert parallelism: a rank holds the same bytes either way), or with data-parallel
// attention everything unsharded but 1/tp of the routed experts, serving ceil(requests / tp) of
// the requests at attention TP 1; `mtp_layer`: the target's own multi-token-prediction layer is
// the draft (one more decoder layer like the last, its KV cache and the replicated eh_proj).
struct RankHolding {
  int tp = 1;
  bool dp_attention = false;
  bool mtp_layer = false;
};
MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, const RankHolding& holding,
                         const LinearFormats& formats, std::vector<std::int64_t> kv_lens);
// `batch` requests of kv_len positions each.
MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, int tp, DType weight_dtype,
                         std::int64_t kv_len, int batch = 1);

// InputError-free: gpu_mem_util must be in (0, 1] (the CLI validates it). A GPU without a
// memory size (mem_gb == 0) is treated as unknown and always fits, with no reason.
MemoryVerdict check_memory(const MemoryNeed& need, const GpuSpec& gpu, double gpu_mem_util);

}  // namespace eaglesim
