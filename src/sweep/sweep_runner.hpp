#pragma once
// The capacity-planning sweep: every combination of model x topology x weight dtype x TP x draft
// tokens x strategy x acceptance, priced by the simulator. The work is arranged so that nothing
// is computed twice:
//   1. feasibility per (model, topology, dtype, TP): GPU count, sharding, memory (cheap, serial);
//   2. one generated trace per (model, dtype, TP, draft tokens) that some topology can run;
//   3. one simulation per distinct step x topology x strategy (draft and decode steps do not
//      depend on the draft-token count, so they are shared across it);
//   4. acceptance only enters the speculative arithmetic, applied per row.
// Phases 2 and 3 run on a thread pool; every result lands in a slot chosen by its index, so the
// output is identical for any thread count.
#include <optional>
#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "domain/report.hpp"
#include "sweep/sweep_result.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

struct SweepModel {
  ModelConfig target;
  std::optional<ModelConfig> draft;  // the EAGLE-3 head; none: the trace has no draft step
};

struct SweepRequest {
  std::vector<SweepModel> models;
  std::vector<Topology> topologies;
  std::vector<DType> weight_dtypes{DType::bf16};
  std::vector<int> tps{1};
  std::vector<int> draft_tokens{3};
  std::vector<Acceptance> acceptances{Acceptance{}};
  std::vector<std::string> strategies;
  std::int64_t kv_len = 4096;
  double gpu_mem_util = 0.9;
  bool fuse_add_norm = true;  // residual_add + rmsnorm as one kernel (RunOptions::fuse_add_norm)
  int threads = 0;           // 0: all cores
  bool progress = false;     // draw a progress bar on stderr (only if it is a terminal)
  bool waterfalls = true;    // re-simulate each model's best configuration with a timeline
};

// InputError on an empty axis or an unknown strategy. Unfit combinations become rows with a
// reason, not errors.
SweepResults run_sweep(const SweepRequest& request);

}  // namespace eaglesim
