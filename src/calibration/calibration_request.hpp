#pragma once
// What `eaglesim calibrate` asks the GPUs to measure and what comes back. The host side
// (calibration/calibration_plan.hpp) turns traces into a request and measurements into topology
// tables; the CUDA part (src/cuda/measure/calibrate_*.cpp) measures. Every compute op is measured the
// way the replay backend runs it (same kernels, same cuBLASLt algorithm choice), as the
// steady-state time per op in a CUDA graph of many back-to-back copies of it with rotating
// weights, so the inter-kernel gap a real step pays is inside each op's time and L2 does not
// serve weights that a real step would stream from memory.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "trace/op.hpp"

namespace eaglesim {

// One allreduce to measure in context: the increment of (context GEMM + allreduce) over the
// context GEMM alone, per call, in a graph of many such pairs.
struct AllreduceCase {
  std::string strategy;      // nccl, oneshot, twoshot, fused, quant
  std::int64_t bytes = 0;
  DType dtype = DType::bf16;
  // fused: the rows the kernel also adds to the residual and normalises (tokens * hidden * 2 = bytes).
  std::int64_t tokens = 0, hidden = 0;
};

// One allreduce measured in its trace context: a chain of (before, allreduce, after) triples
// against a chain of (before, after) pairs. `after` is the compute op after the ops a fused
// strategy absorbs.
struct AllreduceContextCase {
  AllreduceCase allreduce;
  Op before, after;
  std::string key;  // allreduce_context_key(...): the table entry it becomes
};

// One decoder layer of a trace replayed with a strategy: a chain of copies of the whole layer
// against the same chain without its allreduces (and, fused, without the residual add + RMSNorm
// they absorb), slowest rank each, once and twice over the copies; the difference of the two
// lengths per copy (what a chain pays once, its start and the ranks lining up, cancels). What the allreduces add to a layer differs from the sum of
// their (before, allreduce, after) measurements (an allreduce overlaps its neighbours differently
// inside a whole layer; docs/fidelity.md has the figures); the layer's entries of
// allreduce_context_us are scaled so they add up to it.
struct AllreduceLayerCase {
  std::string strategy;
  std::string where;                   // "llama-3.1-70b tp2 verify layer 0" (progress and notes)
  std::string step;                    // the step it comes from: verify, draft, decode
  std::vector<Op> ops;                 // the layer, in trace order, allreduces included, then its tail
  std::size_t layer_size = 0;          // ops[0, layer_size) is the layer; the rest, the next layer's
                                       // head ops its last allreduce absorbs (fused)
  std::vector<std::size_t> dropped;    // ops the baseline chain leaves out
  std::vector<std::size_t> contexts;   // the layer's allreduces: indices into allreduce_contexts
};

// The compute ops of one decoder layer (allreduces left out), replayed as a chain of copies on
// every GPU: what the layer costs per copy in steady state. The pair chains of the transition
// table do not add up to it (on 2 x H200 they overcharge a Llama-3.1-70B layer and undercharge
// an 8B one by a few µs, docs/fidelity.md); the layer's transition entries are shifted so that
// its ops and transitions add up to the chain (fit_transitions_to_layers).
struct ComputeLayerCase {
  std::string where;    // "llama-3.1-70b tp2 verify layer 0" (progress and notes)
  std::vector<Op> ops;  // the layer's compute ops in trace order; `other` keeps its traced time
  int gpus = 1;         // the first GPUs its steps run on (see CalibrationRequest::compute_gpus)
};

struct CalibrationRequest {
  int ranks = 1;                       // GPUs; compute ops are measured on each (compute_gpus says which count)
  std::vector<Op> compute;             // gemm, attention, rmsnorm, residual_add, act, embedding, other
  // Parallel to compute: on how many of the first GPUs the steps that use the op run, min(trace
  // tp, ranks) over those traces; its entry is the slowest of those GPUs' times. A one-GPU step
  // replays on GPU 0, so a TP1 shape in a 2-GPU calibration is priced at GPU 0, not at the
  // slower GPU (GPUs of one machine differed by 3 % in docs/fidelity.md).
  std::vector<int> compute_gpus;
  // Residual adds (tokens, hidden) to measure as the fused add + RMSNorm kernel that runs a
  // residual_add and the RMSNorm of the same rows after it (the table kAddRmsnormTable), over the
  // same token grid as the elementwise ops; add_rmsnorm_gpus parallel to it, as compute_gpus.
  std::vector<Op> add_rmsnorm;
  std::vector<int> add_rmsnorm_gpus;
  std::vector<AllreduceCase> allreduce;  // empty when ranks == 1
  Op context_gemm;                     // the GEMM every allreduce follows (kind gemm)
  // Each (strategy, allreduce, op before, op after) of the traces' first decoder layers.
  std::vector<AllreduceContextCase> allreduce_contexts;
  // Each (strategy, first decoder layer of a step) whose allreduces all have a context case.
  std::vector<AllreduceLayerCase> allreduce_layers;
  // The first decoder layer of every step, compute ops only, deduplicated by shapes.
  std::vector<ComputeLayerCase> compute_layers;
  // The compute layers again, each without the kernels of one op kind, where that puts kernels
  // next to each other that no compute layer has (kind_reduced_layers, transition_fit.hpp): what
  // a step without that kind runs per layer, the step a kind's marginal is the difference to.
  std::vector<ComputeLayerCase> kind_reduced_layers;
  // Consecutive compute ops of the traces (A, B), measured as a chain of (A, B) pairs against
  // their own chains: the kernel-transition cost (Calibration::transition_us).
  std::vector<std::pair<Op, Op>> transitions;
  // A residual_add followed by an rmsnorm of the same shape runs as one fused kernel
  // (backend/op_pricing.hpp, fusable_add_norm), in the chains measured and in the fits that price
  // them (the `add_rmsnorm` elementwise table); false: as two (--no-fused-add-norm). The chains
  // it applies to are the decoder layers' (compute_layers, allreduce_layers); single ops,
  // transitions and allreduce contexts are measured as separate kernels either way, and the
  // add_rmsnorm cases as the fused kernel.
  bool fuse_add_norm = true;
  // The verify trees (parent lists, trace/eagle_tree.hpp) of the traces' speculative
  // configurations and of the designed grid's tree points, at most one per token count: an
  // attention op with a tree mask is measured under the tree of its q_tokens (the replay's
  // programs read its mask words from it, as from the trace's meta.speculative in a replay).
  std::vector<std::vector<int>> verify_trees;
  int iters = 7;                       // timed graph replays per graph (median)
  int warmup = 2;
  double timeout_s = 30;
  // A compute chain's graph runs about this long (C copies; 2C are timed too).
  double chain_us = 300;
  // One line per phase (stderr in the CLI).
  std::function<void(const std::string&)> progress;
};

struct CalibrationMeasurements {
  std::string device;                  // e.g. "2 x NVIDIA H200"
  std::string gpu_name;                // e.g. "NVIDIA H200"
  int ranks = 1;
  std::vector<double> compute_us;      // parallel to request.compute
  std::vector<double> add_rmsnorm_us;  // parallel to request.add_rmsnorm (NaN: not measured); may be empty
  std::vector<double> allreduce_us;    // parallel to request.allreduce
  std::vector<double> allreduce_context_us;  // parallel to request.allreduce_contexts (NaN: not measured)
  // Parallel to request.allreduce_layers: µs the allreduces add to one more copy of the layer
  // (NaN: not measured).
  std::vector<double> allreduce_layer_us;
  // Parallel to request.allreduce_layers: µs per copy of the layer's baseline chain (the layer
  // without its allreduces and, fused, without the ops they absorb), the slowest rank's, the
  // difference of the two lengths per copy as above (NaN: not measured). What a fused step's
  // compute costs per layer (fit_transitions_to_stripped_layers).
  std::vector<double> allreduce_layer_baseline_us;
  // Parallel to request.transitions: per (A, B) pair in a chain of pairs minus A's and B's
  // own chain times (measured in the same program, right before).
  std::vector<double> transition_us;
  // Parallel to request.compute_layers: µs per copy of the layer in a chain of copies, the
  // slowest of its GPUs' (NaN: not measured).
  std::vector<double> compute_layer_us;
  // Parallel to request.kind_reduced_layers, as compute_layer_us (NaN: not measured).
  std::vector<double> kind_reduced_layer_us;
  double launch_gap_us = 0;            // per empty kernel in a graph chain
  std::vector<std::string> notes;      // substitutions the replay kernels made, etc.
  double seconds = 0;                  // wall time of the measurement
};

struct GpuInventory {
  std::string gpu_name;  // of device 0
  int count = 0;
};

}  // namespace eaglesim
