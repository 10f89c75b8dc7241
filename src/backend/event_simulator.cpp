#include "backend/event_simulator.hpp"

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

// The ranks as the walk takes them: checked, start offsets shifted so the earliest is 0, compute
// slowdowns, and the lanes of the ranks that share both.
struct Ranks {
  int count = 0;
  std::vector<double> start;  // per rank
  std::vector<double> scale;  // per rank
  RankLanes lanes;
};

Ranks checked_ranks(const SimulationOptions& opts) {
  if (opts.ranks < 1) throw InputError(fmt::format("ranks: expected at least 1, got {}", opts.ranks));
  Ranks r;
  r.count = opts.ranks;
  r.start = per_rank(opts.start_offset_us, r.count, 0.0, "rank skew (us)", false);
  const double min_start = *std::min_element(r.start.begin(), r.start.end());
  for (double& s : r.start) s -= min_start;
  r.scale = per_rank(opts.compute_scale, r.count, 1.0, "rank compute slowdown", true);
  r.lanes = rank_lanes(r.start, r.scale);
  return r;
}

// A collective's rendezvous: the last lane's arrival, and when the collective completes on all.
struct Rendezvous {
  double latest = 0;
  double finish = 0;
};

// The clocks and sums the walk advances, per lane, one op at a time. Lane-contiguous arrays
// (index [stream or kind or op] * L + lane), so that the per-op loops run over consecutive
// doubles.
class LaneClocks {
 public:
  LaneClocks(const StepPlan& plan, const RankLanes& lanes);

  // Runs compute op `p` (plan.ops[i]) on every lane: it starts when its stream is free and the op
  // it depends on has ended, and runs its duration times the lane's slowdown. Returns its ends
  // per lane; its starts are kept in begins() when it depends on an op or `keep_begins`.
  const double* run_compute(std::size_t i, const PricedOp& p, bool keep_begins);
  // Runs collective `p` (plan.ops[i]): every lane arrives (see arrivals()) and leaves at the
  // rendezvous' finish.
  Rendezvous run_collective(std::size_t i, const PricedOp& p);

  const double* begins() const { return begin_.data(); }
  const double* arrivals() const { return arrival_.data(); }
  // When the lane's last stream is free, and no sooner than `start`.
  double finish(std::size_t lane, double start) const;
  double kind_us(std::size_t kind, std::size_t lane) const { return kind_us_[kind * L_ + lane]; }
  double comm(std::size_t lane) const { return comm_[lane]; }
  double compute(std::size_t lane) const { return compute_[lane]; }
  double wait(std::size_t lane) const { return wait_[lane]; }
  int allreduces() const { return allreduces_; }

 private:
  const double* dep_end(const PricedOp& p) const {
    return p.depends_on >= 0 ? op_end_.data() + static_cast<std::size_t>(p.depends_on) * L_ : nullptr;
  }

  const std::size_t L_;  // lanes
  const std::size_t S_;  // streams
  const bool has_dependencies_;
  const double* const lane_scale_;
  std::vector<double> clock_;    // [stream]: when the stream is free
  std::vector<double> arrival_;  // the current collective's arrivals
  std::vector<double> begin_;    // the current compute op's starts
  std::vector<double> kind_us_;  // [kind]
  std::vector<double> comm_, compute_, wait_;
  // End time of every op on every lane, kept only when some op waits on another stream.
  std::vector<double> op_end_;  // [op]
  int allreduces_ = 0;
};

LaneClocks::LaneClocks(const StepPlan& plan, const RankLanes& lanes)
    : L_(lanes.start.size()),
      S_(plan.stream_names.size()),
      has_dependencies_(plan.has_dependencies),
      lane_scale_(lanes.scale.data()),
      clock_(L_ * S_),
      arrival_(L_),
      begin_(L_),
      kind_us_(L_ * kOpKindCount, 0.0),
      comm_(L_, 0.0),
      compute_(L_, 0.0),
      wait_(L_, 0.0) {
  for (std::size_t s = 0; s < S_; ++s)
    for (std::size_t l = 0; l < L_; ++l) clock_[s * L_ + l] = lanes.start[l];
  if (has_dependencies_) op_end_.resize(plan.ops.size() * L_);
}

const double* LaneClocks::run_compute(std::size_t i, const PricedOp& p, bool keep_begins) {
  double* const clk = clock_.data() + static_cast<std::size_t>(p.stream) * L_;
  double* const kind_l = kind_us_.data() + static_cast<std::size_t>(p.kind) * L_;
  double* const compute_l = compute_.data();
  const double* const deps = dep_end(p);
  const double us = p.us;
  if (deps || keep_begins) {
    for (std::size_t l = 0; l < L_; ++l) {
      const double b = deps ? std::max(clk[l], deps[l]) : clk[l];
      const double dur = us * lane_scale_[l];
      begin_[l] = b;
      clk[l] = b + dur;
      kind_l[l] += dur;
      compute_l[l] += dur;
    }
  } else {
    for (std::size_t l = 0; l < L_; ++l) {
      const double dur = us * lane_scale_[l];
      clk[l] += dur;
      kind_l[l] += dur;
      compute_l[l] += dur;
    }
  }
  if (has_dependencies_) std::copy(clk, clk + L_, op_end_.begin() + static_cast<std::ptrdiff_t>(i * L_));
  return clk;
}

