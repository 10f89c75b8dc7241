#include "cli/setting_flags.hpp"

namespace eaglesim::cli {

std::string flag_of(Setting s) {
  switch (s) {
    case Setting::model: return "--model";
    case Setting::config: return "--config";
    case Setting::draft: return "--draft";
    case Setting::tp: return "--tp";
    case Setting::tokens: return "--tokens";
    case Setting::kv_len: return "--kv-len";
    case Setting::kv_lens: return "--kv-lens";
    case Setting::batch: return "--batch";
    case Setting::weight_dtype: return "--weight-dtype";
    case Setting::kv_cache_dtype: return "--kv-cache-dtype";
    case Setting::speculative_num_steps: return "--speculative-num-steps";
    case Setting::speculative_eagle_topk: return "--speculative-eagle-topk";
    case Setting::speculative_num_draft_tokens: return "--speculative-num-draft-tokens";
    case Setting::draft_tokens: return "--draft-tokens";
    case Setting::accept_rate: return "--accept-rate";
    case Setting::accept_len: return "--accept-len";
    case Setting::accept_probs: return "--accept-probs";
    case Setting::backend: return "--backend";
    case Setting::topology: return "--topology";
    case Setting::strategy: return "--strategy";
    case Setting::ranks: return "--ranks";
    case Setting::op_times: return "--op-times";
    case Setting::unfused_add_norm: return "--no-fused-add-norm";
    case Setting::engine_option: return "--engine-option";
    case Setting::gpu_mem_util: return "--gpu-mem-util";
    case Setting::iters: return "--iters";
    case Setting::warmup: return "--warmup";
    case Setting::timeout_s: return "--timeout";
    case Setting::no_nccl_prime: return "--no-nccl-prime";
    case Setting::nccl_algo: return "--nccl-algo";
    case Setting::nccl_proto: return "--nccl-proto";
    case Setting::nccl_channels: return "--nccl-channels";
    case Setting::step: return "--step";
    case Setting::all_steps: return "--all-steps";
    case Setting::layers: return "--layers";
    case Setting::engine: return "--engine";
    case Setting::engine_cycle: return "--engine-cycle";
    case Setting::ep: return "--ep";
    case Setting::dp_attention: return "--dp-attention";
  }
  return std::string(library_name(s));
}

}  // namespace eaglesim::cli
