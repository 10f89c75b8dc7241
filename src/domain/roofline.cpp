#include "domain/roofline.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

#include "domain/kind_attribution.hpp"

namespace eaglesim {

namespace {

double floor_us(double bytes, double flops, const DeviceCeilings& c) {
  const double memory_us = c.read_gbps > 0 ? bytes / (c.read_gbps * 1e3) : 0.0;  // B/µs = 1e6 B/s
  const double compute_us = c.bf16_tflops > 0 ? flops / (c.bf16_tflops * 1e6) : 0.0;
  return std::max(memory_us, compute_us);
}

// Per op index, the op's time on the critical rank: its spans' durations there, fitted to the
// step as the per-kind split is (an op without a span there, absorbed, gets 0). Empty when that
// rank has no span.
std::vector<double> critical_op_us(const StepResult& step, std::size_t ops) {
  std::vector<double> span_us(ops, 0.0);
  std::vector<bool> no_span(ops, true);
  bool any = false;
  for (const Span& s : step.timeline.spans) {
    if (s.rank != step.critical_rank || s.op_index < 0 || static_cast<std::size_t>(s.op_index) >= ops) continue;
    const auto i = static_cast<std::size_t>(s.op_index);
    span_us[i] += s.end_us - s.start_us;
    no_span[i] = false;
    any = true;
  }
  if (!any) return {};
  return fit_spans_to_step(std::move(span_us), no_span, step.step_us);
}

// Per kind, its large and small ops (us: their op time on the critical rank, to be scaled).
struct SizeSplit {
  std::array<RooflineOps, kOpKindCount> large{}, small{};
};

SizeSplit split_by_size(const StepResult& step, const DeviceCeilings& c) {
  SizeSplit split;
  const std::vector<double> op_us = critical_op_us(step, step.unit_traffic.size());
  if (op_us.empty()) return split;
  for (std::size_t i = 0; i < step.unit_traffic.size(); ++i) {
    const UnitTraffic& u = step.unit_traffic[i];
    if (!u.counted) continue;
    const auto k = static_cast<std::size_t>(u.kind);
    RooflineOps& side = u.traffic.bytes >= kRooflineLargeOpBytes ? split.large[k] : split.small[k];
    ++side.ops;
    side.us += op_us[i];
    side.bytes += u.traffic.bytes;
    side.flops += u.traffic.flops;
    side.floor_us += floor_us(u.traffic.bytes, u.traffic.flops, c);
  }
  return split;
}

// `ops` with its time the kind's `kind_us` in proportion to its share `total` of the kind's op time.
RooflineOps scaled(RooflineOps ops, double kind_us, double total) {
  ops.us = kind_us * ops.us / total;
  if (ops.us > 0) ops.pct_of_floor = 100.0 * ops.floor_us / ops.us;
  if (ops.ops > 0) ops.excess_us_per_op = (ops.us - ops.floor_us) / ops.ops;
  return ops;
}

}  // namespace

std::vector<RooflineRow> roofline_rows(const StepResult& step) {
  std::vector<RooflineRow> rows;
  if (!step.ceilings || step.step_us <= 0) return rows;
  const DeviceCeilings& c = *step.ceilings;
  const SizeSplit split = split_by_size(step, c);
  for (int k = 0; k < kOpKindCount; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    const double us = step.kind_us[kk];
    const OpTraffic& t = step.kind_traffic[kk];
    if (us <= 0 || us < kRooflineMinShare * step.step_us || (t.bytes <= 0 && t.flops <= 0)) continue;
    RooflineRow r;
    r.kind = static_cast<OpKind>(k);
    r.us = us;
    r.bytes = t.bytes;
    r.flops = t.flops;
    r.gbps = t.bytes / (us * 1e3);     // B/µs = 1e6 B/s, GB/s = 1e9 B/s
    r.tflops = t.flops / (us * 1e6);   // FLOP/µs = 1e6 FLOP/s, TFLOP/s = 1e12 FLOP/s
    r.floor_us = floor_us(t.bytes, t.flops, c);
    r.pct_of_floor = 100.0 * r.floor_us / us;
    const double op_time = split.large[kk].us + split.small[kk].us;
    if (op_time > 0) {
      r.by_size = true;
      r.large = scaled(split.large[kk], us, op_time);
      r.small = scaled(split.small[kk], us, op_time);
    }
    rows.push_back(r);
  }
  return rows;
}

}  // namespace eaglesim
