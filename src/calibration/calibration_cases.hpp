#pragma once
// The cases `calibrate` takes from the traces' first decoder layers: consecutive compute-op pairs
// (kernel transitions), whole compute layers, each allreduce between the ops around it (per
// strategy), and whole layers with their allreduces. Deduplicated and capped, so a calibration
// over several traces stays within its time budget.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "calibration/calibration_request.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

// Kinds whose transitions calibrate measures: every compute op the replay runs as a real kernel
// (`other` is a timed spin whose chain time is what the trace asked for).
bool transition_kind(OpKind k);

// What makes two layers' ops the same measurement: kinds, shapes and, for `other` ops (which the
// replay spins for their traced time), that time. One entry of a layer's deduplication key.
std::string op_signature(const Op& op);

// Appends a residual add of `tokens` x `hidden` and the RMSNorm of the same rows right after it,
// both numbered `layer`: what a fused allreduce absorbs after itself, and what the replay runs as
// one fused add + RMSNorm kernel.
void append_residual_norm(Step& step, std::int64_t tokens, std::int64_t hidden, int layer);

// Consecutive compute ops of the representative layers of every step (the first decoder layer and
// the first layer of each other structure: a dense-MLP layer and a MoE layer) and the step from
// each one's last op into the next op, deduplicated; with `fused_pairs`, also the pairs a fused strategy makes
// consecutive.
std::vector<std::pair<Op, Op>> transition_pairs(const std::vector<Trace>& traces, bool fused_pairs);

// The compute ops of the representative layers of every verify step, deduplicated.
std::vector<ComputeLayerCase> compute_layers(const std::vector<Trace>& traces);

// Every allreduce of the first decoder layer of every step, per strategy, between the compute ops
// around it; sizes a strategy cannot run are left out.
std::vector<AllreduceContextCase> allreduce_contexts(const std::vector<Trace>& traces,
                                                     const std::vector<std::string>& strategies);

// The first decoder layer of every step, per strategy, when each of its allreduces has a case in
// `contexts`; deduplicated by strategy and op shapes.
std::vector<AllreduceLayerCase> allreduce_layers(const std::vector<Trace>& traces,
                                                 const std::vector<std::string>& strategies,
                                                 const std::vector<AllreduceContextCase>& contexts);

}  // namespace eaglesim
