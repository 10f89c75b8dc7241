#pragma once
// Pricing a step for the simulator: every op gets a duration once, before any rank walks the
// step, so the event loop itself only adds numbers. Compute ops are priced by a cost function
// (the compute model, or the op's own measured `us`); allreduces always by the strategy's
// communicator, which is the point of an A/B run: a measured allreduce is never reused as a
// cost. A communicator that fuses residual_add + rmsnorm into its allreduce absorbs those ops
// here, so they vanish from the step. A residual_add followed by an rmsnorm of the same shape,
// which SGLang and vLLM run as one fused_add_rmsnorm kernel, is priced as that one kernel.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/op_times.hpp"
#include "comm/cost_model.hpp"
#include "cost/compute_model.hpp"
#include "domain/step_result.hpp"
#include "trace/op.hpp"
#include "trace/trace.hpp"

namespace eaglesim {


using ComputeCostFn = std::function<OpCost(const Op&)>;

struct PricingOptions {
  const CommCostModel* comm = nullptr;  // required when the step has allreduces
  std::string a2a = "auto";             // prices the step's all_to_all ops (RunOptions::a2a)
  CommQuery query;                     // topo, ranks, nccl knobs; bytes/dtype are filled per op
  ComputeCostFn compute_cost;          // required unless every compute op uses its measured `us`
  OpTimes op_times = OpTimes::automatic;
  bool trace_imported = false;         // TraceMeta::source == "imported"
  // Kernel-transition costs (Calibration::transition_us), added to a compute op priced by the
  // cost model after the compute op before it (allreduces in between skipped): the entry for
  // the two ops' shapes if there is one, else for their kinds; nullptr or empty: none. Measured
  // op times already hold them.
  const std::map<std::string, double>* transitions = nullptr;
  // Allreduces measured in their trace context (Calibration::allreduce_context_us): an
  // allreduce whose strategy, size and neighbouring compute ops (before it, and after the ops it
  // absorbs) have an entry costs that instead of the strategy's table. nullptr: none (also when
  // the calibration was measured on another rank count).
  const std::map<std::string, double>* allreduce_contexts = nullptr;
  // Residual adds followed by an rmsnorm of the same shape (fusable_add_norm) run as one kernel,
  // priced by add_norm_cost, when no fusing allreduce absorbed them and the cost model prices
  // both (measured times are the kernels a recording ran, kept as they are). The kernel takes
  // the add's place in the step and reports as rmsnorm. RunOptions::fuse_add_norm.
  bool fuse_add_norm = true;
  ComputeCostFn add_norm_cost;         // the fused kernel, given the pair's rmsnorm; required when a pair fuses
};

// One op of a step after pricing and fusion.
struct PricedOp {
  int op_index = 0;        // index into Step::ops
  int absorbed = 0;        // ops after op_index fused into this one: a fused allreduce's 2 or 1;
                           // a residual_add's 1, the rmsnorm of its fused add+norm kernel
  OpKind kind = OpKind::other;  // a fused add+norm kernel: rmsnorm (the norm is the kernel)
  int layer = -1;
  int stream = 0;          // index into StepPlan::stream_names
  int depends_on = -1;     // an earlier PricedOp (other stream) this one waits for; -1: none
  bool collective = false;
  double us = 0;           // compute: duration at slowdown 1; collective: cost after the last arrival
  int detail = -1;         // index into StepPlan::details (cost source / algorithm)
};

struct StepPlan {
  std::string step;
  std::vector<PricedOp> ops;
  std::vector<std::string> stream_names{"compute"};
  std::vector<std::string> details;  // shared strings referenced by PricedOp::detail
  bool has_dependencies = false;     // any PricedOp::depends_on >= 0
  std::vector<std::string> notes;
  std::vector<DispatchGroup> dispatch;  // engine strategies: the path of each allreduce and why
};

// Prices every op of `step`. Throws InputError (measured times missing, no communicator for
// an allreduce, no cost function).
StepPlan plan_step(const Step& step, const PricingOptions& opts);

// The calibration's transition for op `to` after op `from`: the entry for the two shapes if there
// is one, else for their kinds with the GEMM sides' weight formats, else for their kinds; nullopt
// when none is in the table.
std::optional<double> find_transition(const std::map<std::string, double>& table, const Op& from, const Op& to);

// True when `comm` would absorb ops[i+1..] into the allreduce at ops[i]; returns how many.
// Rule: the allreduce is followed, immediately, by an optional residual_add and then an
// rmsnorm, both in the allreduce's layer, the next layer (the next layer's input norm), or
// outside any layer (the final norm after the last layer).
int fusable_followers(const std::vector<Op>& ops, std::size_t i);

// True when ops[i] and ops[i+1] are a residual_add and an rmsnorm of the same tokens and hidden:
// the pair SGLang and vLLM run as one fused_add_rmsnorm kernel (residual = x + residual; out =
// rmsnorm(residual) * w), the MLP's residual add with the next layer's input norm (or the final
// norm) included.
bool fusable_add_norm(const std::vector<Op>& ops, std::size_t i);
// What a run or a sweep with fuse_add_norm off says once about it (the plans say nothing then).
std::string unfused_add_norm_note();

// The compute op nearest to an allreduce at ops[i] on either side (allreduces skipped), or
// nullptr: before it, and at or after index `from` (i + 1, or past the ops a fused strategy
// absorbs). The neighbours an allreduce is priced and calibrated between.
const Op* compute_before(const std::vector<Op>& ops, std::size_t i);
const Op* compute_from(const std::vector<Op>& ops, std::size_t from);

}  // namespace eaglesim
