#include "calibration/calibration_cases.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "backend/op_pricing.hpp"
#include "topology/calibration_keys.hpp"

namespace eaglesim {

bool transition_kind(OpKind k) { return k != OpKind::allreduce && k != OpKind::other; }

std::string op_signature(const Op& op) {
  std::string s = fmt::format("|{} {}", to_string(op.kind), op.shape_string());
  if (op.kind == OpKind::other) s += fmt::format(" {}", op.us.value_or(0.0));
  return s;
}

namespace {

// At most this many (A, B) pairs are measured for the kernel-transition table (a Llama layer
// has ~10; a few traces x steps stay far below).
constexpr std::size_t kMaxTransitionPairs = 96;


// A traced op as a calibration op: named for what measures it, in no layer, without the
// trace's measured time.
Op calibration_copy(Op op, const char* name) {
  op.name = name;
  op.layer = -1;
  op.us.reset();
  return op;
}

// The step's first decoder layer (the lowest layer >= 0), or -1 when it has none.
int first_decoder_layer(const Step& step) {
  int first = -1;
  for (const Op& op : step.ops)
    if (op.layer >= 0 && (first < 0 || op.layer < first)) first = op.layer;
  return first;
}


// The ops [begin, end) of the step's first decoder layer, when they are contiguous (a layer a
// chain can repeat); nothing otherwise.
struct LayerRange {
  int layer = -1;
  std::size_t begin = 0, end = 0;
};
std::optional<LayerRange> first_layer_range(const Step& step) {
  const int first = first_decoder_layer(step);
  if (first < 0) return std::nullopt;
  auto is_first = [&](const Op& op) { return op.layer == first; };
  const auto begin = static_cast<std::size_t>(std::find_if(step.ops.begin(), step.ops.end(), is_first) - step.ops.begin());
  std::size_t end = begin;
  while (end < step.ops.size() && step.ops[end].layer == first) ++end;
  if (std::any_of(step.ops.begin() + static_cast<std::ptrdiff_t>(end), step.ops.end(), is_first)) return std::nullopt;
  return LayerRange{first, begin, end};
}

// The step's layers whose chain and transitions calibration measures: the first decoder layer
// and then the first layer of each other structure (the sequence of its compute op kinds), each
// when contiguous. A DeepSeek-style model's first layers have a dense MLP and the rest are MoE
// layers (router, experts, shared expert): measuring the first layer alone left every transition
// into and out of the expert GEMMs unmeasured.
std::vector<LayerRange> representative_layers(const Step& step) {
  std::vector<LayerRange> out;
  std::set<std::string> structures;
  std::size_t i = 0;
  while (i < step.ops.size()) {
    const int layer = step.ops[i].layer;
    if (layer < 0) {
      ++i;
      continue;
    }
    std::size_t end = i;
    std::string kinds;
    while (end < step.ops.size() && step.ops[end].layer == layer) {
      if (!step.ops[end].is_comm()) kinds += std::string(to_string(step.ops[end].kind)) + " ";
      ++end;
    }
    const bool contiguous = std::none_of(step.ops.begin() + static_cast<std::ptrdiff_t>(end), step.ops.end(),
                                         [&](const Op& op) { return op.layer == layer; });
    if (contiguous && structures.insert(kinds).second) out.push_back(LayerRange{layer, i, end});
    i = end;
  }
  return out;
}

// At most this many compute layers (a few traces x their steps).
constexpr std::size_t kMaxComputeLayers = 32;

// At most this many allreduce-in-context cases (a Llama layer has 2 allreduce sites; a few
// traces x strategies stay far below).
constexpr std::size_t kMaxAllreduceContexts = 128;

bool context_kind(OpKind k) { return transition_kind(k) && k != OpKind::grouped_gemm; }

// The allreduce at step.ops[i] under `strategy` as a context case: the compute op before it and
// the compute op after it (after the residual add + RMSNorm a fused strategy absorbs). None when
// the strategy cannot run that size, fused has nothing to absorb there, or a neighbour is not a
// kernel the context chains measure.
std::optional<AllreduceContextCase> context_case(const Step& step, std::size_t i, const std::string& strategy) {
  const Op& ar = step.ops[i];
  const Op* before = compute_before(step.ops, i);
  if (!before || !context_kind(before->kind)) return std::nullopt;
  const int absorbed = fusable_followers(step.ops, i);
  const bool fused = fuses_residual_norm(strategy);
  if (fused && absorbed == 0) return std::nullopt;
  if (!fits_message_range(strategy, ar.bytes)) return std::nullopt;
  const Op* after = compute_from(step.ops, i + 1 + (fused ? static_cast<std::size_t>(absorbed) : 0));
  if (!after || !context_kind(after->kind)) return std::nullopt;
  AllreduceContextCase c;
  c.allreduce.strategy = strategy;
  c.allreduce.bytes = ar.bytes;
  c.allreduce.dtype = ar.dtype;
  if (fused) {
    const Op& norm = step.ops[i + static_cast<std::size_t>(absorbed)];
    c.allreduce.tokens = norm.tokens;
    c.allreduce.hidden = norm.hidden;
    if (norm.tokens * norm.hidden * 2 != ar.bytes) return std::nullopt;  // rows that do not tile the message
  }
  c.before = calibration_copy(*before, "calibrate_context");
  c.after = calibration_copy(*after, "calibrate_context");
  c.key = allreduce_context_key(strategy, ar.bytes, c.before, c.after);
  return c;
}

// At most this many (strategy, layer) replays (5 strategies x a few traces x their steps).
constexpr std::size_t kMaxAllreduceLayers = 64;

}  // namespace

// Consecutive compute ops (allreduces in between skipped) of the representative layers of every
// step (the first decoder layer and the first of each other structure), and the step from each
// one's last op into the next op, deduplicated by kinds and shapes.
// With `fused_pairs`, also the pairs a fused strategy makes consecutive: the compute op before
// each allreduce of that layer that absorbs a residual add + RMSNorm, and the op after what it
// absorbs (o_proj -> gate_up, down -> the next layer's qkv). The simulator charges that pair's
// transition on the op after a fused allreduce, as for every strategy; without an entry it was
// charged nothing, while the allreduce's context entry has it taken out (its baseline chain runs
// the two ops back to back).
std::vector<std::pair<Op, Op>> transition_pairs(const std::vector<Trace>& traces, bool fused_pairs) {
  std::vector<std::pair<Op, Op>> out;
  std::set<std::string> seen;
  auto add = [&](const Op& a, const Op& b) {
    if (!transition_kind(a.kind) || !transition_kind(b.kind)) return;
    const std::string key = std::string(to_string(a.kind)) + " " + a.shape_string() + " > " + to_string(b.kind) + " " +
                            b.shape_string();
    if (out.size() < kMaxTransitionPairs && seen.insert(key).second)
      out.emplace_back(calibration_copy(a, "calibrate_transition"), calibration_copy(b, "calibrate_transition"));
  };
  for (const Trace& t : traces)
    for (const Step& step : t.steps) {
      const std::vector<LayerRange> layers = representative_layers(step);
      std::set<int> measured;
      for (const LayerRange& r : layers) {
        measured.insert(r.layer);
        // The layer's consecutive compute ops, and the step from its last op into the next op.
        const Op* prev = nullptr;
        for (std::size_t i = r.begin; i < step.ops.size(); ++i) {
          const Op& op = step.ops[i];
          if (op.is_comm()) continue;
          if (prev) add(*prev, op);
          if (op.layer != r.layer) break;
          prev = &op;
        }
      }
      if (!fused_pairs) continue;
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        if (!step.ops[i].is_comm() || !measured.count(step.ops[i].layer)) continue;
        const int absorbed = fusable_followers(step.ops, i);
        if (absorbed == 0) continue;
        const Op* before = compute_before(step.ops, i);
        const Op* after = compute_from(step.ops, i + 1 + static_cast<std::size_t>(absorbed));
        if (before && after) add(*before, *after);
      }
    }
  return out;
}

