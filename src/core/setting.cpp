#include "core/setting.hpp"

#include <atomic>

namespace eaglesim {

std::string_view library_name(Setting s) {
  switch (s) {
    case Setting::model: return "model";
    case Setting::config: return "config";
    case Setting::draft: return "draft";
    case Setting::tp: return "tp";
    case Setting::tokens: return "tokens";
    case Setting::kv_len: return "kv_len";
    case Setting::kv_lens: return "kv_lens";
    case Setting::batch: return "batch";
    case Setting::weight_dtype: return "weight_dtype";
    case Setting::kv_cache_dtype: return "kv_cache_dtype";
    case Setting::speculative_num_steps: return "speculative_num_steps";
    case Setting::speculative_eagle_topk: return "speculative_eagle_topk";
    case Setting::speculative_num_draft_tokens: return "speculative_num_draft_tokens";
    case Setting::draft_tokens: return "draft_tokens";
    case Setting::accept_rate: return "accept_rate";
    case Setting::accept_len: return "accept_len";
    case Setting::accept_probs: return "accept_probs";
    case Setting::backend: return "backend";
    case Setting::topology: return "topology";
    case Setting::strategy: return "strategy";
    case Setting::ranks: return "ranks";
    case Setting::op_times: return "op_times";
    case Setting::unfused_add_norm: return "unfused_add_norm";
    case Setting::engine_option: return "engine_option";
    case Setting::gpu_mem_util: return "gpu_mem_util";
    case Setting::iters: return "iters";
    case Setting::warmup: return "warmup";
    case Setting::timeout_s: return "timeout_s";
    case Setting::no_nccl_prime: return "no_nccl_prime";
    case Setting::nccl_algo: return "nccl_algo";
    case Setting::nccl_proto: return "nccl_proto";
    case Setting::nccl_channels: return "nccl_channels";
    case Setting::step: return "step";
    case Setting::all_steps: return "all_steps";
    case Setting::layers: return "layers";
    case Setting::engine: return "engine";
    case Setting::engine_cycle: return "engine_cycle";
    case Setting::ep: return "ep";
    case Setting::dp_attention: return "dp_attention";
  }
  return "?";
}

namespace {
std::atomic<SettingNamer> g_namer{nullptr};
}

void install_setting_namer(SettingNamer namer) { g_namer.store(namer); }

std::string setting_name(Setting s) {
  if (SettingNamer namer = g_namer.load()) return namer(s);
  return std::string(library_name(s));
}

}  // namespace eaglesim
