#pragma once
// What a backend returns for one step (verify, draft or decode) under one strategy: the step
// time and where it went. The simulator fills it from its virtual clock, the CUDA backend from
// CUDA-graph replays (step time) and a separate attribution pass (per-kind split).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "domain/kind_marginals.hpp"
#include "domain/timeline.hpp"
#include "trace/op.hpp"
#include "trace/op_traffic.hpp"

namespace eaglesim {

// What the GPU a step was measured on can do at best, measured there (the CUDA backend): the
// floors of the roofline block. The simulator leaves them out: its topology's figures are
// datasheet-like, and a roofline against them would only restate the cost model.
struct DeviceCeilings {
  std::string device;        // e.g. "NVIDIA H200"
  double read_gbps = 0;      // HBM streaming-read bandwidth, GB/s (1e9 B/s)
  double bf16_tflops = 0;    // dense bf16 tensor-core GEMM throughput, TFLOP/s
};

// How an engine strategy ran a step's allreduces: one group per distinct size, fusion and path,
// in step order of first use (the sim backend and the CUDA backend fill it for sglang / vllm).
struct DispatchGroup {
  std::int64_t bytes = 0;
  bool fuses = false;        // absorbed the residual add + RMSNorm after it
  std::string path;          // the engine's path, e.g. "custom allreduce one-shot"
  std::string model;         // the eaglesim strategy that ran it: nccl, oneshot, twoshot or fused
  std::string reason;        // the engine's rules that led there, with their source files
  int count = 0;             // allreduces of the step in this group
  double us = 0;             // one allreduce's cost (sim: the model's; cuda: not measured per call, 0)
  std::vector<int> ops;      // their op indices in the step
};

struct StepResult {
  std::string step;
  double step_us = 0;               // the step's time (median for measurements)
  double step_us_min = 0;           // spread over repeats (measurements; = step_us for the simulator)
  double step_us_max = 0;
  int samples = 1;
  std::array<double, kOpKindCount> kind_us{};  // time per op kind on the critical rank
  // Per compute kind, only when asked for (RunOptions::kind_marginals): the step minus the same
  // step without that kind's ops (domain/kind_marginals.hpp); empty for kinds the step lacks.
  KindMarginals kind_marginal_us{};
  double comm_us = 0;               // allreduces (incl. waiting for the slowest rank)
  double compute_us = 0;            // everything else
  int allreduce_count = 0;
  double allreduce_mean_us = 0;
  int critical_rank = 0;            // the rank the split above is taken from (finishes last)
  std::vector<double> rank_wait_us; // per rank: time spent waiting in collectives for the last arrival
  Timeline timeline;
  std::vector<std::string> notes;   // extrapolations, fallbacks, rank substitutions
  std::vector<DispatchGroup> dispatch;  // engine strategies only: which path each allreduce took and why
  // Roofline inputs, only where the backend measured its device: the ceilings, and per op kind
  // the fewest bytes and the FLOPs of the ops that kind's time covers (evaluate fills these);
  // the same per op index (the kind each op's time is reported under and its kernel's traffic),
  // which with the timeline's spans splits each kind by op size (domain/roofline.hpp). Empty
  // `unit_traffic` (results made by hand): no split.
  std::optional<DeviceCeilings> ceilings;
  KindTraffic kind_traffic{};
  std::vector<UnitTraffic> unit_traffic;
};

}  // namespace eaglesim
