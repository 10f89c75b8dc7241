#include "calibration/calibration_tables.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "calibration/designed_grid.hpp"
#include "calibration/trace_shapes.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology_limits.hpp"

namespace eaglesim {

namespace {

// One table point with where it came from: exact (a size a trace uses) beats the grid.
struct Pending {
  double sum = 0;
  int count = 0;
  bool exact = false;
};

void add_point(std::map<std::int64_t, Pending>& table, std::int64_t size, double us, bool exact) {
  if (!(us > 0) || !std::isfinite(us) || size <= 0) return;
  Pending& p = table[size];
  if (exact && !p.exact) p = Pending{0, 0, true};
  else if (!exact && p.exact) return;
  p.sum += us;
  ++p.count;
}

std::vector<SizeCalPoint> finish(const std::map<std::int64_t, Pending>& table) {
  std::vector<SizeCalPoint> out;
  for (const auto& [size, p] : table) out.push_back({size, p.sum / p.count});
  return out;
}

}  // namespace

double layer_context_sum(const AllreduceLayerCase& layer, const CalibrationMeasurements& m) {
  double sum = 0;
  for (std::size_t c : layer.contexts) {
    const double us = c < m.allreduce_context_us.size() ? m.allreduce_context_us[c] : NAN;
    if (!std::isfinite(us) || us <= 0) return NAN;
    sum += us;
  }
  return sum;
}

namespace {

void check_measurements_match(const CalibrationRequest& q, const CalibrationMeasurements& m) {
  if (m.compute_us.size() != q.compute.size() || m.allreduce_us.size() != q.allreduce.size() ||
      (!m.transition_us.empty() && m.transition_us.size() != q.transitions.size()) ||
      (!m.allreduce_context_us.empty() && m.allreduce_context_us.size() != q.allreduce_contexts.size()) ||
      (!m.allreduce_layer_us.empty() && m.allreduce_layer_us.size() != q.allreduce_layers.size()) ||
      (!m.compute_layer_us.empty() && m.compute_layer_us.size() != q.compute_layers.size()) ||
      (!m.kind_reduced_layer_us.empty() && m.kind_reduced_layer_us.size() != q.kind_reduced_layers.size()) ||
      (!m.add_rmsnorm_us.empty() && m.add_rmsnorm_us.size() != q.add_rmsnorm.size()))
    throw std::invalid_argument("build_calibration: measurements do not match the request");
}

// Kernel transitions: the mean per pair of shapes (token counts pooled) of what each measured
// (A, B) pair cost beyond its two ops (either sign: a pair may also overlap a little), per
// kind pair with the GEMMs' weight formats and per kind pair; the layer fits move the shape
// entries and kind_transitions_from_shapes then replaces the other two (transition_fit.hpp).
void add_transitions(Calibration& cal, const CalibrationRequest& q, const CalibrationMeasurements& m) {
  std::map<std::string, std::pair<double, int>> transitions;
  for (std::size_t i = 0; i < m.transition_us.size(); ++i) {
    const double us = m.transition_us[i];
    if (!std::isfinite(us)) continue;
    const auto& [a, b] = q.transitions[i];
    std::vector<std::string> keys{transition_key(a.kind, b.kind), transition_key(a, b)};
    const std::string family = transition_family_key(a, b);
    if (family != keys[0]) keys.push_back(family);  // else no GEMM side: the family is the kinds
    for (const std::string& key : keys) {
      auto& [sum, n] = transitions[key];
      sum += us;
      ++n;
    }
  }
  for (const auto& [key, acc] : transitions)
    cal.transition_us[key] = std::clamp(acc.first / acc.second, -kMaxSequenceOverheadUs, kMaxSequenceOverheadUs);
}

// Allreduces in their trace context: one entry per measured case (NaN: the strategy could
// not run it on this machine).
void add_allreduce_contexts(Calibration& cal, const CalibrationRequest& q, const CalibrationMeasurements& m) {
  for (std::size_t i = 0; i < m.allreduce_context_us.size(); ++i) {
    const double us = m.allreduce_context_us[i];
    if (std::isfinite(us))
      cal.allreduce_context_us[q.allreduce_contexts[i].key] = std::clamp(us, -kMaxSequenceOverheadUs, kMaxCalUs);
  }
}

// Scaled to the layers: every measured layer splits what its allreduces added to it over its
// allreduces in proportion to their context entries; an entry in several layers takes the mean.
void scale_allreduce_contexts_to_layers(Calibration& cal, const CalibrationRequest& q,
                                        const CalibrationMeasurements& m) {
  std::map<std::size_t, std::pair<double, int>> layer_scaled;  // context index -> (sum, count)
  for (std::size_t l = 0; l < m.allreduce_layer_us.size(); ++l) {
    const double added = m.allreduce_layer_us[l];
    const AllreduceLayerCase& layer = q.allreduce_layers[l];
    const double sum = layer_context_sum(layer, m);
    if (!std::isfinite(added) || !(sum > 0)) continue;
    for (std::size_t c : layer.contexts) {
      auto& [acc, n] = layer_scaled[c];
      acc += m.allreduce_context_us[c] * added / sum;
      ++n;
    }
  }
  for (const auto& [c, acc] : layer_scaled)
    cal.allreduce_context_us[q.allreduce_contexts[c].key] =
        std::clamp(acc.first / acc.second, -kMaxSequenceOverheadUs, kMaxCalUs);
}

// The single-op tables while their points come in, by table key then size.
struct PendingTables {
  std::map<std::tuple<std::int64_t, std::int64_t, int>, std::map<std::int64_t, Pending>> gemm;
  std::map<std::string, std::map<std::int64_t, Pending>> attention, elementwise, allreduce;
};

void add_compute_point(PendingTables& t, const Op& op, double us, const TraceShapes& s) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head:
      add_point(t.gemm[{op.n, op.k, static_cast<int>(op.dtype)}], op.m, us, s.gemm_m.count(op.m) > 0);
      break;
    case OpKind::attention: {
      // The designed grid's batches (ragged KV, trees) are for the fit only: a table of one
      // layout by KV positions holds one request's points.
      if (op.name == kGridBatchAttentionName) break;
      const std::string key = attention_calibration_key_q(op);
      auto used = s.attention.find(key);
      add_point(t.attention[key], op.kv_len, us, used != s.attention.end() && used->second.kv.count(op.kv_len));
      break;
    }
    case OpKind::other:
      if (op.us) add_point(t.elementwise["other"], std::llround(*op.us * 1000.0), us, false);
      break;
    default:
      if (is_elementwise(op.kind)) {
        const std::int64_t elements = op.tokens * elementwise_table_width(op);
        // Exact: this very (tokens, hidden) occurs in a trace, not merely its element count.
        auto used = s.elementwise.find({static_cast<int>(op.kind), elementwise_table_width(op)});
        add_point(t.elementwise[to_string(op.kind)], elements, us,
                  used != s.elementwise.end() && used->second.tokens.count(op.tokens) > 0);
      }
      break;
  }
}

