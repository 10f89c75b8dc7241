#pragma once
// What a serving engine adds to the kernels of a step it runs, beside the kernels its inventory
// lists (model/generator.cpp): the efficiency of its fused-MoE kernel at decode sizes, and the
// host work of each iteration — per plain-decoding forward (hidden behind the GPU when the engine
// overlaps scheduling with the forward) and per speculative cycle and draft step (not hidden: the
// engines run the speculative cycle's bookkeeping between forwards). docs/engine-steps.md gives
// each default's source and how the fit set set it; `--engine-option ENGINE.NAME=VALUE` changes
// them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/serving_engine.hpp"

namespace eaglesim {

struct EngineProfile {
  ServingEngine engine = ServingEngine::sglang;
  // What one CTA of the engine's fused-MoE kernel streams its weight tile at (GB/s). Triton's
  // fused_moe_kernel at decode sizes launches one CTA per (BLOCK_M rows of a touched expert,
  // BLOCK_N output columns), each streaming its K x BLOCK_N weight tile alone, without split-K:
  // few CTAs, each latency-bound (cost/compute_model.cpp, fused_moe_us).
  double moe_cta_gbs = 9.5;
  // Host work per plain-decoding iteration (scheduling, sampling launch, output processing).
  double plain_host_us = 0;
  // Whether the engine overlaps that work with the forward (SGLang's overlap scheduler, vLLM's
  // async scheduling): then only what the forward does not cover shows.
  bool plain_overlap = true;
  // Host work per speculative cycle between the forwards (tree bookkeeping, KV-slot allocation,
  // the synchronisations that read accepted tokens), not overlapped.
  double cycle_host_us = 0;
  // Host work per draft forward of the cycle (draft-step metadata, its graph replay).
  double draft_step_host_us = 0;
  // The largest forward the engine replays as a CUDA graph (cost/cuda_graph_limit.hpp): requests
  // for SGLang and TensorRT-LLM, tokens for vLLM; 0: the engine's default.
  std::int64_t cuda_graph_max_bs = 0;
  // Host time per kernel launch of an eager forward (PyTorch dispatch, the launch itself).
  double eager_launch_us = 5.0;
};

// The engine's defaults (docs/engine-steps.md).
EngineProfile default_engine_profile(ServingEngine engine);

// The option names `--engine-option` takes for a profile: moe_cta_gbs, plain_host_us,
// plain_overlap, cycle_host_us, draft_step_host_us.
const std::vector<std::string>& engine_profile_option_names();
bool is_engine_profile_option(const std::string& name);
// Sets one option from its text; throws InputError naming `item` on a value out of range.
void set_engine_profile_option(EngineProfile& p, const std::string& name, const std::string& value,
                               const std::string& item);

}  // namespace eaglesim