// The compute ops of the representative layers of every verify step, deduplicated by kinds
// and shapes (and the traced time of `other` ops, which the replay spins for). Verify steps only:
// transition entries pool token counts, and a decode layer fitted beside a verify layer of the
// same shapes would pull the verify step's entries towards its own.
std::vector<ComputeLayerCase> compute_layers(const std::vector<Trace>& traces) {
  std::vector<ComputeLayerCase> out;
  std::map<std::string, std::size_t> seen;  // signature -> index in out
  for (const Trace& t : traces)
    for (const Step& step : t.steps) {
      if (step.name != "verify") continue;
      for (const LayerRange& range : representative_layers(step)) {
        ComputeLayerCase c;
        std::string signature;
        for (std::size_t i = range.begin; i < range.end; ++i) {
          if (step.ops[i].is_comm()) continue;
          Op op = step.ops[i];
          op.name = "calibrate_compute_layer";
          op.layer = -1;
          signature += op_signature(op);
          c.ops.push_back(std::move(op));
        }
        if (c.ops.empty()) continue;
        const int tp = std::max(1, t.meta.tp);
        if (auto same = seen.find(signature); same != seen.end()) {
          int& gpus = out[same->second].gpus;  // the same layer in a wider trace: its GPUs count too
          gpus = std::max(gpus, tp);
          continue;
        }
        if (out.size() >= kMaxComputeLayers) continue;  // still scanned: a duplicate may widen one kept
        c.where = fmt::format("{} tp{} {} layer {}", t.meta.model, t.meta.tp, step.name, range.layer);
        c.gpus = tp;
        seen.emplace(signature, out.size());
        out.push_back(std::move(c));
      }
    }
  return out;
}

