#pragma once
// The settings a caller gives the library, by name. Library messages name a setting through
// setting_name(), never by a command-line spelling: the program driving the library installs a
// namer that writes its own spelling (the CLI's writes flags: cli/setting_flags.cpp), and without
// one the library's names below are used (the option structs' field names).
#include <string>
#include <string_view>

namespace eaglesim {

enum class Setting {
  model,
  config,
  draft,
  tp,
  tokens,
  kv_len,
  kv_lens,
  batch,
  weight_dtype,
  kv_cache_dtype,
  speculative_num_steps,
  speculative_eagle_topk,
  speculative_num_draft_tokens,
  draft_tokens,
  accept_rate,
  accept_len,
  accept_probs,
  backend,
  topology,
  strategy,
  ranks,
  op_times,
  unfused_add_norm,
  engine_option,
  gpu_mem_util,
  iters,
  warmup,
  timeout_s,
  no_nccl_prime,
  nccl_algo,
  nccl_proto,
  nccl_channels,
  step,
  all_steps,
  layers,
  engine,
  engine_cycle,
  ep,
  dp_attention,
};

// Every Setting, in declaration order (for tests and namers that check they cover all).
inline constexpr Setting kAllSettings[] = {
    Setting::model, Setting::config, Setting::draft, Setting::tp, Setting::tokens, Setting::kv_len,
    Setting::kv_lens, Setting::batch, Setting::weight_dtype, Setting::kv_cache_dtype, Setting::speculative_num_steps,
    Setting::speculative_eagle_topk, Setting::speculative_num_draft_tokens, Setting::draft_tokens,
    Setting::accept_rate, Setting::accept_len, Setting::accept_probs, Setting::backend, Setting::topology,
    Setting::strategy, Setting::ranks, Setting::op_times, Setting::unfused_add_norm, Setting::engine_option,
    Setting::gpu_mem_util, Setting::iters, Setting::warmup, Setting::timeout_s, Setting::no_nccl_prime,
    Setting::nccl_algo, Setting::nccl_proto, Setting::nccl_channels, Setting::step, Setting::all_steps,
    Setting::layers, Setting::engine, Setting::engine_cycle, Setting::ep, Setting::dp_attention,
};

std::string_view library_name(Setting s);

using SettingNamer = std::string (*)(Setting);
// Installed once, before any worker thread starts; nullptr goes back to library_name.
void install_setting_namer(SettingNamer namer);
// The installed namer's spelling of `s`, or library_name(s).
std::string setting_name(Setting s);

}  // namespace eaglesim
