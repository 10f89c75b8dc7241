#pragma once
// The capacity-planning sweep: every combination of model x topology x weight dtype x layout x batch
// x speculative configuration x strategy x acceptance, priced by the simulator. The work is
// arranged so that nothing is computed twice:
//   1. feasibility per (model, topology, dtype, layout, batch): GPU count, sharding, memory of the
//      batch's KV cache (cheap, serial);
//   2. one generated trace per (model, dtype, layout, batch, configuration) that some topology can
//      run, generated in chunks and reduced to its distinct steps at once, so memory holds
//      steps, not traces;
//   3. one simulation per distinct step x topology x strategy (steps are told apart by content:
//      the verify step depends on the configuration only through its draft-token count and
//      mask kind, the draft forward only through topk, decode on neither);
//   4. acceptance, resolved once per (configuration, acceptance, batch), only enters the
//      speculative arithmetic, applied per row.
// Phases 2 and 3 run on a thread pool; every result lands in a slot chosen by its index, so the
// output is identical for any thread count.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "domain/acceptance_table.hpp"
#include "domain/report.hpp"
#include "domain/tree_acceptance.hpp"
#include "model/model_config.hpp"
#include "sweep/parallel_layout.hpp"
#include "sweep/spec_axis.hpp"
#include "sweep/sweep_result.hpp"
#include "topology/topology.hpp"
#include "trace/spec_config.hpp"

namespace eaglesim {

struct SweepModel {
  ModelConfig target;
  std::optional<ModelConfig> draft;  // the EAGLE-3 head; none: the trace has no draft step (unless mtp)
  bool draft_derived = false;        // the head is model/default_eagle3_head.hpp's, not a published one
  bool mtp = false;                  // the draft is the target's own MTP layer (gen --draft mtp); no head
};

struct SweepRequest {
  std::vector<SweepModel> models;
  std::vector<Topology> topologies;
  std::vector<DType> weight_dtypes{DType::bf16};
  // The parallel layouts (TP, EP, data-parallel attention) and the list combinations that were not
  // layouts, echoed into the results.
  std::vector<ParallelLayout> layouts{ParallelLayout{}};
  std::vector<SkippedLayout> skipped_layouts;
  std::string a2a = "auto";  // the all-to-all strategy of layouts with DP attention (run --a2a)
  std::vector<int> batches{1};
  // The configurations: the chains of `draft_tokens` (N: steps N, topk 1, draft tokens N + 1)
  // together with `spec_configs` (SGLang-valid, build_spec_axis); at least one of them.
  std::vector<int> draft_tokens{3};
  std::vector<SpecConfig> spec_configs;
  std::vector<SkippedSpecConfig> skipped_configs;  // echoed into the results
  std::vector<Acceptance> acceptances{Acceptance{}};  // rates a and lengths E
  std::optional<RankAcceptance> accept_probs;         // --accept-probs: one more acceptance entry
  std::optional<AcceptanceTable> acceptance_table;    // --acceptance FILE, consulted per configuration and batch
  std::vector<std::string> strategies;
  std::int64_t kv_len = 4096;  // every request's
  double gpu_mem_util = 0.9;
  bool fuse_add_norm = true;  // residual_add + rmsnorm as one kernel (RunOptions::fuse_add_norm)
  bool engine_cycle = false;  // the engine's whole cycle (GenOptions::engine_cycle)
  int threads = 0;           // 0: all cores
  bool progress = false;     // draw a progress bar on stderr (only if it is a terminal)
  bool waterfalls = true;    // re-simulate each model's best configuration with a timeline
  // false: rows are handed to row_sink and counted, not kept (SweepResults::picked_rows holds the
  // ones the picks point at), so memory does not grow with the grid.
  bool keep_rows = true;
  bool allow_lossy = false;  // a lossy strategy (quant) may be a best configuration
  std::vector<std::string> notes;  // the caller's, first among the results' notes
  // Called with every row in grid order as it is built, on the calling thread (a streamed CSV).
  std::function<void(const SweepResults&, const SweepRow&)> row_sink;
};

// InputError on an empty axis or an unknown strategy. Unfit combinations become rows with a
// reason, not errors.
SweepResults run_sweep(const SweepRequest& request);

}  // namespace eaglesim
