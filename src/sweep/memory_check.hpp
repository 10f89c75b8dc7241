#pragma once
// Does a model fit on one GPU of a topology at a given TP? A rank holds its share of the target
// weights, the EAGLE-3 head's share, and the KV cache of one sequence of kv_len tokens for both.
// It may fill `gpu_mem_util` of the GPU's memory: the rest is what serving engines keep back for
// the CUDA context, activations, communication buffers and library workspaces (vLLM's
// --gpu-memory-utilization defaults to 0.9 for the same reason).
#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.hpp"
#include "model/model_config.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

struct MemoryNeed {
  double weight_bytes = 0;        // target weights on one rank
  double draft_weight_bytes = 0;  // EAGLE-3 head weights on one rank
  double kv_bytes = 0;            // KV cache of kv_len tokens (target + head) on one rank
  double total_bytes() const { return weight_bytes + draft_weight_bytes + kv_bytes; }
};

struct MemoryVerdict {
  bool fits = true;
  double need_gb = 0;    // 1e9 bytes, as GPU memory is quoted
  double usable_gb = 0;  // gpu.mem_gb * gpu_mem_util
  std::string reason;    // when it does not fit, in words: what is needed and what there is
};

// What one rank needs. The head's weights are kept in bf16 (EAGLE-3 heads ship that way); its
// KV cache covers the same kv_len. KV entries are bf16.
MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, int tp, DType weight_dtype,
                         std::int64_t kv_len);

// InputError-free: gpu_mem_util must be in (0, 1] (the CLI validates it). A GPU without a
// memory size (mem_gb == 0) is treated as unknown and always fits, with no reason.
MemoryVerdict check_memory(const MemoryNeed& need, const GpuSpec& gpu, double gpu_mem_util);

}  // namespace eaglesim
