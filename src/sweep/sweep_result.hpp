#pragma once
// What a sweep produces: one row per combination of the grid (model x topology x weight dtype x
// layout x batch x speculative configuration x strategy x acceptance), in grid order, either priced
// or marked as unable to run with the reason; the best configuration per model, topology and
// acceptance, and per batch size with where speculation stops paying; and the verify-step
// timeline of each model's best configuration for the report's waterfall.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "domain/timeline.hpp"
#include "domain/report.hpp"
#include "sweep/parallel_layout.hpp"
#include "sweep/spec_axis.hpp"
#include "trace/spec_config.hpp"

namespace eaglesim {

// Why a combination cannot run. Listed, never dropped.
enum class UnfitKind {
  none,
  tp_exceeds_gpus,   // tp > gpu_count of the topology
  tp_sharding,       // tp does not divide the model's heads (or another sharded dimension)
  layout,            // the model cannot take the layout's EP (dense, or EP not dividing its experts)
  memory,            // weights + KV cache do not fit in one GPU at this TP
  strategy,          // the allreduce strategy cannot run here (world size, no P2P, message size)
  trace,             // the generator refuses the combination (rows per step over its limit)
  acceptance,        // a mean accepted length above 1 + min(S, D - 1) (more than a cycle can yield)
};
const char* to_string(UnfitKind k);

// The grid as run (names resolved), echoed into every output so results are self-describing.
struct SweepAxes {
  std::vector<std::string> models;        // model names (config file stems)
  std::vector<std::string> draft_models;  // per model: the EAGLE-3 head's or MTP layer's name, "" for none
  std::vector<std::string> topologies;    // topology names
  std::vector<DType> weight_dtypes;
  std::vector<ParallelLayout> layouts;
  std::vector<SkippedLayout> skipped_layouts;  // combinations of --tp/--ep/--dp-attention that are not layouts
  std::string a2a;                            // the all-to-all strategy of DP-attention layouts
  std::vector<int> batches;                   // concurrent requests per step
  std::vector<SpecConfig> spec_configs;       // (num_steps, eagle_topk, num_draft_tokens), SGLang-valid
  std::vector<SkippedSpecConfig> skipped_configs;  // combinations of the lists SGLang would not run
  std::vector<int> draft_tokens;              // D - 1 of each configuration, distinct, ascending
  // Rates and lengths as given; an --accept-probs entry is a length whose source carries the
  // per-rank probabilities (short_acceptance shows them).
  std::vector<Acceptance> acceptances;
  std::vector<std::string> strategies;
  std::string acceptance_table;  // --acceptance FILE ("" when none): consulted per configuration and batch
  bool engine_cycle = false;     // traces carry the engine's whole cycle (gen --engine-cycle)
  std::int64_t kv_len = 4096;
  double gpu_mem_util = 0.9;
  bool fused_add_norm = true;  // residual_add + rmsnorm ran as one kernel
  bool allow_lossy = false;    // lossy strategies may be a best configuration (--allow-lossy)

  std::size_t combination_count() const;
  // How model m drafts, in words for headers and verdicts: "MTP" (its own multi-token-prediction
  // layer) or "EAGLE-3" (a head, or none given: the verify cycle is EAGLE's either way).
  std::string drafting(std::size_t m) const;
  // The sweep's: the models' common word, "speculation" when they differ.
  std::string drafting() const;
};

struct SweepRow : CycleMetrics {
  std::size_t index = 0;  // position in the grid (rows are sorted by it)
  std::string model;
  std::string draft_model;  // "" when the trace has no draft step
  std::string topology;
  std::string gpu;
  int gpu_count = 0;
  DType weight_dtype = DType::bf16;
  int tp = 1;
  int ep = 1;                 // expert-parallel groups (1: TP-MoE)
  bool dp_attention = false;  // data-parallel attention, the MoE by all-to-all
  SpecConfig spec;       // the speculative configuration
  int draft_tokens = 1;  // draft tokens verified per request, D - 1 (N of a chain)
  Acceptance acceptance;  // the acceptance axis entry
  // Which input gave E (AcceptanceSource::Kind) and its one-line description, an index into
  // SweepResults::acceptance_sources; -1 when the row was not priced.
  int accept_source = -1;
  std::string strategy;

  UnfitKind unfit = UnfitKind::none;
  std::string reason;  // why it cannot run (unfit != none)
  bool ok() const { return unfit == UnfitKind::none; }

  // Memory per GPU at this TP (known whenever the model can be sharded at this TP).
  double mem_need_gb = 0;
  double mem_usable_gb = 0;

