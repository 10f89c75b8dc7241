#pragma once
// The rules a serving engine's scheduler batches requests by, with the engine's defaults for a
// GPU and TP (sources in docs/serving.md, "Scheduler rules"), each overridable by the engine's
// own flag. SGLang runs a prefill forward whenever requests wait and can be admitted (chunked at
// chunked_prefill_size tokens), else a decode forward of every running request; vLLM's V1
// scheduler fills one token budget per step, running requests' decode (and draft) tokens first,
// then chunks of waiting prompts, in one mixed forward.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/serving_engine.hpp"

namespace eaglesim {

struct SchedulerRules {
  ServingEngine engine = ServingEngine::sglang;
  // SGLang --max-running-requests / vLLM --max-num-seqs.
  int max_running_requests = 256;
  // SGLang --chunked-prefill-size: new tokens per prefill forward; vLLM --max-num-batched-tokens:
  // all tokens of a step (decode, draft verify and prefill chunks).
  std::int64_t token_budget = 8192;
  bool mixed_batches = false;        // vLLM: decode and prefill chunks in one forward
  // SGLang's admission reserve: a running request keeps room for its remaining output times this
  // ratio, which starts at `init`, falls by `decay` per decode forward to `min`, and goes back to
  // `init` when a decode runs out of KV cache and requests are retracted.
  double new_token_ratio_init = 0.7;
  double new_token_ratio_min = 0.1;
  double new_token_ratio_decay = 0.001;
  std::int64_t kv_capacity_tokens = 0;  // positions the KV cache holds (kv_capacity.hpp), per DP rank
  // SGLang --enable-dp-attention --dp N: N schedulers, one per attention rank, each with its own
  // queue, KV pool and ratio, stepping together (serving_simulator.hpp). max_running_requests,
  // token_budget and kv_capacity_tokens are then a rank's (split_over_dp_ranks); 1: one scheduler.
  int dp = 1;
  double mem_fraction = 0.9;            // SGLang --mem-fraction-static / vLLM --gpu-memory-utilization
  std::vector<std::string> sources;     // where each default came from, in words
};

// The engine's defaults on GPUs of `gpu_mem_gb` at `tp`, with or without speculative decoding;
// kv_capacity_tokens is left 0 (kv_capacity.hpp fills it).
// `dp` > 1: SGLang with data-parallel attention over dp ranks, which reserves more memory for its
// CUDA graphs and admits more eagerly (schedule_conservativeness x 0.3); the limits stay the
// instance's until split_over_dp_ranks.
SchedulerRules default_scheduler_rules(ServingEngine engine, double gpu_mem_gb, int tp, bool speculative, int dp = 1);

// SGLang's split of the instance's --max-running-requests and --chunked-prefill-size over its DP
// ranks (each rank's scheduler gets value // dp, at least 1); nothing for dp 1.
void split_over_dp_ranks(SchedulerRules& rules);

}  // namespace eaglesim