Rendezvous LaneClocks::run_collective(std::size_t i, const PricedOp& p) {
  double* const clk = clock_.data() + static_cast<std::size_t>(p.stream) * L_;
  double* const kind_l = kind_us_.data() + static_cast<std::size_t>(p.kind) * L_;
  double* const comm_l = comm_.data();
  double* const wait_l = wait_.data();
  const double* const deps = dep_end(p);
  // The allreduce count and mean are of allreduces: a MoE's all-to-alls are communication too
  // (comm_us), counted under their own kind.
  if (p.kind == OpKind::allreduce) ++allreduces_;
  Rendezvous rv;
  for (std::size_t l = 0; l < L_; ++l) {
    const double a = deps ? std::max(clk[l], deps[l]) : clk[l];
    arrival_[l] = a;
    rv.latest = std::max(rv.latest, a);
  }
  rv.finish = rv.latest + p.us;
  for (std::size_t l = 0; l < L_; ++l) {
    const double a = arrival_[l];
    const double dur = rv.finish - a;
    clk[l] = rv.finish;
    kind_l[l] += dur;
    comm_l[l] += dur;
    wait_l[l] += rv.latest - a;
  }
  if (has_dependencies_) std::fill_n(op_end_.begin() + static_cast<std::ptrdiff_t>(i * L_), L_, rv.finish);
  return rv;
}

double LaneClocks::finish(std::size_t lane, double start) const {
  double f = start;
  for (std::size_t s = 0; s < S_; ++s) f = std::max(f, clock_[s * L_ + lane]);
  return f;
}

// Writes the timeline's spans, one per op and rank. Span text is the same on every rank: built
// once per op, copied per rank.
class SpanWriter {
 public:
  SpanWriter(const Step& step, const StepPlan& plan, const RankLanes& lanes, std::vector<Span>& spans)
      : step_(step), plan_(plan), lanes_(lanes), spans_(spans) {}
  void prepare(const PricedOp& p);
  // One span per rank, in rank order, from its lane's begin and end; `latest`: a collective's
  // last arrival (its wait), -1 for a compute op.
  void add(const double* begins, const double* ends, std::size_t end_stride, double latest);

 private:
  const Step& step_;
  const StepPlan& plan_;
  const RankLanes& lanes_;
  std::vector<Span>& spans_;
  Span proto_;
};

void SpanWriter::prepare(const PricedOp& p) {
  const Op& op = step_.ops[static_cast<std::size_t>(p.op_index)];
  proto_.stream = p.stream;
  proto_.op_index = p.op_index;
  proto_.kind = p.kind;
  proto_.name = op.name;
  proto_.layer = p.layer;
  proto_.detail = p.detail >= 0 ? plan_.details[static_cast<std::size_t>(p.detail)] : std::string();
  if (p.absorbed > 0 && p.collective) {
    proto_.detail += " +";
    for (int a = 1; a <= p.absorbed; ++a)
      proto_.detail += std::string(" ") + to_string(step_.ops[static_cast<std::size_t>(p.op_index + a)].kind);
  } else if (p.absorbed > 0) {
    // A fused compute kernel (residual_add + rmsnorm): named after every op it runs.
    proto_.detail += ", fused:";
    for (int a = 0; a <= p.absorbed; ++a) {
      const Op& part = step_.ops[static_cast<std::size_t>(p.op_index + a)];
      if (a > 0) proto_.name += "+" + part.name;
      proto_.detail += std::string(a > 0 ? " + " : " ") + to_string(part.kind);
    }
  }
  proto_.shape = op.shape_string();
  proto_.bytes = op.is_comm() ? op.bytes : 0;
}

void SpanWriter::add(const double* begins, const double* ends, std::size_t end_stride, double latest) {
  const int R = static_cast<int>(lanes_.lane_of_rank.size());
  for (int r = 0; r < R; ++r) {
    const std::size_t l = static_cast<std::size_t>(lanes_.lane_of_rank[static_cast<std::size_t>(r)]);
    spans_.push_back(proto_);
    Span& sp = spans_.back();
    sp.rank = r;
    sp.start_us = begins[l];
    sp.end_us = ends[l * end_stride];
    sp.wait_us = latest >= 0 ? latest - begins[l] : 0.0;
  }
}

