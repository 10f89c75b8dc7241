#include "engine/event_engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

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

// Ranks that start at the same offset and run compute at the same speed walk identical clocks:
// every op adds the same numbers to each, and a collective hands all of them the same finish. The
// loop walks one lane per distinct (start, slowdown) pair, so an unskewed step walks one, and
// expands lanes to ranks at the end; every rank's figures are those it would compute alone.
struct RankLanes {
  std::vector<int> lane_of_rank;  // per rank
  std::vector<double> start;      // per lane
  std::vector<double> scale;      // per lane
};

// Bit equality: -0.0 and 0.0 are different starts here, as they could print differently.
bool same_bits(double a, double b) {
  std::uint64_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

RankLanes rank_lanes(const std::vector<double>& start, const std::vector<double>& scale) {
  RankLanes l;
  l.lane_of_rank.resize(start.size());
  for (std::size_t r = 0; r < start.size(); ++r) {
    std::size_t lane = 0;
    while (lane < l.start.size() && !(same_bits(l.start[lane], start[r]) && same_bits(l.scale[lane], scale[r]))) ++lane;
    if (lane == l.start.size()) {
      l.start.push_back(start[r]);
      l.scale.push_back(scale[r]);
    }
    l.lane_of_rank[r] = static_cast<int>(lane);
  }
  return l;
}

}  // namespace

