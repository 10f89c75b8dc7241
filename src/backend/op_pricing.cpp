#include "backend/op_pricing.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "comm/all_to_all.hpp"
#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "backend/pricing_tally.hpp"
#include "backend/recorded_compute.hpp"
#include "backend/step_pricing_memo.hpp"
#include "topology/calibration_keys.hpp"

namespace eaglesim {

namespace {

bool in_fusion_layer(const Op& follower, int ar_layer) {
  return follower.layer == ar_layer || follower.layer == ar_layer + 1 || follower.layer == -1;
}

// Interns detail strings so that PricedOps carry an index, not a string.
class DetailTable {
 public:
  explicit DetailTable(std::vector<std::string>& out) : out_(out) {}
  int id(const std::string& s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    out_.push_back(s);
    int i = static_cast<int>(out_.size()) - 1;
    ids_.emplace(s, i);
    return i;
  }

 private:
  std::vector<std::string>& out_;
  std::unordered_map<std::string, int> ids_;
};

}  // namespace

std::optional<double> find_transition(const std::map<std::string, double>& table, const Op& from, const Op& to) {
  auto t = table.find(transition_key(from, to));
  if (t == table.end()) t = table.find(transition_family_key(from, to));
  if (t == table.end()) t = table.find(transition_key(from.kind, to.kind));
  if (t == table.end()) return std::nullopt;
  return t->second;
}

const Op* compute_before(const std::vector<Op>& ops, std::size_t i) {
  for (std::size_t j = i; j-- > 0;)
    if (!ops[j].is_comm()) return &ops[j];
  return nullptr;
}

const Op* compute_from(const std::vector<Op>& ops, std::size_t from) {
  for (std::size_t j = from; j < ops.size(); ++j)
    if (!ops[j].is_comm()) return &ops[j];
  return nullptr;
}

std::string unfused_add_norm_note() {
  return setting_name(Setting::unfused_add_norm) +
         ": every residual_add and rmsnorm runs as its own kernel (SGLang and vLLM run a residual add and the norm "
         "after it as one fused kernel)";
}

bool fusable_add_norm(const std::vector<Op>& ops, std::size_t i) {
  if (i + 1 >= ops.size()) return false;
  const Op& add = ops[i];
  const Op& norm = ops[i + 1];
  return add.kind == OpKind::residual_add && norm.kind == OpKind::rmsnorm && add.tokens == norm.tokens &&
         add.hidden == norm.hidden;
}

int fusable_followers(const std::vector<Op>& ops, std::size_t i) {
  const Op& ar = ops[i];
  std::size_t j = i + 1;
  if (j < ops.size() && ops[j].kind == OpKind::residual_add && in_fusion_layer(ops[j], ar.layer)) ++j;
  if (j < ops.size() && ops[j].kind == OpKind::rmsnorm && in_fusion_layer(ops[j], ar.layer))
    return static_cast<int>(j + 1 - (i + 1));
  return 0;  // no norm to fuse into: the kernel has nothing to absorb
}

namespace {

// Whether a compute op's duration is its measured `us` (PricingOptions::op_times).
bool uses_measured_time(const Op& op, const PricingOptions& opts) {
  return opts.op_times == OpTimes::measured ||
         (opts.op_times == OpTimes::automatic && opts.trace_imported && op.us.has_value());
}

// A residual add and the norm after it, both for the cost model to price: one fused kernel.
// `op_measured`: ops[i] takes its measured time.
bool runs_fused_add_norm(const std::vector<Op>& ops, std::size_t i, bool op_measured, const PricingOptions& opts) {
  return opts.fuse_add_norm && ops[i].kind == OpKind::residual_add && !op_measured && fusable_add_norm(ops, i) &&
         !uses_measured_time(ops[i + 1], opts);
}

// Prices the ops of one step in order into a StepPlan: each price from the memo, each count
// into the tally. The compute op before the current one is kept because a kernel transition
// and an allreduce's calibration in context both depend on it.
class StepPricer {
 public:
  StepPricer(const Step& step, const PricingOptions& opts, StepPlan& plan);