  // Priced (ok rows only): the cycle's metrics (CycleMetrics, the same as a run's), with the
  // verify step split as verify_split() does: verify_compute_us (matmuls and attention) +
  // comm_us (allreduces, including waiting for the slowest rank) + verify_other_us = verify_us.
  // speedup_vs_decode is against plain decoding at the same TP, strategy and batch; `batch` and
  // `gpus` (= TP) are CycleMetrics'.
  double verify_compute_us = 0;
  double verify_other_us = 0;
};

// Best configuration of one (model, topology, acceptance): the ok row with the highest tok/s.
struct SweepBest {
  std::string model;
  std::string topology;
  Acceptance acceptance;
  std::optional<std::size_t> row;         // index into SweepResults::rows; none if nothing fits
  std::optional<std::size_t> plain_row;   // the row whose plain decoding is fastest here
  // When `row` takes E from the acceptance model: the fastest row whose E is measured, if any.
  std::optional<std::size_t> measured_row;
  double best_plain_tokens_per_s = 0;     // the fastest plain decoding over TP/strategy/dtype
  double speedup_vs_best_plain = 0;       // row's tok/s / best_plain_tokens_per_s
};

// The best configuration of one (model, topology, acceptance) at one batch size: the deployable
// row with the highest total tok/s, against the fastest plain decoding at that batch (over TP,
// dtype and strategy).
struct SweepBatchBest {
  std::size_t model = 0, topology = 0, acceptance = 0;  // axis positions
  int batch = 1;
  std::optional<std::size_t> row;        // none: nothing runs at this batch
  std::optional<std::size_t> plain_row;  // the row whose plain decoding is fastest at this batch
  double plain_total_tokens_per_s = 0;
  double speedup_vs_plain = 0;           // row's total tok/s / plain_total_tokens_per_s
  bool pays() const { return row && plain_row && speedup_vs_plain > 1.0; }
};

// One parallel layout's fastest speculative row and plain decoding at one batch (per model,
// topology and acceptance): the layouts side by side (sweep/layout_best.hpp).
struct SweepLayoutBest {
  std::size_t model = 0, topology = 0, acceptance = 0, layout = 0;  // axis positions
  int batch = 1;
  std::optional<std::size_t> row;        // the fastest speculative row; none: nothing of it runs
  std::optional<std::size_t> plain_row;  // the row whose plain decoding is fastest in this layout
  double total_tokens_per_s = 0;         // the row's
  double plain_total_tokens_per_s = 0;   // the plain row's decoding
};

// Where speculation stops paying for one (model, topology, acceptance): the smallest batch
// swept at which no configuration beats plain decoding; none when it pays at every batch that
// runs (or nothing runs).
struct SweepPayLimit {
  std::size_t model = 0, topology = 0, acceptance = 0;
  std::optional<int> stops_at_batch;
  int batches_run = 0;  // batches at which something runs with a plain baseline
};

// One verify step per rank of a model's best configuration (the report's waterfall).
struct SweepWaterfall {
  std::string model;
  std::size_t row = 0;
  Timeline timeline;
};

// What cannot run, grouped by reason in order of first appearance, with what each group covers.
struct SweepUnfitGroup {
  std::string reason;
  std::size_t count = 0;
  std::set<std::string> models, topologies, dtypes, strategies;
  std::set<int> tps;
};

// Counted over every combination as the rows are built, whether or not they are kept.
struct SweepCounts {
  std::size_t combinations = 0;
  std::size_t ok = 0;
  std::map<std::string, std::size_t> by_status;  // unfit rows per UnfitKind name
  std::vector<SweepUnfitGroup> unfit;
};

struct SweepResults {
  SweepAxes axes;
  // Every combination, in grid order, when kept (SweepRequest::keep_rows); otherwise empty and
  // `picked_rows` holds the rows the best-configuration picks and waterfalls point at.
  std::vector<SweepRow> rows;
  std::map<std::size_t, SweepRow> picked_rows;
  bool rows_kept = true;
  SweepCounts counts;
  // The row at a grid index: rows[i], or a picked row when rows are not kept.
  const SweepRow& row(std::size_t i) const { return rows_kept ? rows.at(i) : picked_rows.at(i); }
  std::vector<SweepBest> best;         // per model, topology, acceptance, in grid order
  std::vector<SweepBatchBest> batch_best;  // per model, topology, acceptance, batch, in that order
  std::vector<SweepPayLimit> pay_limits;   // per model, topology, acceptance
  // Per model, topology, acceptance, batch, layout; only when some layout has EP or DP attention.
  std::vector<SweepLayoutBest> layout_best;
  std::vector<Acceptance> acceptance_sources;  // resolved acceptances the rows point at (with source)
  std::vector<SweepWaterfall> waterfalls;
  std::vector<std::string> notes;      // e.g. which draft head was paired with which model
  std::size_t traces_generated = 0;
  std::size_t steps_priced = 0;        // distinct (step, topology, strategy) simulations
  double elapsed_s = 0;                // wall time of the sweep (not in JSON/CSV: keeps them reproducible)
  int threads = 1;
};

// Whether a priced row's E is a measurement rather than the acceptance model's.
inline bool row_e_measured(const SweepResults& res, const SweepRow& r) {
  return r.accept_source >= 0 && res.acceptance_sources[static_cast<std::size_t>(r.accept_source)].measured();
}

}  // namespace eaglesim
