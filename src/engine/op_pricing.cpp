#include "engine/op_pricing.hpp"

#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "engine/op_shape_ids.hpp"
#include "engine/recorded_compute.hpp"
#include "topology/calibration_keys.hpp"

namespace eaglesim {

OpTimes parse_op_times(const std::string& name) {
  if (name == "auto") return OpTimes::automatic;
  if (name == "model") return OpTimes::model;
  if (name == "measured") return OpTimes::measured;
  throw InputError(fmt::format("--op-times: expected auto, model or measured, got '{}'", name));
}

const char* to_string(OpTimes t) {
  switch (t) {
    case OpTimes::automatic: return "auto";
    case OpTimes::model: return "model";
    case OpTimes::measured: return "measured";
  }
  return "?";
}

namespace {

bool in_fusion_layer(const Op& follower, int ar_layer) {
  return follower.layer == ar_layer || follower.layer == ar_layer + 1 || follower.layer == -1;
}

// Two consecutive compute ops' shapes (ShapeIds): the kernel-transition lookup builds two key
// strings, so each pair is looked up once per step plan, not once per op.
std::uint64_t shape_pair(int from, int to) {
  return static_cast<std::uint64_t>(static_cast<std::uint32_t>(from)) << 32 | static_cast<std::uint32_t>(to);
}

// An allreduce between two compute ops' shapes: the in-context lookup builds a key string, so
// each (size, pair) is looked up once per step plan.
struct ContextKey {
  std::int64_t bytes;
  std::uint64_t pair;  // shape_pair
  std::string model;   // the strategy that runs it (an engine strategy picks per call)
  bool operator==(const ContextKey& o) const { return bytes == o.bytes && pair == o.pair && model == o.model; }
};
struct ContextKeyHash {
  std::size_t operator()(const ContextKey& k) const {
    return (std::hash<std::uint64_t>()(k.pair) * 31 ^ std::hash<std::int64_t>()(k.bytes)) * 31 ^
           std::hash<std::string>()(k.model);
  }
};

// An allreduce as a strategy that decides per call sees it: its size, and the RMSNorm after it.
struct CommKey {
  std::int64_t bytes;
  DType dtype;
  std::int64_t rows;  // the following RMSNorm's tokens; -1: no RMSNorm follows
  bool operator==(const CommKey& o) const { return bytes == o.bytes && dtype == o.dtype && rows == o.rows; }
};
struct CommKeyHash {
  std::size_t operator()(const CommKey& k) const {
    return std::hash<std::int64_t>()((k.bytes * 8 + static_cast<std::int64_t>(k.dtype)) * 31 + k.rows);
  }
};

// What the memo keeps of one CommKey's plan.
struct PricedComm {
  double us = 0;
  int detail = -1;
  bool fuses = false;
  std::string model;        // the strategy that ran it (the allreduce-in-context key)
  int dispatch_group = -1;  // index into StepPlan::dispatch; -1: not an engine strategy
};

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

const char* const kUnfusedAddNormNote =
    "--no-fused-add-norm: every residual_add and rmsnorm runs as its own kernel (SGLang and vLLM run a residual add "
    "and the norm after it as one fused kernel)";

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

StepPlan plan_step(const Step& step, const PricingOptions& opts) {
  StepPlan plan;
  plan.step = step.name;
  plan.ops.reserve(step.ops.size());
  DetailTable details(plan.details);
  const int d_model = details.id("model");
  const int d_measured = details.id("measured");
  const int d_calibrated = details.id("calibrated");
  const int d_extrapolated = details.id("model (outside calibration)");

  ShapeIds shapes;
  std::vector<std::optional<OpCost>> compute_memo(64);   // by shape id
  std::vector<std::optional<OpCost>> add_norm_memo(64);  // fused add+norm kernels, by the norm's shape id
  // A step carries a handful of distinct allreduce calls (one per size and following norm), so a
  // short scan of the first few finds almost every one without hashing; a map indexes the rest.
  constexpr std::size_t kScannedComms = 8;
  std::vector<std::pair<CommKey, PricedComm>> comm_memo;
  std::unordered_map<CommKey, std::size_t, CommKeyHash> comm_index;  // entries from kScannedComms on
  auto find_comm = [&](const CommKey& key) -> PricedComm* {
    const std::size_t scanned = std::min(comm_memo.size(), kScannedComms);
    for (std::size_t e = 0; e < scanned; ++e)
      if (comm_memo[e].first == key) return &comm_memo[e].second;
    if (comm_memo.size() <= kScannedComms) return nullptr;
    auto it = comm_index.find(key);
    return it == comm_index.end() ? nullptr : &comm_memo[it->second].second;
  };
  // A strategy that always fuses (fused): its allreduces without an RMSNorm after them are noted.
  const bool always_fuses = opts.comm && opts.comm->fuses_residual_norm();
  int n_model = 0, n_measured = 0, n_fallback = 0, n_extrapolated = 0;
  int n_fused = 0, n_absorbed = 0, n_unfused = 0, n_comm_extra = 0, n_untabled = 0, n_comm_untabled = 0;
  std::string untabled_models;  // the strategies those allreduces ran as (an engine strategy runs several)
  int n_transitions = 0, n_in_context = 0;
  int n_add_norm = 0;  // residual_add + rmsnorm pairs run as one kernel
  double transition_sum = 0;
  const bool has_contexts = opts.allreduce_contexts && !opts.allreduce_contexts->empty() && opts.comm;
  std::unordered_map<ContextKey, std::optional<double>, ContextKeyHash> context_memo;
  const int d_in_context = has_contexts ? details.id("calibrated in context") : -1;
  const bool has_transitions = opts.transitions && !opts.transitions->empty();
  const Op* prev = nullptr;  // the compute op before the current one
  int prev_shape = -1;       // its shape id; -1: not interned yet (a measured op)
  auto prev_shape_id = [&] {
    if (prev_shape < 0) prev_shape = shapes.intern(*prev);
    return prev_shape;
  };
  std::unordered_map<std::uint64_t, std::optional<double>> transition_memo;  // by shape_pair
  // With a calibrated topology, ops its tables do not cover at all are worth a note too.
  const bool calibrated_topo = opts.query.topo && !opts.query.topo->calibration.empty();

  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    // Every op of the step yields one PricedOp (fused ops are skipped past, not added), built in
    // place: a copy of a freshly written one would stall on store forwarding.
    PricedOp& p = plan.ops.emplace_back();
    p.op_index = static_cast<int>(i);
    p.kind = op.kind;
    p.layer = op.layer;
    if (op.is_comm()) {
      if (!opts.comm)
        throw InputError(fmt::format("step {}: op {} ('{}') is an allreduce but no strategy was given",
                                     step.name, i, op.name));
      p.collective = true;
      const int followers = fusable_followers(step.ops, i);
      const std::int64_t rows = followers > 0 ? step.ops[i + static_cast<std::size_t>(followers)].tokens : -1;
      CommKey key{op.bytes, op.dtype, rows};
      PricedComm* found = find_comm(key);
      if (!found) {
        CommCall call;
        call.query = opts.query;
        call.query.bytes = op.bytes;
        call.query.dtype = op.dtype;
        call.norm_follows = followers > 0;
        call.rows = std::max<std::int64_t>(rows, 0);
        const CommPlan cp = opts.comm->plan(call);
        const CommCost& c = cp.cost;
        if (c.extrapolated) ++n_comm_extra;
        else if (!c.calibrated && calibrated_topo && call.query.ranks > 1 && !is_lower_bound(cp.model)) {
          ++n_comm_untabled;
          if (untabled_models.find(cp.model) == std::string::npos)
            untabled_models += (untabled_models.empty() ? "" : ", ") + cp.model;
        }
        PricedComm pc;
        pc.us = c.us;
        pc.detail = details.id(c.detail.empty() ? opts.comm->name() : c.detail);
        pc.fuses = cp.fuses;
        pc.model = cp.model.empty() ? opts.comm->name() : cp.model;
        if (!cp.path.empty()) {
          pc.dispatch_group = static_cast<int>(plan.dispatch.size());
          plan.dispatch.push_back(DispatchGroup{op.bytes, cp.fuses, cp.path, pc.model, cp.reason, 0, c.us, {}});
        }
        if (comm_memo.size() >= kScannedComms) comm_index.emplace(key, comm_memo.size());
        comm_memo.emplace_back(key, std::move(pc));
        found = &comm_memo.back().second;
      }
      const PricedComm& priced = *found;
      p.us = priced.us;
      p.detail = priced.detail;
      if (priced.dispatch_group >= 0) {
        DispatchGroup& g = plan.dispatch[static_cast<std::size_t>(priced.dispatch_group)];
        ++g.count;
        g.ops.push_back(static_cast<int>(i));
      }
      const int absorbed = priced.fuses ? followers : 0;
      if (has_contexts && prev) {
        if (const Op* next = compute_from(step.ops, i + 1 + static_cast<std::size_t>(absorbed))) {
          auto [c, fresh] = context_memo.try_emplace(
              ContextKey{op.bytes, shape_pair(prev_shape_id(), shapes.intern(*next)), priced.model});
          if (fresh) {
            auto e = opts.allreduce_contexts->find(allreduce_context_key(priced.model, op.bytes, *prev, *next));
            if (e != opts.allreduce_contexts->end()) c->second = e->second;
          }
          if (c->second) {
            p.us = std::max(0.0, *c->second);
            p.detail = d_in_context;
            ++n_in_context;
          }
        }
      }
      if (absorbed > 0) {
        p.absorbed = absorbed;
        ++n_fused;
        n_absorbed += absorbed;
        i += static_cast<std::size_t>(absorbed);
      } else if (always_fuses) {
        ++n_unfused;
      }
      continue;
    }

    auto uses_measured = [&](const Op& o) {
      return opts.op_times == OpTimes::measured ||
             (opts.op_times == OpTimes::automatic && opts.trace_imported && o.us.has_value());
    };
    const bool use_measured = uses_measured(op);
    if (opts.op_times == OpTimes::measured) require_recorded_us(step, i);
    // A residual add and the norm after it, both for the cost model to price: one fused kernel.
    const bool fused_add_norm = opts.fuse_add_norm && op.kind == OpKind::residual_add && !use_measured &&
                                fusable_add_norm(step.ops, i) && !uses_measured(step.ops[i + 1]);
    const Op& last = fused_add_norm ? step.ops[i + 1] : op;  // the kernel's last op: the next one's predecessor
    int shape = -1;  // the priced op's shape id (the model prices by shape; measured times are per op)
    if (use_measured) {
      p.us = *op.us;
      p.detail = d_measured;
      ++n_measured;
    } else {
      const ComputeCostFn& cost_fn = fused_add_norm ? opts.add_norm_cost : opts.compute_cost;
      if (!cost_fn)
        throw InputError(fmt::format("step {}: op {} ('{}') needs the compute model but no topology was given",
                                     step.name, i, op.name));
      auto& memo = fused_add_norm ? add_norm_memo : compute_memo;
      shape = shapes.intern(last);  // the op priced: the op itself, or the fused kernel's norm
      const std::size_t slot = static_cast<std::size_t>(shape);
      if (slot >= memo.size()) memo.resize(2 * slot + 1);
      if (!memo[slot]) memo[slot] = cost_fn(last);
      const OpCost& c = *memo[slot];
      p.us = c.us;
      p.detail = c.measured ? d_measured : c.extrapolated ? d_extrapolated : c.calibrated ? d_calibrated : d_model;
      const int ops_priced = fused_add_norm ? 2 : 1;
      if (c.measured) n_measured += ops_priced;
      else n_model += ops_priced;
      if (c.extrapolated) ++n_extrapolated;
      else if (!c.calibrated && !c.measured && calibrated_topo) ++n_untabled;
      if (opts.op_times == OpTimes::automatic && opts.trace_imported && op.kind != OpKind::other) n_fallback += ops_priced;
      // The kernel starts where its first op would: the transition into it is the one into that op.
      if (has_transitions && prev && !c.measured) {
        auto [t, fresh] = transition_memo.try_emplace(
            shape_pair(prev_shape_id(), fused_add_norm ? shapes.intern(op) : shape));
        if (fresh) t->second = find_transition(*opts.transitions, *prev, op);
        if (t->second) {
          p.us = std::max(0.0, p.us + *t->second);
          transition_sum += *t->second;
          ++n_transitions;
        }
      }
      if (fused_add_norm) {
        p.kind = OpKind::rmsnorm;
        p.absorbed = 1;
        ++n_add_norm;
        ++i;
      }
    }
    prev = &last;
    prev_shape = shape;
  }