  // Price ops[i] into `p`; each returns how many ops after ops[i] it fused into `p`.
  int price_allreduce(std::size_t i, PricedOp& p);
  void price_all_to_all(std::size_t i, PricedOp& p);
  int price_compute(std::size_t i, PricedOp& p);

  bool planned_allreduces() const { return memo_.has_comms(); }
  const PricingTally& tally() const { return tally_; }

 private:
  PricedComm plan_allreduce(const Op& op, int followers, std::int64_t rows);
  void price_in_context(std::size_t i, int absorbed, const std::string& model, PricedOp& p);
  int count_fusion(int absorbed, PricedOp& p);
  int price_by_model(std::size_t i, bool fused_add_norm, const Op& last, PricedOp& p);
  void add_transition(const Op& op, int shape, PricedOp& p);
  int detail_of(const OpCost& c) const;
  int prev_shape_id();

  const Step& step_;
  const PricingOptions& opts_;
  StepPlan& plan_;
  // A strategy that always fuses (fused): its allreduces without an RMSNorm after them are noted.
  const bool always_fuses_;
  const bool has_contexts_;
  const bool has_transitions_;
  // With a calibrated topology, ops its tables do not cover at all are worth a note too.
  const bool calibrated_topo_;
  DetailTable details_;
  const int d_model_;
  const int d_measured_;
  const int d_calibrated_;
  const int d_extrapolated_;
  const int d_in_context_;
  StepPricingMemo memo_;
  PricingTally tally_;
  std::map<std::pair<std::int64_t, bool>, std::pair<double, int>> all_to_all_;  // (tokens, combine) -> us, detail
  const Op* prev_ = nullptr;  // the compute op before the current one
  int prev_shape_ = -1;       // its shape id; -1: not interned yet (a measured op)
};

StepPricer::StepPricer(const Step& step, const PricingOptions& opts, StepPlan& plan)
    : step_(step),
      opts_(opts),
      plan_(plan),
      always_fuses_(opts.comm && opts.comm->fuses_residual_norm()),
      has_contexts_(opts.allreduce_contexts && !opts.allreduce_contexts->empty() && opts.comm),
      has_transitions_(opts.transitions && !opts.transitions->empty()),
      calibrated_topo_(opts.query.topo && !opts.query.topo->calibration.empty()),
      details_(plan.details),
      d_model_(details_.id("model")),
      d_measured_(details_.id("measured")),
      d_calibrated_(details_.id("calibrated")),
      d_extrapolated_(details_.id("model (outside calibration)")),
      d_in_context_(has_contexts_ ? details_.id("calibrated in context") : -1) {}

int StepPricer::prev_shape_id() {
  if (prev_shape_ < 0) prev_shape_ = memo_.shape_id(*prev_);
  return prev_shape_;
}

int StepPricer::price_allreduce(std::size_t i, PricedOp& p) {
  const Op& op = step_.ops[i];
  if (!opts_.comm)
    throw InputError(fmt::format("step {}: op {} ('{}') is an allreduce but no strategy was given", step_.name, i,
                                 op.name));
  p.collective = true;
  const int followers = fusable_followers(step_.ops, i);
  const std::int64_t rows = followers > 0 ? step_.ops[i + static_cast<std::size_t>(followers)].tokens : -1;
  const PricedComm& priced =
      memo_.comm(CommKey{op.bytes, op.dtype, rows}, [&] { return plan_allreduce(op, followers, rows); });
  p.us = priced.us;
  p.detail = priced.detail;
  if (priced.dispatch_group >= 0) {
    DispatchGroup& g = plan_.dispatch[static_cast<std::size_t>(priced.dispatch_group)];
    ++g.count;
    g.ops.push_back(static_cast<int>(i));
  }
  const int absorbed = priced.fuses ? followers : 0;
  if (has_contexts_ && prev_) price_in_context(i, absorbed, priced.model, p);
  return count_fusion(absorbed, p);
}

// A MoE layer's dispatch or combine, priced by the run's all-to-all strategy over the trace's
// ranks (expert parallelism spans them all); every layer's is the same, so once per shape.
void StepPricer::price_all_to_all(std::size_t i, PricedOp& p) {
  const Op& op = step_.ops[i];
  p.collective = true;
  auto [it, fresh] = all_to_all_.try_emplace({op.tokens, op.combine});
  if (fresh) {
    if (!opts_.query.topo)
      throw InputError(fmt::format("step {}: op {} ('{}') is an all_to_all: pricing it needs a topology", step_.name, i,
                                   op.name));
    AllToAllQuery q;
    q.topo = opts_.query.topo;
    q.ranks = opts_.query.ranks;
    q.phase = op.combine ? AllToAllPhase::combine : AllToAllPhase::dispatch;
    q.tokens = op.tokens;
    q.hidden = op.hidden;
    q.top_k = op.topk;
    q.experts = op.experts;
    q.dtype = op.dtype;
    const AllToAllCost c = all_to_all_cost(opts_.a2a, q);
    it->second = {c.us, details_.id(c.detail)};
  }
  p.us = it->second.first;
  p.detail = it->second.second;
}

// The communicator's plan for one distinct allreduce call, asked once per call (the memo's).
PricedComm StepPricer::plan_allreduce(const Op& op, int followers, std::int64_t rows) {
  CommCall call;
  call.query = opts_.query;
  call.query.bytes = op.bytes;
  call.query.dtype = op.dtype;
  call.norm_follows = followers > 0;
  call.rows = std::max<std::int64_t>(rows, 0);
  const CommPlan cp = opts_.comm->plan(call);
  const CommCost& c = cp.cost;
  if (c.extrapolated) ++tally_.comm_extrapolated;
  else if (!c.calibrated && calibrated_topo_ && call.query.ranks > 1 && !is_lower_bound(cp.model))
    tally_.count_untabled_comm(cp.model);
  PricedComm pc;
  pc.us = c.us;
  pc.detail = details_.id(c.detail.empty() ? opts_.comm->name() : c.detail);
  pc.fuses = cp.fuses;
  pc.model = cp.model.empty() ? opts_.comm->name() : cp.model;
  if (!cp.path.empty()) {
    pc.dispatch_group = static_cast<int>(plan_.dispatch.size());
    plan_.dispatch.push_back(DispatchGroup{op.bytes, cp.fuses, cp.path, pc.model, cp.reason, 0, c.us, {}});
  }
  return pc;
}

// An allreduce measured between the same two compute ops (after the ops it absorbs) costs that.
void StepPricer::price_in_context(std::size_t i, int absorbed, const std::string& model, PricedOp& p) {
  const Op& op = step_.ops[i];
  const Op* next = compute_from(step_.ops, i + 1 + static_cast<std::size_t>(absorbed));
  if (!next) return;
  const std::optional<double>& us = memo_.in_context(op.bytes, prev_shape_id(), memo_.shape_id(*next), model, [&] {
    auto e = opts_.allreduce_contexts->find(allreduce_context_key(model, op.bytes, *prev_, *next));
    return e != opts_.allreduce_contexts->end() ? std::optional<double>(e->second) : std::nullopt;
  });
  if (us) {
    p.us = std::max(0.0, *us);
    p.detail = d_in_context_;
    ++tally_.in_context;
  }
}

int StepPricer::count_fusion(int absorbed, PricedOp& p) {
  if (absorbed > 0) {
    p.absorbed = absorbed;
    ++tally_.fused;
    tally_.absorbed += absorbed;
  } else if (always_fuses_) {
    ++tally_.unfused;
  }
  return absorbed;
}

int StepPricer::price_compute(std::size_t i, PricedOp& p) {
  const Op& op = step_.ops[i];
  const bool use_measured = uses_measured_time(op, opts_);
  if (opts_.op_times == OpTimes::measured) require_recorded_us(step_, i);
  const bool fused_add_norm = runs_fused_add_norm(step_.ops, i, use_measured, opts_);
  const Op& last = fused_add_norm ? step_.ops[i + 1] : op;  // the kernel's last op: the next one's predecessor
  int shape = -1;  // the priced op's shape id (the model prices by shape; measured times are per op)
  if (use_measured) {
    p.us = *op.us;
    p.detail = d_measured_;
    ++tally_.measured;
  } else {
    shape = price_by_model(i, fused_add_norm, last, p);
  }
  prev_ = &last;
  prev_shape_ = shape;
  return fused_add_norm ? 1 : 0;
}

// Prices ops[i] (with the rmsnorm after it, as one kernel, when `fused_add_norm`) by the cost
// model; returns the shape id of the op priced, `last`.
int StepPricer::price_by_model(std::size_t i, bool fused_add_norm, const Op& last, PricedOp& p) {
  const Op& op = step_.ops[i];
  const ComputeCostFn& cost_fn = fused_add_norm ? opts_.add_norm_cost : opts_.compute_cost;
  if (!cost_fn)
    throw InputError(fmt::format("step {}: op {} ('{}') needs the compute model but no topology was given",
                                 step_.name, i, op.name));
  const int shape = memo_.shape_id(last);  // the op priced: the op itself, or the fused kernel's norm
  const OpCost& c = memo_.compute_cost(shape, fused_add_norm, [&] { return cost_fn(last); });
  p.us = c.us;
  p.detail = detail_of(c);
  tally_.count_modelled(c, fused_add_norm ? 2 : 1, calibrated_topo_,
                        opts_.op_times == OpTimes::automatic && opts_.trace_imported && op.kind != OpKind::other);
  // The kernel starts where its first op would: the transition into it is the one into that op.
  if (has_transitions_ && prev_ && !c.measured) add_transition(op, fused_add_norm ? memo_.shape_id(op) : shape, p);
  if (fused_add_norm) {
    p.kind = OpKind::rmsnorm;
    p.absorbed = 1;
    ++tally_.add_norm;
  }
  return shape;
}

int StepPricer::detail_of(const OpCost& c) const {
  return c.measured ? d_measured_ : c.extrapolated ? d_extrapolated_ : c.calibrated ? d_calibrated_ : d_model_;
}

// The calibration's transition from the compute op before into `op` (of shape id `shape`).
void StepPricer::add_transition(const Op& op, int shape, PricedOp& p) {
  const std::optional<double>& t =
      memo_.transition(prev_shape_id(), shape, [&] { return find_transition(*opts_.transitions, *prev_, op); });
  if (t) {
    p.us = std::max(0.0, p.us + *t);
    tally_.count_transition(*t);
  }
}

}  // namespace

StepPlan plan_step(const Step& step, const PricingOptions& opts) {
  StepPlan plan;
  plan.step = step.name;
  plan.ops.reserve(step.ops.size());
  StepPricer pricer(step, opts, plan);
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    // Every op of the step yields one PricedOp (fused ops are skipped past, not added), built in
    // place: a copy of a freshly written one would stall on store forwarding.
    PricedOp& p = plan.ops.emplace_back();
    p.op_index = static_cast<int>(i);
    p.kind = op.kind;
    p.layer = op.layer;
    int fused = 0;
    if (op.kind == OpKind::all_to_all) pricer.price_all_to_all(i, p);
    else fused = op.is_comm() ? pricer.price_allreduce(i, p) : pricer.price_compute(i, p);
    i += static_cast<std::size_t>(fused);
  }
  if (pricer.planned_allreduces() && opts.query.ranks > 1) plan.notes = opts.comm->setup_notes(opts.query);
  pricer.tally().append_notes(step.name, opts.query.ranks, plan.notes);
  return plan;
}

}  // namespace eaglesim
