#include "serve/kv_capacity.hpp"

#include <algorithm>
#include <cmath>


namespace eaglesim {

KvCapacity kv_capacity(const ModelConfig& target, const ModelConfig* draft, int tp, const LinearFormats& formats,
                       DType kv_cache_dtype, const GpuSpec& gpu, double mem_fraction) {
  return kv_capacity(target, draft, RankHolding{tp, false, false}, formats, kv_cache_dtype, gpu, mem_fraction);
}

KvCapacity kv_capacity(const ModelConfig& target, const ModelConfig* draft, const RankHolding& holding,
                       const LinearFormats& formats, DType kv_cache_dtype, const GpuSpec& gpu, double mem_fraction) {
  // memory_needed prices bf16 KV entries; a probe of one request of many positions gives the
  // bytes per position (with DP attention the one request sits on this rank, at attention TP 1).
  constexpr std::int64_t kProbe = 1 << 20;
  const MemoryNeed need = memory_needed(target, draft, holding, formats, {kProbe});
  KvCapacity c;
  c.bytes_per_token = need.kv_bytes / static_cast<double>(kProbe) * (kv_cache_dtype == DType::fp8 ? 0.5 : 1.0);
  c.weights_gb = (need.weight_bytes + need.draft_weight_bytes) / 1e9;
  c.pool_gb = std::max(0.0, gpu.mem_gb * mem_fraction - c.weights_gb);
  c.tokens = c.bytes_per_token > 0 ? static_cast<std::int64_t>(std::floor(c.pool_gb * 1e9 / c.bytes_per_token)) : 0;
  return c;
}

}  // namespace eaglesim
