#pragma once
// The report: per strategy, the verify cycle and what it implies for EAGLE-3. Built from the
// backends' StepResults by the speculative-decoding arithmetic in speculative.hpp; printed as a
// table, JSON (schema in docs/report-format.md), CSV, Chrome trace and HTML.
#include <optional>
#include <string>
#include <vector>

#include "domain/acceptance_source.hpp"
#include "domain/step_result.hpp"

namespace eaglesim {

// Acceptance as the user gave it: per-position rate `a` of a chain draft
// (E = (1 - a^(N+1)) / (1 - a)) or the mean accepted length E directly. When it was resolved
// from a measurement table or the tree acceptance model (acceptance_resolution.hpp), it is the
// length E that resolution found, and `source` says where E came from.
struct Acceptance {
  enum class Mode { rate, length };
  Acceptance() = default;
  Acceptance(Mode m, double v, std::optional<AcceptanceSource> s = std::nullopt)
      : mode(m), value(v), source(std::move(s)) {}
  Mode mode = Mode::rate;
  double value = 0.7;
  std::optional<AcceptanceSource> source;
  double tokens_per_cycle(int draft_tokens) const;
  // E is a measurement (an --acceptance entry, --accept-len), not the acceptance model's.
  bool measured() const {
    return source ? source->kind != AcceptanceSource::Kind::tree_model : mode == Mode::length;
  }
  std::string describe() const;  // e.g. "accept rate a=0.70 per position (chain)"; the source's line when resolved
  std::string describe(int draft_tokens) const;  // adds E: "..., E=2.53 for N=3"
};

struct Scenario {
  std::string trace_file;
  std::string model;
  std::string topology;      // name, or the real machine for cuda
  std::string backend;       // sim | cuda
  int tp = 1;
  int ranks = 1;             // ranks actually used (cuda --ranks K may differ from tp)
  int draft_tokens = 0;
  std::string method = "EAGLE-3";  // what drafts the tokens: EAGLE-3 (a head) or MTP (the target's own layer)
  int batch = 1;             // concurrent requests of the trace (version 2 meta.batch; 1 for version 1)
  Acceptance acceptance;
  bool fused_add_norm = true;  // residual_add + rmsnorm ran as one kernel (RunOptions::fuse_add_norm)
  bool allow_lossy = false;    // a lossy strategy (fp8 on the wire) may be "best" (--allow-lossy)
  // The plain decoding every speed-up is against (ranking.hpp, rebase_on_deployable_plain): the
  // fastest a user could deploy among the run's strategies; empty: each result's own.
  std::string plain_baseline;
  double plain_baseline_tokens_per_s = 0;  // per request
  std::vector<std::string> notes;
};

// What a strategy's priced steps imply for one speculative cycle; derive_strategy_metrics
// (speculative.hpp) fills it. Shared by a run's results and the sweep's rows.
struct CycleMetrics {
  double verify_us = 0, compute_us = 0, comm_us = 0, comm_fraction = 0;
  int allreduce_count = 0;
  double allreduce_mean_us = 0;
  double draft_us = 0;        // all N draft forwards of one cycle (with a draft-extend pass: it and N - 1 forwards)
  int draft_forwards = 0;     // the draft forwards draft_us counts: N, or N - 1 beside a draft-extend pass
  double decode_us = 0;
  double cycle_us = 0;        // draft_us + verify_us
  double tokens_per_cycle = 0;
  // Throughput at the trace's batch: every request of the batch advances by tokens_per_cycle
  // per cycle, so a request sees tokens_per_s, the server batch x that, and each of its GPUs
  // (TP ranks) a share of the total. Plain decoding at the same batch is the baseline.
  int batch = 1;
  int gpus = 1;
  double tokens_per_s = 0;              // per request
  double total_tokens_per_s = 0;        // all requests of the batch
  double tokens_per_s_per_gpu = 0;      // total over the GPUs serving it
  double decode_tokens_per_s = 0;       // per request, plain decoding at the same batch
  double decode_total_tokens_per_s = 0; // all requests, plain decoding at the same batch
  double speedup_vs_decode = 0;
  std::optional<double> breakeven_accept_rate;  // per-position rate below which EAGLE-3 loses; none if unreachable
  double breakeven_accept_len = 0;              // E at break-even = cycle / decode
};

struct StrategyResult : CycleMetrics {
  std::string strategy;
  bool supported = true;
  std::string reason;  // when unsupported
  StepResult verify;
  std::optional<StepResult> draft;   // one draft-head forward
  std::optional<StepResult> draft_extend;  // the draft-extend pass (version-2 traces of the engine's cycle)
  std::optional<StepResult> decode;  // one plain decode step
  // Where the machine is known: whether SGLang or vLLM runs this strategy's path here and with
  // which flag (backend/strategy_deployment.hpp), in words; none when not known.
  std::optional<bool> deployable;
  std::string deployment;
};

// The verify step in three parts that add up to verify_us: matmuls and attention (GEMMs,
// grouped GEMMs, attention, LM head), the allreduces (including waiting for the slowest rank),
// and everything else (norms, elementwise ops, embedding, launch gaps).
struct VerifySplit {
  double matmul_attention_us = 0;
  double allreduce_us = 0;
  double other_us = 0;
};
VerifySplit verify_split(const StrategyResult& r);

struct Report {
  Scenario scenario;
  std::vector<StrategyResult> results;
};

}  // namespace eaglesim
