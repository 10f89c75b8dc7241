#include "domain/cycle_parts.hpp"

namespace eaglesim {

namespace {

double kind(const StepResult& s, OpKind k) { return s.kind_us[static_cast<std::size_t>(k)]; }

// The per-cycle ops' time in a step; the rest of the step is its forward.
double per_cycle_kinds(const StepResult& s) {
  return kind(s, OpKind::topk_select) + kind(s, OpKind::tree_build) + kind(s, OpKind::sampling) +
         kind(s, OpKind::host_sync);
}

// One step's per-cycle ops, `times` per cycle, added to their parts.
void add_per_cycle_ops(CycleParts& p, const StepResult& s, int times) {
  p.topk_select_us += times * kind(s, OpKind::topk_select);
  p.tree_build_us += times * kind(s, OpKind::tree_build);
  p.sampling_us += times * kind(s, OpKind::sampling);
  p.host_sync_us += times * kind(s, OpKind::host_sync);
}

}  // namespace

double CycleParts::total_us() const {
  return draft_extend_us + draft_forwards * draft_forward_us + verify_forward_us + per_cycle_ops_us();
}

double CycleParts::per_cycle_ops_us() const { return topk_select_us + tree_build_us + sampling_us + host_sync_us; }

CycleParts cycle_parts(const StrategyResult& r) {
  CycleParts p;
  if (!r.supported) return p;
  // The forward is the step's time less its per-cycle ops, so that the parts add up to the step
  // even where ranks start apart or streams overlap.
  p.verify_forward_us = r.verify.step_us - per_cycle_kinds(r.verify);
  add_per_cycle_ops(p, r.verify, 1);
  if (r.draft_extend) {
    p.draft_extend_us = r.draft_extend->step_us - per_cycle_kinds(*r.draft_extend);
    add_per_cycle_ops(p, *r.draft_extend, 1);
  }
  p.draft_forwards = r.draft ? r.draft_forwards : 0;
  if (r.draft) {
    p.draft_forward_us = r.draft->step_us - per_cycle_kinds(*r.draft);
    add_per_cycle_ops(p, *r.draft, p.draft_forwards);
  }
  return p;
}

DecodeParts decode_parts(const StrategyResult& r) {
  DecodeParts p;
  if (!r.supported || !r.decode) return p;
  p.sampling_us = kind(*r.decode, OpKind::sampling);
  p.host_sync_us = kind(*r.decode, OpKind::host_sync);
  p.forward_us = r.decode->step_us - per_cycle_kinds(*r.decode);
  return p;
}

bool has_engine_cycle(const StrategyResult& r) {
  if (!r.supported) return false;
  if (r.draft_extend) return true;
  for (const std::optional<StepResult>* s : {&r.draft, &r.decode})
    if (*s && per_cycle_kinds(**s) > 0) return true;
  return per_cycle_kinds(r.verify) > 0;
}

}  // namespace eaglesim
