#pragma once
// Prices non-communication ops on a topology's GPU: roofline with size-dependent efficiency
// for GEMMs, KV bytes over bandwidth for attention, bytes over bandwidth for norms and
// elementwise ops (never under the launch gap). Calibration tables win where present.
#include <string>

#include "cost/engine_profile.hpp"
#include "topology/topology.hpp"
#include "trace/op.hpp"

namespace eaglesim {

struct OpCost {
  double us = 0;
  bool calibrated = false;
  bool extrapolated = false;  // calibration existed for this kind but not this range
  bool measured = false;      // taken from the op's own `us` (kind other)
};

// What the op costs in a step: its chain cost plus the calibration's sequence overhead.
OpCost compute_cost(const Op& op, const Topology& topo);
// The same as a serving engine's kernel: a grouped GEMM is the engine's fused-MoE kernel (its
// CTAs' waves at EngineProfile::moe_cta_gbs each); fp8 / int4 GEMMs and attention are the
// datasheet model, whatever the calibration fitted to eaglesim's own kernels. The torch
// reference step keeps the calibration's models, its GQA attention priced by the topology's
// kPersistentAttentionKey fit (cuDNN's persistent grid) where there is one.
OpCost compute_cost(const Op& op, const Topology& topo, const EngineProfile& engine);
// What the op costs back to back with copies of itself (the tables' and the models' view).
OpCost chain_cost(const Op& op, const Topology& topo);

// The fused residual-add + RMSNorm kernel SGLang and vLLM run for a residual_add followed by an
// rmsnorm of the same tokens and hidden (fused_add_rmsnorm: residual = x + residual; out =
// rmsnorm(residual) * w), given the pair's rmsnorm: the `add_rmsnorm` elementwise table by
// tokens x hidden where it covers the size, else the streaming time of its bytes
// (add_rmsnorm_traffic), never under the launch gap. In a step (sequence overhead added once,
// the pair being one kernel) and back to back.
OpCost add_rmsnorm_cost(const Op& norm, const Topology& topo);
OpCost add_rmsnorm_chain_cost(const Op& norm, const Topology& topo);

}  // namespace eaglesim