  const std::string& s = step.name;
  if (!comm_memo.empty() && opts.query.ranks > 1) plan.notes = opts.comm->setup_notes(opts.query);
  if (n_measured > 0 && n_model > 0)
    plan.notes.push_back(fmt::format("{}: {} compute ops from measured times, {} from the cost model", s,
                                     n_measured, n_model));
  if (n_fallback > 0)
    plan.notes.push_back(fmt::format("{}: {} ops of the imported trace had no measured time: cost model used", s,
                                     n_fallback));
  if (n_extrapolated > 0)
    plan.notes.push_back(fmt::format("{}: {} op shapes outside the calibration tables: cost model used", s,
                                     n_extrapolated));
  if (n_untabled > 0)
    plan.notes.push_back(fmt::format("{}: {} ops have no calibration table for their kind or shape: cost model used",
                                     s, n_untabled));
  if (n_comm_extra > 0)
    plan.notes.push_back(fmt::format("{}: {} allreduce sizes outside the calibration table: cost model used", s,
                                     n_comm_extra));
  if (n_comm_untabled > 0)
    plan.notes.push_back(fmt::format("{}: {} allreduce sizes have no calibration table for {} on {} ranks: cost "
                                     "model used", s, n_comm_untabled, untabled_models, opts.query.ranks));
  if (n_in_context > 0)
    plan.notes.push_back(fmt::format("{}: {} allreduce{} priced as measured between the same two ops (calibration "
                                     "in context)", s, n_in_context, n_in_context == 1 ? "" : "s"));
  if (n_transitions > 0)
    plan.notes.push_back(fmt::format("{}: kernel transitions from the calibration added to {} ops ({:+.1f} us in all)",
                                     s, n_transitions, transition_sum));
  if (n_fused > 0)
    plan.notes.push_back(fmt::format("{}: {} allreduce{} fused with the {} residual_add/rmsnorm ops after them", s,
                                     n_fused, n_fused == 1 ? "" : "s", n_absorbed));
  if (n_add_norm > 0)
    plan.notes.push_back(fmt::format("{}: {} residual_add + rmsnorm pair{} run as one fused kernel each (reported as "
                                     "rmsnorm; --no-fused-add-norm runs them as two)", s, n_add_norm,
                                     n_add_norm == 1 ? "" : "s"));
  if (n_unfused > 0)
    plan.notes.push_back(fmt::format("{}: {} allreduce{} not followed by an rmsnorm: run unfused", s, n_unfused,
                                     n_unfused == 1 ? "" : "s"));
  return plan;
}

}  // namespace eaglesim