// Walks the plan's ops in program order, each on every lane, and writes their spans when
// `spans` is given.
void walk_ops(const StepPlan& plan, LaneClocks& clocks, SpanWriter* spans) {
  for (std::size_t i = 0; i < plan.ops.size(); ++i) {
    const PricedOp& p = plan.ops[i];
    if (spans) spans->prepare(p);
    if (!p.collective) {
      const double* ends = clocks.run_compute(i, p, spans != nullptr);
      if (spans) spans->add(clocks.begins(), ends, 1, -1.0);
    } else {
      const Rendezvous rv = clocks.run_collective(i, p);
      if (spans) spans->add(clocks.arrivals(), &rv.finish, 0, rv.latest);
    }
  }
}

struct CriticalRank {
  int rank = 0;
  double finish = -1;
  std::size_t lane = 0;
  std::vector<double> rank_wait;  // every rank's wait in collectives
};

// The critical rank is the one that finishes last; among ties (every rank leaves the last
// allreduce together) the one that waited most, whose comm time then shows the skew as a
// profiler on that rank would.
CriticalRank critical_rank(const Ranks& ranks, const LaneClocks& clocks) {
  CriticalRank crit;
  crit.rank_wait.resize(static_cast<std::size_t>(ranks.count));
  for (int r = 0; r < ranks.count; ++r) {
    const std::size_t l = static_cast<std::size_t>(ranks.lanes.lane_of_rank[static_cast<std::size_t>(r)]);
    const double f = clocks.finish(l, ranks.start[static_cast<std::size_t>(r)]);
    crit.rank_wait[static_cast<std::size_t>(r)] = clocks.wait(l);
    if (f > crit.finish ||
        (f == crit.finish && clocks.wait(l) > crit.rank_wait[static_cast<std::size_t>(crit.rank)])) {
      crit.rank = r;
      crit.finish = f;
    }
  }
  crit.lane = static_cast<std::size_t>(ranks.lanes.lane_of_rank[static_cast<std::size_t>(crit.rank)]);
  return crit;
}

// The step's figures are the critical rank's.
void fill_figures(StepResult& result, const LaneClocks& clocks, const CriticalRank& crit) {
  result.step_us = crit.finish;
  result.step_us_min = result.step_us_max = result.step_us;
  result.samples = 1;
  for (std::size_t kk = 0; kk < static_cast<std::size_t>(kOpKindCount); ++kk)
    result.kind_us[kk] = clocks.kind_us(kk, crit.lane);
  result.comm_us = clocks.comm(crit.lane);
  result.compute_us = clocks.compute(crit.lane);
  const int allreduces = clocks.allreduces();
  result.allreduce_count = allreduces;
  result.allreduce_mean_us =
      allreduces > 0 ? result.kind_us[static_cast<std::size_t>(OpKind::allreduce)] / allreduces : 0.0;
  result.critical_rank = crit.rank;
}

// Notes on skewed starts and uneven compute speeds, after the plan's own notes. `crit` waited
// `crit_wait` in collectives.
void add_skew_notes(std::vector<std::string>& notes, const std::string& step, const Ranks& ranks, int crit,
                    double crit_wait) {
  const double max_start = *std::max_element(ranks.start.begin(), ranks.start.end());
  if (max_start > 0)
    notes.push_back(fmt::format(
        "{}: ranks start up to {:.1f} us apart; rank {} (critical) started at {:.1f} us and waited {:.1f} us in allreduces",
        step, max_start, crit, ranks.start[static_cast<std::size_t>(crit)], crit_wait));
  const double max_scale = *std::max_element(ranks.scale.begin(), ranks.scale.end());
  const double min_scale = *std::min_element(ranks.scale.begin(), ranks.scale.end());
  if (max_scale != 1.0 || min_scale != 1.0)
    notes.push_back(fmt::format("{}: per-rank compute slowdown {:.3g}..{:.3g}; rank {} waited {:.1f} us in allreduces",
                                step, min_scale, max_scale, crit, crit_wait));
}

}  // namespace

StepResult simulate_step(const Step& step, const StepPlan& plan, const SimulationOptions& opts) {
  const Ranks ranks = checked_ranks(opts);
  LaneClocks clocks(plan, ranks.lanes);

  StepResult result;
  result.step = plan.step;
  Timeline& tl = result.timeline;
  tl.step = plan.step;
  tl.ranks = ranks.count;
  tl.stream_names = plan.stream_names;
  if (opts.want_timeline) tl.spans.reserve(plan.ops.size() * static_cast<std::size_t>(ranks.count));
  SpanWriter spans(step, plan, ranks.lanes, tl.spans);
  walk_ops(plan, clocks, opts.want_timeline ? &spans : nullptr);

  CriticalRank crit = critical_rank(ranks, clocks);
  fill_figures(result, clocks, crit);
  result.rank_wait_us = std::move(crit.rank_wait);
  result.notes = plan.notes;
  result.dispatch = plan.dispatch;
  add_skew_notes(result.notes, plan.step, ranks, crit.rank, clocks.wait(crit.lane));
  return result;
}

}  // namespace eaglesim
