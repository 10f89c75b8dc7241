#include "calibration/calibration_plan.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibration/calibration_cases.hpp"
#include "calibration/trace_shapes.hpp"
#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "core/rounding.hpp"

namespace eaglesim {

namespace {

// Spin lengths of `other` ops are measured on a sqrt(2) grid: a timed kernel is the requested
// time plus a constant boundary cost, which log-log interpolation follows closely at that spacing.
constexpr double kOtherGridFactor = 1.41421356237;
constexpr double kOtherMinUs = 0.5;

std::vector<std::int64_t> merged_grid(const std::vector<std::int64_t>& grid, const std::set<std::int64_t>& extra) {
  std::set<std::int64_t> all(grid.begin(), grid.end());
  all.insert(extra.begin(), extra.end());
  return {all.begin(), all.end()};
}

}  // namespace

std::vector<std::vector<int>> verify_trees_of(const std::vector<Trace>& traces, const DesignedGrid& grid) {
  std::vector<std::vector<int>> out;
  auto add = [&](const std::vector<int>& tree) {
    if (tree.empty()) return;
    for (const auto& t : out)
      if (t.size() == tree.size()) return;
    out.push_back(tree);
  };
  for (const Trace& t : traces)
    if (t.meta.speculative && t.meta.speculative->mask == VerifyMask::tree) add(t.meta.speculative->parents);
  for (const auto& tree : grid.verify_trees) add(tree);
  return out;
}

void check_tree_masks(const CalibrationRequest& q) {
  auto check = [&](const Op& op) {
    if (op.kind != OpKind::attention || op.mask != AttentionMask::tree) return;
    for (const auto& t : q.verify_trees)
      if (static_cast<std::int64_t>(t.size()) == op.q_tokens) return;
    throw InputError(fmt::format("calibrate: attention '{}' has a tree mask over {} query tokens, but no trace's "
                                 "meta.speculative.parents (nor the designed grid) has a tree of {} tokens",
                                 op.name, op.q_tokens, op.q_tokens));
  };
  for (const Op& op : q.compute) check(op);
  for (const auto& [a, b] : q.transitions) check(a), check(b);
  for (const ComputeLayerCase& c : q.compute_layers)
    for (const Op& op : c.ops) check(op);
  for (const AllreduceLayerCase& c : q.allreduce_layers)
    for (const Op& op : c.ops) check(op);
}

const std::vector<std::int64_t>& calibration_token_grid() {
  static const std::vector<std::int64_t> grid{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  return grid;
}

namespace {

// Fewer than one rank and strategies calibrate cannot measure are input errors.
void check_plan_options(const CalibrationPlanOptions& o) {
  if (o.ranks < 1) throw SettingError(Setting::ranks, fmt::format("expected at least 1, got {}", o.ranks));
  for (const auto& s : o.strategies)
    if (!is_calibratable(s))
      throw SettingError(Setting::strategy, fmt::format("calibrate cannot measure '{}' (it measures {})", s,
                                                        fmt::join(calibratable_strategy_names(), ", ")));
}

// So are traces with nothing to measure.
void check_something_to_measure(const TraceShapes& s) {
  if (s.gemm.empty() && s.attention.empty() && s.elementwise.empty() && s.allreduce.empty())
    throw InputError("calibrate: the traces contain no GEMM, attention, elementwise or allreduce op to measure");
}

// Each compute op with the GPUs whose slowest time it takes (CalibrationRequest::compute_gpus).
void add_compute(CalibrationRequest& q, Op op, int tp, int ranks) {
  q.compute.push_back(std::move(op));
  q.compute_gpus.push_back(std::clamp(tp, 1, ranks));
}

// Every traced GEMM shape at every token count of the grid and of the traces.
void add_gemm_points(CalibrationRequest& q, const TraceShapes& s, int ranks) {
  const std::vector<std::int64_t> ms = merged_grid(calibration_token_grid(), s.gemm_m);
  for (const auto& [shape, tp] : s.gemm)
    for (std::int64_t m : ms) {
      const auto& [n, k, dt] = shape;
      Op g;
      g.kind = OpKind::gemm;
      g.name = "calibrate_gemm";
      g.m = m, g.n = n, g.k = k, g.dtype = static_cast<DType>(dt);
      add_compute(q, g, tp, ranks);
    }
}

// Every traced attention layout at its traced KV lengths and a power-of-2 KV grid up to twice the longest.
void add_attention_points(CalibrationRequest& q, const TraceShapes& s, const CalibrationPlanOptions& o) {
  for (const auto& [key, use] : s.attention) {
    const std::set<std::int64_t>& used = use.kv;
    std::set<std::int64_t> kvs(used.begin(), used.end());
    const std::int64_t top = 2 * *used.rbegin();
    for (std::int64_t kv = o.min_kv_len; kv <= top; kv *= 2) kvs.insert(kv);
    kvs.insert(top);
    for (std::int64_t kv : kvs) {
      Op a = use.tmpl;
      a.name = "calibrate_attention";
      a.layer = -1;
      a.us.reset();
      a.kv_len = kv;
      add_compute(q, a, use.tp, o.ranks);
    }
  }
}

void add_elementwise_points(CalibrationRequest& q, const TraceShapes& s, int ranks) {
  for (const auto& [kh, use] : s.elementwise) {
    for (std::int64_t t : merged_grid(calibration_token_grid(), use.tokens)) {
      Op e;
      e.kind = static_cast<OpKind>(kh.first);
      e.name = "calibrate_" + std::string(to_string(e.kind));
      e.tokens = t;
      e.hidden = kh.second;
      if (e.kind == OpKind::elementwise) e.operands = 1;  // the width holds the operands (elementwise_table_width)
      add_compute(q, e, use.tp, ranks);
    }
  }
}

// The designed grid: every point the traces' shapes do not already measure.
void add_designed_grid_points(CalibrationRequest& q, const CalibrationPlanOptions& o) {
  std::set<std::string> have;
  for (const Op& op : q.compute) have.insert(op_signature(op));
  for (const Op& op : o.grid.compute)
    if (have.insert(op_signature(op)).second) add_compute(q, op, o.grid_gpus, o.ranks);
}

// The fused add + RMSNorm cases: the traced rows over the token grid, then the designed grid's
// rows the traces do not already have.
void add_add_rmsnorm_points(CalibrationRequest& q, const TraceShapes& s, const CalibrationPlanOptions& o) {
  for (const auto& [hidden, use] : s.add_rmsnorm) {
    for (std::int64_t t : merged_grid(calibration_token_grid(), use.tokens)) {
      Op e;
      e.kind = OpKind::residual_add;
      e.name = "calibrate_add_rmsnorm";
      e.tokens = t;
      e.hidden = hidden;
      q.add_rmsnorm.push_back(e);
      q.add_rmsnorm_gpus.push_back(std::clamp(use.tp, 1, o.ranks));
    }
  }

  std::set<std::pair<std::int64_t, std::int64_t>> have;
  for (const Op& op : q.add_rmsnorm) have.insert({op.tokens, op.hidden});
  for (const Op& op : o.grid.add_rmsnorm)
    if (have.insert({op.tokens, op.hidden}).second) {
      q.add_rmsnorm.push_back(op);
      q.add_rmsnorm_gpus.push_back(std::clamp(o.grid_gpus, 1, o.ranks));
    }
}

// Spin kernels from kOtherMinUs up to past twice the longest traced `other` op.
void add_other_points(CalibrationRequest& q, const TraceShapes& s, int ranks) {
  if (s.other_us.empty()) return;
  const double top = 2 * *s.other_us.rbegin();
  for (double us = kOtherMinUs; us <= top * kOtherGridFactor; us *= kOtherGridFactor) {
    Op e;
    e.kind = OpKind::other;
    e.name = "calibrate_other";
    e.us = round_to(us, 3);  // whole nanoseconds: the table's size unit
    add_compute(q, e, s.other_tp, ranks);
  }
}

// The GEMM most allreduces follow in the traces (o_proj / down_proj), else the first GEMM.
Op context_gemm_of(const TraceShapes& s) {
  Op g;
  if (!s.before_allreduce.empty()) {
    auto best = std::max_element(s.before_allreduce.begin(), s.before_allreduce.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    g.kind = OpKind::gemm;
    std::tie(g.m, g.n, g.k, std::ignore) = best->first;
    g.dtype = static_cast<DType>(std::get<3>(best->first));
  } else if (s.has_gemm) {
    g = s.first_gemm;
    g.kind = OpKind::gemm;
  } else {
    g.kind = OpKind::gemm;
    g.m = 4, g.n = 4096, g.k = 4096;
  }
  g.name = "calibrate_context_gemm";
  g.layer = -1;
  g.us.reset();
  return g;
}

// The cases the traces' layers give: kernel-transition pairs, compute layers and the verify trees
// their tree-mask attention runs under.
void add_layer_cases(CalibrationRequest& q, const std::vector<Trace>& traces, const CalibrationPlanOptions& o) {
  const bool fused = o.ranks > 1 && std::any_of(o.strategies.begin(), o.strategies.end(),
                                                [](const std::string& s) { return fuses_residual_norm(s); });
  q.transitions = transition_pairs(traces, fused);
  q.compute_layers = compute_layers(traces);
  for (ComputeLayerCase& c : q.compute_layers) c.gpus = std::clamp(c.gpus, 1, o.ranks);

  q.verify_trees = verify_trees_of(traces, o.grid);
  check_tree_masks(q);
}

// The hidden sizes of the rows a fused strategy reduces (4096 when the traces have none).
std::set<std::int64_t> fused_hiddens(const TraceShapes& s) {
  std::set<std::int64_t> hiddens = s.fused_hidden;
  if (hiddens.empty()) hiddens.insert(4096);
  return hiddens;
}

// The message sizes a strategy is measured at, before its message range is applied.
std::set<std::int64_t> allreduce_sizes(const std::string& strategy, const TraceShapes& s,
                                       const std::set<std::int64_t>& exact, const CalibrationPlanOptions& o) {
  std::set<std::int64_t> sizes;
  if (fuses_residual_norm(strategy)) {
    // The fused kernel needs rows: tokens x hidden at the hidden sizes the traces reduce.
    for (std::int64_t h : fused_hiddens(s))
      for (std::int64_t t : calibration_token_grid()) sizes.insert(t * h * 2);
    for (std::int64_t b : exact) sizes.insert(b);
  } else {
    for (std::int64_t b = o.min_allreduce_bytes; b <= o.max_allreduce_bytes; b *= 2) sizes.insert(b);
    sizes.insert(exact.begin(), exact.end());
  }
  return sizes;
}

// The case of `strategy` at `b` bytes; false where the strategy cannot run that size or, fused,
// no hidden size the traces reduce divides it into rows.
bool allreduce_case(const std::string& strategy, std::int64_t b, const TraceShapes& s, AllreduceCase& c) {
  if (!fits_message_range(strategy, b)) return false;
  c.strategy = strategy;
  c.bytes = b;
  c.dtype = DType::bf16;
  if (fuses_residual_norm(strategy)) {
    // Rows of a hidden size the traces use that divides the message, the largest first.
    const std::set<std::int64_t> hiddens = fused_hiddens(s);
    for (auto it = hiddens.rbegin(); it != hiddens.rend(); ++it)
      if (b % (*it * 2) == 0) { c.hidden = *it; break; }
    if (c.hidden == 0) return false;
    c.tokens = b / (c.hidden * 2);
  }
  return true;
}

// The allreduces alone (per strategy, over the size grid and the traced sizes), then in their
// trace context and in their layers.
void add_allreduce_cases(CalibrationRequest& q, const std::vector<Trace>& traces, const TraceShapes& s,
                         const CalibrationPlanOptions& o) {
  std::set<std::int64_t> exact;
  for (const auto& [b, dt] : s.allreduce) exact.insert(b);
  for (const auto& strategy : o.strategies)
    for (std::int64_t b : allreduce_sizes(strategy, s, exact, o)) {
      AllreduceCase c;
      if (allreduce_case(strategy, b, s, c)) q.allreduce.push_back(c);
    }
  q.allreduce_contexts = allreduce_contexts(traces, o.strategies);
  q.allreduce_layers = allreduce_layers(traces, o.strategies, q.allreduce_contexts);
}

}  // namespace

CalibrationRequest plan_calibration(const std::vector<Trace>& traces, const CalibrationPlanOptions& o) {
  check_plan_options(o);
  const TraceShapes s = collect_trace_shapes(traces);
  check_something_to_measure(s);

  CalibrationRequest q;
  q.ranks = o.ranks;
  add_gemm_points(q, s, o.ranks);
  add_attention_points(q, s, o);
  add_elementwise_points(q, s, o.ranks);
  add_designed_grid_points(q, o);
  add_add_rmsnorm_points(q, s, o);
  add_other_points(q, s, o.ranks);
  q.context_gemm = context_gemm_of(s);
  add_layer_cases(q, traces, o);
  if (o.ranks > 1) add_allreduce_cases(q, traces, s, o);
  return q;
}

}  // namespace eaglesim