// Every allreduce of the first decoder layer of every step, per strategy, as a context case,
// deduplicated by key. Sizes a strategy cannot run are left out, as in its table.
std::vector<AllreduceContextCase> allreduce_contexts(const std::vector<Trace>& traces,
                                                     const std::vector<std::string>& strategies) {
  std::vector<AllreduceContextCase> out;
  std::set<std::string> seen;
  for (const Trace& t : traces)
    for (const Step& step : t.steps) {
      const int first = first_decoder_layer(step);
      if (first < 0) continue;
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        if (!step.ops[i].is_comm() || step.ops[i].layer != first) continue;
        for (const std::string& strategy : strategies) {
          std::optional<AllreduceContextCase> c = context_case(step, i, strategy);
          if (!c || !seen.insert(c->key).second) continue;
          out.push_back(std::move(*c));
          if (out.size() >= kMaxAllreduceContexts) return out;
        }
      }
    }
  return out;
}

// The first decoder layer of every step, per strategy, when the layer is contiguous, has
// allreduces and each of them has a case in `contexts`; deduplicated by strategy and op shapes.
// A fused strategy's last allreduce may absorb the next layer's first ops: they follow the layer
// in `ops` (the tail), and a chain of copies of the layer lets each copy's allreduce absorb the
// next copy's head, as in the step.
std::vector<AllreduceLayerCase> allreduce_layers(const std::vector<Trace>& traces,
                                                 const std::vector<std::string>& strategies,
                                                 const std::vector<AllreduceContextCase>& contexts) {
  std::map<std::string, std::size_t> context_index;
  for (std::size_t i = 0; i < contexts.size(); ++i) context_index.emplace(contexts[i].key, i);
  std::vector<AllreduceLayerCase> out;
  std::set<std::string> seen;
  for (const Trace& t : traces)
    for (const Step& step : t.steps) {
      const std::optional<LayerRange> range = first_layer_range(step);
      if (!range) continue;
      const int first = range->layer;
      const std::size_t begin = range->begin, end = range->end;
      for (const std::string& strategy : strategies) {
        AllreduceLayerCase c;
        c.strategy = strategy;
        std::size_t tail = 0;  // ops after the layer that its allreduces absorb
        bool complete = true, any = false;
        for (std::size_t i = begin; i < end && complete; ++i) {
          if (!step.ops[i].is_comm()) continue;
          any = true;
          const std::optional<AllreduceContextCase> cc = context_case(step, i, strategy);
          auto idx = cc ? context_index.find(cc->key) : context_index.end();
          if (idx == context_index.end()) {
            complete = false;
            break;
          }
          c.contexts.push_back(idx->second);
          c.dropped.push_back(i - begin);
          const std::size_t absorbed = fuses_residual_norm(strategy) ? static_cast<std::size_t>(fusable_followers(step.ops, i)) : 0;
          for (std::size_t a = 1; a <= absorbed; ++a) c.dropped.push_back(i + a - begin);
          if (i + absorbed >= end) tail = std::max(tail, i + absorbed + 1 - end);
        }
        if (!complete || !any || end + tail > step.ops.size()) continue;
        // In a chain of copies the tail is the next copy's head: it must be the same ops.
        bool tail_is_head = tail <= end - begin;
        for (std::size_t j = 0; j < tail && tail_is_head; ++j)
          tail_is_head = step.ops[end + j].kind == step.ops[begin + j].kind &&
                         step.ops[end + j].shape_string() == step.ops[begin + j].shape_string();
        if (!tail_is_head) continue;
        std::string signature = strategy;
        for (std::size_t i = begin; i < end + tail; ++i) {
          Op op = step.ops[i];
          op.name = "calibrate_layer";
          op.layer = -1;
          signature += op_signature(op);
          c.ops.push_back(std::move(op));  // `other` keeps its traced time: the replay spins that long
        }
        if (!seen.insert(signature).second) continue;
        c.layer_size = end - begin;
        c.where = fmt::format("{} tp{} {} layer {}", t.meta.model, t.meta.tp, step.name, first);
        c.step = step.name;
        out.push_back(std::move(c));
        if (out.size() >= kMaxAllreduceLayers) return out;
      }
    }
  return out;
}

void append_residual_norm(Step& step, std::int64_t tokens, std::int64_t hidden, int layer) {
  Op res;
  res.kind = OpKind::residual_add;
  res.name = "calibrate_residual";
  res.tokens = tokens;
  res.hidden = hidden;
  res.layer = layer;
  Op norm = res;
  norm.kind = OpKind::rmsnorm;
  norm.name = "calibrate_rmsnorm";
  step.ops.push_back(res);
  step.ops.push_back(norm);
}

}  // namespace eaglesim
