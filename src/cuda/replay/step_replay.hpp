#pragma once
// Replays one step of a trace on real GPUs and measures it: one thread per local GPU, every
// rank's step captured in a CUDA graph (allreduces included), warm-up then timed replays that
// all ranks start together (host barrier before each), and a separate attribution replay with
// an event between every op for the per-kind split and the per-rank timeline.
// Phases, in order, each under the collective watchdog:
//   1. eager pass with an event after every op: checks the step runs, and a stuck allreduce is
//      named exactly (rank and op);
//   2. capture of the step graph and of the attribution graph;
//   3. opts.warmup + opts.iters replays of the step graph (timed with events: the step time);
//   4. attribution replays (median per op).
#include <optional>
#include <string>
#include <vector>

#include "comm/strategy_facts.hpp"
#include "backend/backend.hpp"
#include "domain/step_result.hpp"
#include "trace/trace.hpp"

namespace eaglesim::cuda {

struct ReplayConfig {
  std::vector<int> devices;        // CUDA device of each local rank (thread)
  std::string strategy = nccl_strategy();
  RunOptions opts;
  bool mpi = false;                // one local rank; the world is MpiWorld (devices.size() == 1)
  int skip_allreduces_rank = -1;   // fault injection for tests: this global rank never joins
  bool recorded_compute = false;   // backend/recorded_compute.hpp: compute ops as their recorded durations
  // Per op of the step, the strategy its allreduce runs as (an engine strategy's paths,
  // backend/allreduce_routes.hpp); empty: `strategy` for every allreduce. Threads mode only.
  std::vector<std::string> op_strategy;
  // The trace's batch and speculative configuration (TraceMeta), which the program's tree masks,
  // tree building, acceptance and host synchronisation follow.
  int batch = 1;
  std::optional<SpeculativeConfig> speculative;
};

StepResult replay_step(const Step& step, const ReplayConfig& config);

}  // namespace eaglesim::cuda
