#include "engine/event_engine.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace {

std::vector<double> per_rank(const std::vector<double>& given, int ranks, double fill, const char* what,
                             bool positive) {
  if (given.empty()) return std::vector<double>(static_cast<std::size_t>(ranks), fill);
  if (static_cast<int>(given.size()) != ranks)
    throw InputError(fmt::format("{}: expected one value per rank ({} ranks), got {}", what, ranks, given.size()));
  for (std::size_t r = 0; r < given.size(); ++r) {
    double v = given[r];
    if (!std::isfinite(v) || (positive ? v <= 0 : v < 0))
      throw InputError(fmt::format("{}: rank {}: expected a {} number, got {}", what, r,
                                   positive ? "positive" : "non-negative", v));
  }
  return given;
}

}  // namespace

StepResult simulate_step(const Step& step, const StepPlan& plan, const EngineOptions& opts) {
  if (opts.ranks < 1) throw InputError(fmt::format("ranks: expected at least 1, got {}", opts.ranks));
  const int R = opts.ranks;
  const int S = static_cast<int>(plan.stream_names.size());
  const std::size_t n = plan.ops.size();

  std::vector<double> start = per_rank(opts.start_offset_us, R, 0.0, "rank skew (us)", false);
  const double min_start = *std::min_element(start.begin(), start.end());
  for (double& s : start) s -= min_start;
  const std::vector<double> scale = per_rank(opts.compute_scale, R, 1.0, "rank compute slowdown", true);

  std::vector<double> clock(static_cast<std::size_t>(R) * S);
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s) clock[static_cast<std::size_t>(r) * S + s] = start[r];
  std::vector<double> arrival(static_cast<std::size_t>(R));
  std::vector<double> kind_us(static_cast<std::size_t>(R) * kOpKindCount, 0.0);
  std::vector<double> comm(static_cast<std::size_t>(R), 0.0), compute(static_cast<std::size_t>(R), 0.0),
      wait(static_cast<std::size_t>(R), 0.0);
  // End time of every op on every rank, kept only when some op waits on another stream.
  std::vector<double> op_end;
  if (plan.has_dependencies) op_end.resize(n * static_cast<std::size_t>(R));

  StepResult result;
  result.step = plan.step;
  Timeline& tl = result.timeline;
  tl.step = plan.step;
  tl.ranks = R;
  tl.stream_names = plan.stream_names;
  if (opts.want_timeline) tl.spans.reserve(n * static_cast<std::size_t>(R));

  // Span text is the same on every rank: built once per op, copied per rank.
  Span proto;
  auto prepare_span = [&](const PricedOp& p) {
    const Op& op = step.ops[static_cast<std::size_t>(p.op_index)];
    proto.stream = p.stream;
    proto.op_index = p.op_index;
    proto.kind = p.kind;
    proto.name = op.name;
    proto.layer = p.layer;
    proto.detail = p.detail >= 0 ? plan.details[static_cast<std::size_t>(p.detail)] : std::string();
    if (p.absorbed > 0 && p.collective) {
      proto.detail += " +";
      for (int a = 1; a <= p.absorbed; ++a)
        proto.detail += std::string(" ") + to_string(step.ops[static_cast<std::size_t>(p.op_index + a)].kind);
    } else if (p.absorbed > 0) {
      // A fused compute kernel (residual_add + rmsnorm): named after every op it runs.
      proto.detail += ", fused:";
      for (int a = 0; a <= p.absorbed; ++a) {
        const Op& part = step.ops[static_cast<std::size_t>(p.op_index + a)];
        if (a > 0) proto.name += "+" + part.name;
        proto.detail += std::string(a > 0 ? " + " : " ") + to_string(part.kind);
      }
    }
    proto.shape = op.shape_string();
    proto.bytes = op.is_comm() ? op.bytes : 0;
  };
  auto add_span = [&](int r, double begin, double end, double waited) {
    tl.spans.push_back(proto);
    Span& sp = tl.spans.back();
    sp.rank = r;
    sp.start_us = begin;
    sp.end_us = end;
    sp.wait_us = waited;
  };

  int collectives = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const PricedOp& p = plan.ops[i];
    const int k = static_cast<int>(p.kind);
    if (opts.want_timeline) prepare_span(p);
    if (!p.collective) {
      for (int r = 0; r < R; ++r) {
        double& c = clock[static_cast<std::size_t>(r) * S + p.stream];
        double begin = c;
        if (p.depends_on >= 0) begin = std::max(begin, op_end[static_cast<std::size_t>(p.depends_on) * R + r]);
        const double dur = p.us * scale[static_cast<std::size_t>(r)];
        c = begin + dur;
        kind_us[static_cast<std::size_t>(r) * kOpKindCount + k] += dur;
        compute[static_cast<std::size_t>(r)] += dur;
        if (plan.has_dependencies) op_end[i * R + r] = c;
        if (opts.want_timeline) add_span(r, begin, c, 0.0);
      }
      continue;
    }
    ++collectives;
    double latest = 0;
    for (int r = 0; r < R; ++r) {
      double a = clock[static_cast<std::size_t>(r) * S + p.stream];
      if (p.depends_on >= 0) a = std::max(a, op_end[static_cast<std::size_t>(p.depends_on) * R + r]);
      arrival[static_cast<std::size_t>(r)] = a;
      latest = std::max(latest, a);
    }
    const double finish = latest + p.us;
    for (int r = 0; r < R; ++r) {
      const double a = arrival[static_cast<std::size_t>(r)];
      const double dur = finish - a;
      clock[static_cast<std::size_t>(r) * S + p.stream] = finish;
      kind_us[static_cast<std::size_t>(r) * kOpKindCount + k] += dur;
      comm[static_cast<std::size_t>(r)] += dur;
      wait[static_cast<std::size_t>(r)] += latest - a;
      if (plan.has_dependencies) op_end[i * R + r] = finish;
      if (opts.want_timeline) add_span(r, a, finish, latest - a);
    }
  }

  // The critical rank is the one that finishes last; among ties (every rank leaves the last
  // allreduce together) the one that waited most, whose comm time then shows the skew as a
  // profiler on that rank would.
  int crit = 0;
  double crit_finish = -1;
  std::vector<double> finish(static_cast<std::size_t>(R));
  for (int r = 0; r < R; ++r) {
    double f = start[static_cast<std::size_t>(r)];
    for (int s = 0; s < S; ++s) f = std::max(f, clock[static_cast<std::size_t>(r) * S + s]);
    finish[static_cast<std::size_t>(r)] = f;
    if (f > crit_finish || (f == crit_finish && wait[static_cast<std::size_t>(r)] > wait[static_cast<std::size_t>(crit)])) {
      crit = r;
      crit_finish = f;
    }
  }

  result.step_us = crit_finish;
  result.step_us_min = result.step_us_max = result.step_us;
  result.samples = 1;
  for (int kk = 0; kk < kOpKindCount; ++kk)
    result.kind_us[static_cast<std::size_t>(kk)] = kind_us[static_cast<std::size_t>(crit) * kOpKindCount + kk];
  result.comm_us = comm[static_cast<std::size_t>(crit)];
  result.compute_us = compute[static_cast<std::size_t>(crit)];
  result.allreduce_count = collectives;
  result.allreduce_mean_us = collectives > 0 ? result.comm_us / collectives : 0.0;
  result.critical_rank = crit;
  result.rank_wait_us = wait;
  result.notes = plan.notes;
  result.dispatch = plan.dispatch;
  const double max_start = *std::max_element(start.begin(), start.end());
  if (max_start > 0)
    result.notes.push_back(fmt::format(
        "{}: ranks start up to {:.1f} us apart; rank {} (critical) started at {:.1f} us and waited {:.1f} us in allreduces",
        plan.step, max_start, crit, start[static_cast<std::size_t>(crit)], wait[static_cast<std::size_t>(crit)]));
  const double max_scale = *std::max_element(scale.begin(), scale.end());
  const double min_scale = *std::min_element(scale.begin(), scale.end());
  if (max_scale != 1.0 || min_scale != 1.0)
    result.notes.push_back(fmt::format("{}: per-rank compute slowdown {:.3g}..{:.3g}; rank {} waited {:.1f} us in allreduces",
                                       plan.step, min_scale, max_scale, crit, wait[static_cast<std::size_t>(crit)]));
  return result;
}

}  // namespace eaglesim