StepResult simulate_step(const Step& step, const StepPlan& plan, const EngineOptions& opts) {
  if (opts.ranks < 1) throw InputError(fmt::format("ranks: expected at least 1, got {}", opts.ranks));
  const int R = opts.ranks;
  const std::size_t S = plan.stream_names.size();
  const std::size_t n = plan.ops.size();

  std::vector<double> start = per_rank(opts.start_offset_us, R, 0.0, "rank skew (us)", false);
  const double min_start = *std::min_element(start.begin(), start.end());
  for (double& s : start) s -= min_start;
  const std::vector<double> scale = per_rank(opts.compute_scale, R, 1.0, "rank compute slowdown", true);
  const RankLanes lanes = rank_lanes(start, scale);
  const std::size_t L = lanes.start.size();

  // Lane-contiguous arrays (index [stream or kind or op] * L + lane), so that the per-op loops run
  // over consecutive doubles.
  std::vector<double> clock(L * S);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t l = 0; l < L; ++l) clock[s * L + l] = lanes.start[l];
  std::vector<double> arrival(L), begin(L);
  std::vector<double> kind_us(L * kOpKindCount, 0.0);
  std::vector<double> comm(L, 0.0), compute(L, 0.0), wait(L, 0.0);
  // End time of every op on every lane, kept only when some op waits on another stream.
  std::vector<double> op_end;
  if (plan.has_dependencies) op_end.resize(n * L);

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
  // One span per rank, in rank order, from its lane's begin and end.
  auto add_spans = [&](const double* begins, const double* ends, std::size_t end_stride, double latest) {
    for (int r = 0; r < R; ++r) {
      const std::size_t l = static_cast<std::size_t>(lanes.lane_of_rank[static_cast<std::size_t>(r)]);
      tl.spans.push_back(proto);
      Span& sp = tl.spans.back();
      sp.rank = r;
      sp.start_us = begins[l];
      sp.end_us = ends[l * end_stride];
      sp.wait_us = latest >= 0 ? latest - begins[l] : 0.0;
    }
  };

  const double* const lane_scale = lanes.scale.data();
  double* const compute_l = compute.data();
  double* const comm_l = comm.data();
  double* const wait_l = wait.data();
  int collectives = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const PricedOp& p = plan.ops[i];
    const std::size_t k = static_cast<std::size_t>(p.kind);
    double* const clk = clock.data() + static_cast<std::size_t>(p.stream) * L;
    double* const kind_l = kind_us.data() + k * L;
    const double* const dep_end = p.depends_on >= 0 ? op_end.data() + static_cast<std::size_t>(p.depends_on) * L : nullptr;
    if (opts.want_timeline) prepare_span(p);
    if (!p.collective) {
      const double us = p.us;
      if (dep_end || opts.want_timeline) {
        for (std::size_t l = 0; l < L; ++l) {
          const double b = dep_end ? std::max(clk[l], dep_end[l]) : clk[l];
          const double dur = us * lane_scale[l];
          begin[l] = b;
          clk[l] = b + dur;
          kind_l[l] += dur;
          compute_l[l] += dur;
        }
      } else {
        for (std::size_t l = 0; l < L; ++l) {
          const double dur = us * lane_scale[l];
          clk[l] += dur;
          kind_l[l] += dur;
          compute_l[l] += dur;
        }
      }
      if (plan.has_dependencies) std::copy(clk, clk + L, op_end.begin() + static_cast<std::ptrdiff_t>(i * L));
      if (opts.want_timeline) add_spans(begin.data(), clk, 1, -1.0);
      continue;
    }
    ++collectives;
    double latest = 0;
    for (std::size_t l = 0; l < L; ++l) {
      const double a = dep_end ? std::max(clk[l], dep_end[l]) : clk[l];
      arrival[l] = a;
      latest = std::max(latest, a);
    }
    const double finish = latest + p.us;
    for (std::size_t l = 0; l < L; ++l) {
      const double a = arrival[l];
      const double dur = finish - a;
      clk[l] = finish;
      kind_l[l] += dur;
      comm_l[l] += dur;
      wait_l[l] += latest - a;
    }
    if (plan.has_dependencies) std::fill_n(op_end.begin() + static_cast<std::ptrdiff_t>(i * L), L, finish);
    if (opts.want_timeline) add_spans(arrival.data(), &finish, 0, latest);
  }

  // The critical rank is the one that finishes last; among ties (every rank leaves the last
  // allreduce together) the one that waited most, whose comm time then shows the skew as a
  // profiler on that rank would.
  int crit = 0;
  double crit_finish = -1;
  std::vector<double> rank_wait(static_cast<std::size_t>(R));
  for (int r = 0; r < R; ++r) {
    const std::size_t l = static_cast<std::size_t>(lanes.lane_of_rank[static_cast<std::size_t>(r)]);
    double f = start[static_cast<std::size_t>(r)];
    for (std::size_t s = 0; s < S; ++s) f = std::max(f, clock[s * L + l]);
    rank_wait[static_cast<std::size_t>(r)] = wait[l];
    if (f > crit_finish || (f == crit_finish && wait[l] > rank_wait[static_cast<std::size_t>(crit)])) {
      crit = r;
      crit_finish = f;
    }
  }
  const std::size_t crit_lane = static_cast<std::size_t>(lanes.lane_of_rank[static_cast<std::size_t>(crit)]);

  result.step_us = crit_finish;
  result.step_us_min = result.step_us_max = result.step_us;
  result.samples = 1;
  for (std::size_t kk = 0; kk < static_cast<std::size_t>(kOpKindCount); ++kk)
    result.kind_us[kk] = kind_us[kk * L + crit_lane];
  result.comm_us = comm[crit_lane];
  result.compute_us = compute[crit_lane];
  result.allreduce_count = collectives;
  result.allreduce_mean_us = collectives > 0 ? result.comm_us / collectives : 0.0;
  result.critical_rank = crit;
  result.rank_wait_us = std::move(rank_wait);
  result.notes = plan.notes;
  result.dispatch = plan.dispatch;
  const double max_start = *std::max_element(start.begin(), start.end());
  if (max_start > 0)
    result.notes.push_back(fmt::format(
        "{}: ranks start up to {:.1f} us apart; rank {} (critical) started at {:.1f} us and waited {:.1f} us in allreduces",
        plan.step, max_start, crit, start[static_cast<std::size_t>(crit)], wait[crit_lane]));
  const double max_scale = *std::max_element(scale.begin(), scale.end());
  const double min_scale = *std::min_element(scale.begin(), scale.end());
  if (max_scale != 1.0 || min_scale != 1.0)
    result.notes.push_back(fmt::format("{}: per-rank compute slowdown {:.3g}..{:.3g}; rank {} waited {:.1f} us in allreduces",
                                       plan.step, min_scale, max_scale, crit, wait[crit_lane]));
  return result;
}

}  // namespace eaglesim
