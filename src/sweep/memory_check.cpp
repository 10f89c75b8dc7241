#include "sweep/memory_check.hpp"

#include <fmt/format.h>

namespace eaglesim {

MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, int tp, DType weight_dtype,
                         const std::vector<std::int64_t>& kv_lens) {
  return memory_needed(target, draft, tp, LinearFormats::all(weight_dtype), kv_lens);
}

MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, int tp, const LinearFormats& formats,
                         const std::vector<std::int64_t>& kv_lens) {
  MemoryNeed need;
  need.requests = static_cast<int>(kv_lens.size());
  for (std::int64_t l : kv_lens) need.kv_tokens += l;
  const double positions = static_cast<double>(need.kv_tokens);
  need.weight_bytes = weight_bytes_per_rank(target, tp, formats);
  need.kv_bytes = kv_cache_bytes_per_token_per_rank(target, tp) * positions;
  if (draft) {
    need.draft_weight_bytes = weight_bytes_per_rank(*draft, tp, DType::bf16);
    need.draft_kv_bytes = kv_cache_bytes_per_token_per_rank(*draft, tp) * positions;
    need.kv_bytes += need.draft_kv_bytes;
  }
  return need;
}

MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, const RankHolding& holding,
                         const LinearFormats& formats, std::vector<std::int64_t> kv_lens) {
  const int tp = holding.tp;
  if (holding.dp_attention)
    kv_lens.resize((kv_lens.size() + static_cast<std::size_t>(tp) - 1) / static_cast<std::size_t>(tp));
  MemoryNeed need = memory_needed(target, draft, holding.dp_attention ? 1 : tp, formats, kv_lens);
  if (holding.dp_attention) need.weight_bytes = weight_bytes_per_rank(target, tp, formats, true);
  if (holding.mtp_layer && target.mtp_layers > 0) {
    // The MTP layers are decoder layers like the target's last, sharded as they are: the model
    // with them appended, less the model, plus eh_proj ([2h -> h], bf16, replicated).
    ModelConfig with_mtp = target;
    with_mtp.layers += target.mtp_layers;
    const double h = static_cast<double>(target.hidden);
    need.draft_weight_bytes = weight_bytes_per_rank(with_mtp, tp, formats, holding.dp_attention) -
                              weight_bytes_per_rank(target, tp, formats, holding.dp_attention) +
                              target.mtp_layers * 2.0 * h * h * 2.0;
    const int kv_tp = holding.dp_attention ? 1 : tp;
    need.draft_kv_bytes = (kv_cache_bytes_per_token_per_rank(with_mtp, kv_tp) -
                           kv_cache_bytes_per_token_per_rank(target, kv_tp)) *
                          static_cast<double>(need.kv_tokens);
    need.kv_bytes += need.draft_kv_bytes;
  }
  return need;
}

MemoryNeed memory_needed(const ModelConfig& target, const ModelConfig* draft, int tp, DType weight_dtype,
                         std::int64_t kv_len, int batch) {
  return memory_needed(target, draft, tp, weight_dtype, std::vector<std::int64_t>(static_cast<std::size_t>(batch), kv_len));
}

MemoryVerdict check_memory(const MemoryNeed& need, const GpuSpec& gpu, double gpu_mem_util) {
  MemoryVerdict v;
  v.need_gb = need.total_bytes() / 1e9;
  v.usable_gb = gpu.mem_gb * gpu_mem_util;
  if (gpu.mem_gb <= 0) return v;
  v.fits = v.need_gb <= v.usable_gb;
  if (!v.fits) {
    v.reason = fmt::format(
        "needs {:.1f} GB per GPU (weights {:.1f} + draft head {:.1f} + KV cache {:.1f}{}), "
        "{} has {:.1f} GB usable ({:.0f}% of {:.0f} GB)",
        v.need_gb, need.weight_bytes / 1e9, need.draft_weight_bytes / 1e9, need.kv_bytes / 1e9,
        need.requests > 1 ? fmt::format(" for {} requests, {} positions", need.requests, need.kv_tokens) : "",
        gpu.name, v.usable_gb, gpu_mem_util * 100.0, gpu.mem_gb);
  }
  return v;
}

}  // namespace eaglesim
