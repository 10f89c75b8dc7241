#include "serve/scheduler_rules.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace {

// SGLang's server_args.py (_handle_gpu_memory_settings) reads the GPU's memory in MiB; a preset
// quotes GB (1e9 bytes).
double mib(double gb) { return gb * 1e9 / (1024.0 * 1024.0); }

}  // namespace

SchedulerRules default_scheduler_rules(ServingEngine engine, double gpu_mem_gb, int tp, bool speculative, int dp) {
  SchedulerRules r;
  r.engine = engine;
  r.dp = std::max(1, dp);
  const double mem = mib(gpu_mem_gb);
  if (engine == ServingEngine::vllm) {
    // vllm/engine/arg_utils.py, get_batch_defaults: `vllm serve` on GPUs of >= 70 GiB other than
    // the A100 gets 8192 batched tokens and 1024 sequences; others 2048 and 256.
    const bool big = mem >= 70 * 1024;
    r.mixed_batches = true;
    r.token_budget = big ? 8192 : 2048;
    r.max_running_requests = big ? 1024 : 256;
    r.mem_fraction = 0.9;
    r.sources.push_back(fmt::format("vLLM V1 arg_utils.py get_batch_defaults (vllm serve, {} GiB GPU): "
                                    "max_num_batched_tokens {}, max_num_seqs {}; gpu_memory_utilization 0.9 (0.92 from "
                                    "April 2026); chunked prefill mixed with decode in one step",
                                    static_cast<int>(mem / 1024), r.token_budget, r.max_running_requests));
    return r;
  }
  if (engine != ServingEngine::sglang)
    throw InputError(fmt::format("--engine: serving simulation models sglang and vllm, got {}", to_string(engine)));
  // python/sglang/srt/server_args.py, _handle_gpu_memory_settings (MiB thresholds).
  int graph_bs = 0;
  if (mem < 20 * 1024) r.token_budget = 2048, graph_bs = 8;
  else if (mem < 35 * 1024) r.token_budget = 2048, graph_bs = tp < 4 ? 24 : 80;
  else if (mem < 60 * 1024) r.token_budget = 4096, graph_bs = tp < 4 ? 32 : 160;
  else if (mem < 160 * 1024) r.token_budget = 8192, graph_bs = tp < 4 ? 256 : 512;
  else r.token_budget = 16384, graph_bs = 512;
  // The default mem_fraction_static: what is left after a reserve for activations, CUDA graphs and
  // communication buffers (at least 10 GiB on GPUs over 60 GiB; 2 GiB more for an EAGLE head).
  double reserved = 512 + std::max<double>(static_cast<double>(r.token_budget), 2048) * 1.5 + graph_bs * 2.0 + tp / 8.0 * 1024;
  // DP attention pads its CUDA graphs over the ranks: cuda_graph_max_bs x dp x 3 MiB more, and
  // x 1.5 more again above a max_bs of 300 (reserve_for_graph_mb).
  if (r.dp > 1) {
    reserved += graph_bs * r.dp * 3.0;
    if (graph_bs > 300) reserved += graph_bs * r.dp * 1.5;
  }
  if (mem > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
  if (speculative) reserved += 2048;
  r.mem_fraction = std::round((mem - reserved) / mem * 1000) / 1000;
  r.mixed_batches = false;
  // max_running_requests: min(KV tokens / 2, the request pool, usually 2048); 48 under EAGLE.
  r.max_running_requests = speculative ? 48 : 2048;
  // init_new_token_ratio = 0.7 x schedule_conservativeness, which DP attention multiplies by 0.3.
  const double conservativeness = r.dp > 1 ? 0.3 : 1.0;
  r.new_token_ratio_init = 0.7 * conservativeness;
  r.new_token_ratio_min = r.new_token_ratio_init * 0.14;
  r.new_token_ratio_decay = (r.new_token_ratio_init - r.new_token_ratio_min) / 600;
  r.sources.push_back(fmt::format("SGLang server_args.py _handle_gpu_memory_settings ({:.0f} MiB GPU, TP{}): "
                                  "chunked_prefill_size {}, cuda_graph_max_bs {}, mem_fraction_static {:.3f}",
                                  mem, tp, r.token_budget, graph_bs, r.mem_fraction));
  r.sources.push_back(speculative ? "SGLang server_args.py _handle_speculative_decoding: max_running_requests 48 with EAGLE"
                                  : "SGLang model_runner.py: max_running_requests min(KV tokens / 2, request pool 2048)");
  r.sources.push_back("SGLang scheduler.py: a prefill batch runs whenever one can be formed, else one decode step; "
                      "new_token_ratio 0.7 falling to 0.098 over 600 decode steps");
  if (r.dp > 1)
    r.sources.push_back(fmt::format("SGLang server_args.py _handle_data_parallelism (--enable-dp-attention, dp {}): "
                                    "schedule_conservativeness x 0.3 (new_token_ratio {:.2f} falling to {:.3f}); "
                                    "reserve_for_graph_mb: + cuda_graph_max_bs x dp x {} MiB",
                                    r.dp, r.new_token_ratio_init, r.new_token_ratio_min, graph_bs > 300 ? "4.5" : "3"));
  return r;
}

void split_over_dp_ranks(SchedulerRules& r) {
  if (r.dp <= 1) return;
  const int instance_running = r.max_running_requests;
  const std::int64_t instance_budget = r.token_budget;
  r.max_running_requests = std::max(1, r.max_running_requests / r.dp);
  r.token_budget = std::max<std::int64_t>(1, r.token_budget / r.dp);
  r.sources.push_back(fmt::format("SGLang with DP attention: one scheduler per DP rank, requests sent to them in turn "
                                  "(data_parallel_controller.py round_robin_scheduler); each rank's "
                                  "max_running_requests {} // {} = {} (model_runner.py), chunked_prefill_size {} // {} "
                                  "= {} (server_args.py _handle_data_parallelism)",
                                  instance_running, r.dp, r.max_running_requests, instance_budget, r.dp, r.token_budget));
}

}  // namespace eaglesim