void add_single_op_points(PendingTables& t, const CalibrationRequest& q, const CalibrationMeasurements& m,
                          const TraceShapes& s) {
  for (std::size_t i = 0; i < q.compute.size(); ++i) add_compute_point(t, q.compute[i], m.compute_us[i], s);
  // The fused add + RMSNorm kernel, by the rows' tokens x hidden; exact where a trace has a
  // residual add + RMSNorm pair of those very rows.
  for (std::size_t i = 0; i < m.add_rmsnorm_us.size(); ++i) {
    const Op& op = q.add_rmsnorm[i];
    auto used = s.add_rmsnorm.find(op.hidden);
    add_point(t.elementwise[kAddRmsnormTable], op.tokens * op.hidden, m.add_rmsnorm_us[i],
              used != s.add_rmsnorm.end() && used->second.tokens.count(op.tokens) > 0);
  }
  std::set<std::int64_t> exact_ar;
  for (const auto& [b, dt] : s.allreduce) exact_ar.insert(b);
  for (std::size_t i = 0; i < q.allreduce.size(); ++i)
    add_point(t.allreduce[q.allreduce[i].strategy], q.allreduce[i].bytes, m.allreduce_us[i],
              exact_ar.count(q.allreduce[i].bytes) > 0);
}

void finish_tables(Calibration& cal, const PendingTables& t) {
  for (const auto& [key, table] : t.gemm)
    for (const SizeCalPoint& p : finish(table))
      cal.gemm.push_back({p.size, std::get<0>(key), std::get<1>(key), static_cast<DType>(std::get<2>(key)), p.us});
  for (const auto& [key, table] : t.attention)
    if (!table.empty()) cal.attention[key] = finish(table);
  for (const auto& [key, table] : t.elementwise)
    if (!table.empty()) cal.elementwise[key] = finish(table);
  for (const auto& [key, table] : t.allreduce)
    if (!table.empty()) cal.allreduce[key] = finish(table);
}

std::string calibration_notes(const CalibrationRequest& q, const CalibrationMeasurements& m) {
  std::string notes = fmt::format("eaglesim calibrate on {}: per-op µs = steady-state time per op in a CUDA graph of "
                                  "back-to-back copies with rotating weights (inter-kernel gap included); allreduce = "
                                  "in-context increment over a {}x{}x{} GEMM; {:.0f} s",
                                  m.device, q.context_gemm.m, q.context_gemm.n, q.context_gemm.k, m.seconds);
  for (const auto& n : m.notes) notes += "; " + n;
  return notes;
}

}  // namespace

Calibration build_calibration(const CalibrationRequest& q, const CalibrationMeasurements& m,
                              const std::vector<Trace>& traces) {
  check_measurements_match(q, m);
  const TraceShapes s = collect_trace_shapes(traces);
  Calibration cal;
  cal.ranks = q.allreduce.empty() ? 0 : q.ranks;
  if (m.launch_gap_us > 0 && std::isfinite(m.launch_gap_us)) cal.launch_gap_us = m.launch_gap_us;
  add_transitions(cal, q, m);
  add_allreduce_contexts(cal, q, m);
  scale_allreduce_contexts_to_layers(cal, q, m);
  PendingTables tables;
  add_single_op_points(tables, q, m, s);
  finish_tables(cal, tables);
  if (cal.allreduce.empty()) cal.ranks = 0;
  cal.notes = calibration_notes(q, m);
  return cal;
}

}  // namespace eaglesim
