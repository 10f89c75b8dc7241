#pragma once
// Which forwards a serving engine replays as a CUDA graph and which it launches eagerly, kernel by
// kernel from the host: each engine captures graphs for a list of batch sizes and runs a batch
// outside the list eagerly (source files and defaults: docs/engine-steps.md, "CUDA graphs and
// eager launches"). An eager forward cannot finish before the host has launched its kernels, so
// it takes the longer of its GPU time and kernels x EngineProfile::eager_launch_us.
#include <cstdint>
#include <string>

#include "cost/engine_profile.hpp"

namespace eaglesim {

struct GraphDecision {
  bool graph = true;
  std::string why;  // in words: the limit and the engine's rule
};

// A forward of `requests` requests x `tokens_per_request` tokens at tensor parallelism `tp` on a
// GPU of `gpu_mem_gb`, under `p`'s limit (its cuda_graph_max_bs, 0: the engine's default).
GraphDecision cuda_graph_decision(const EngineProfile& p, std::int64_t requests, std::int64_t tokens_per_request, int tp,
                                  double gpu_mem_gb);

// The host-bound time an eager forward of `kernels` launches adds beyond its GPU time `gpu_us`.
double eager_launch_excess_us(const EngineProfile& p, std::int64_t kernels, double gpu_us);

}  // namespace eaglesim
