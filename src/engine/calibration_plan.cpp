#include "engine/calibration_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/modelled_communicator.hpp"
#include "cost/compute_model.hpp"
#include "core/errors.hpp"
#include "engine/layer_chain.hpp"
#include "engine/op_pricing.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology_limits.hpp"

namespace eaglesim {

namespace {

// Spin lengths of `other` ops are measured on a sqrt(2) grid: a timed kernel is the requested
// time plus a constant boundary cost, which log-log interpolation follows closely at that spacing.
constexpr double kOtherGridFactor = 1.41421356237;
constexpr double kOtherMinUs = 0.5;

bool is_elementwise(OpKind k) {
  return k == OpKind::rmsnorm || k == OpKind::residual_add || k == OpKind::act || k == OpKind::embedding;
}

bool custom_strategy(const std::string& s) { return s != "nccl"; }

// At most this many (A, B) pairs are measured for the kernel-transition table (a Llama layer
// has ~10; a few traces x steps stay far below).
constexpr std::size_t kMaxTransitionPairs = 96;

// Kinds whose transitions calibrate measures: every compute op the replay runs as a real kernel
// (`other` is a timed spin whose chain time is what the trace asked for).
bool transition_kind(OpKind k) { return k != OpKind::allreduce && k != OpKind::other; }

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

// Consecutive compute ops (allreduces in between skipped) of the first decoder layer of every
// step, and the step from its last op into the next layer, deduplicated by kinds and shapes.
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
      const int first = first_decoder_layer(step);
      if (first < 0) continue;
      const Op* prev = nullptr;
      for (const Op& op : step.ops) {
        if (op.is_comm()) continue;
        if (op.layer > first + 1) break;
        if (prev && prev->layer == first) add(*prev, op);
        prev = &op;
      }
      if (!fused_pairs) continue;
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        if (!step.ops[i].is_comm() || step.ops[i].layer != first) continue;
        const int absorbed = fusable_followers(step.ops, i);
        if (absorbed == 0) continue;
        const Op* before = compute_before(step.ops, i);
        const Op* after = compute_from(step.ops, i + 1 + static_cast<std::size_t>(absorbed));
        if (before && after) add(*before, *after);
      }
    }
  return out;
}

// What makes two layers' ops the same measurement: kinds, shapes and, for `other` ops (which the
// replay spins for their traced time), that time. One entry of a layer's deduplication key.
std::string op_signature(const Op& op) {
  std::string s = fmt::format("|{} {}", to_string(op.kind), op.shape_string());
  if (op.kind == OpKind::other) s += fmt::format(" {}", op.us.value_or(0.0));
  return s;
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

// At most this many compute layers (a few traces x their steps).
constexpr std::size_t kMaxComputeLayers = 32;

// The compute ops of the first decoder layer of every verify step, deduplicated by kinds
// and shapes (and the traced time of `other` ops, which the replay spins for). Verify steps only:
// transition entries pool token counts, and a decode layer fitted beside a verify layer of the
// same shapes would pull the verify step's entries towards its own.
std::vector<ComputeLayerCase> compute_layers(const std::vector<Trace>& traces) {
  std::vector<ComputeLayerCase> out;
  std::map<std::string, std::size_t> seen;  // signature -> index in out
  for (const Trace& t : traces)
    for (const Step& step : t.steps) {
      if (step.name != "verify") continue;
      const std::optional<LayerRange> range = first_layer_range(step);
      if (!range) continue;
      ComputeLayerCase c;
      std::string signature;
      for (std::size_t i = range->begin; i < range->end; ++i) {
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
      c.where = fmt::format("{} tp{} {} layer {}", t.meta.model, t.meta.tp, step.name, range->layer);
      c.gpus = tp;
      seen.emplace(signature, out.size());
      out.push_back(std::move(c));
    }
  return out;
}

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
  const bool fused = strategy == "fused";
  if (fused && absorbed == 0) return std::nullopt;
  if (custom_strategy(strategy) && (ar.bytes > kMaxCustomBytes || ar.bytes % 16 != 0)) return std::nullopt;
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

// At most this many (strategy, layer) replays (5 strategies x a few traces x their steps).
constexpr std::size_t kMaxAllreduceLayers = 64;

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
          const std::size_t absorbed = strategy == "fused" ? static_cast<std::size_t>(fusable_followers(step.ops, i)) : 0;
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

// What the traces contain, deduplicated.
struct TraceShapes {
  std::map<std::tuple<std::int64_t, std::int64_t, int>, int> gemm;      // n, k, dtype -> widest tp using it
  std::set<std::int64_t> gemm_m;
  // The widest tensor-parallel degree among the traces that use a shape is the number of GPUs
  // whose slowest time its entries take (CalibrationRequest::compute_gpus).
  struct AttentionUse {
    Op tmpl;                       // the first op with this q-key
    std::set<std::int64_t> kv;     // kv lens used
    int tp = 1;                    // widest tp using it
  };
  struct ElementwiseUse {
    std::set<std::int64_t> tokens;  // token counts used
    int tp = 1;                     // widest tp using it
  };
  std::map<std::string, AttentionUse> attention;                          // q-key ->
  std::map<std::pair<int, std::int64_t>, ElementwiseUse> elementwise;     // (kind, hidden) ->
  std::set<double> other_us;
  std::set<std::pair<std::int64_t, int>> allreduce;                       // bytes, dtype
  std::set<std::int64_t> fused_hidden;                                    // hidden of rows after an allreduce
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int>, int> before_allreduce;  // GEMM -> count
  Op first_gemm;
  bool has_gemm = false;
  int other_tp = 1;  // widest tp of the traces with `other` ops
};

TraceShapes collect(const std::vector<Trace>& traces) {
  TraceShapes s;
  for (const Trace& t : traces) {
    const int tp = std::max(1, t.meta.tp);
    for (const Step& step : t.steps)
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        const Op& op = step.ops[i];
        switch (op.kind) {
          case OpKind::gemm:
          case OpKind::lm_head: {
            int& widest = s.gemm[{op.n, op.k, static_cast<int>(op.dtype)}];
            widest = std::max(widest, tp);
            s.gemm_m.insert(op.m);
            if (!s.has_gemm) { s.first_gemm = op; s.has_gemm = true; }
            break;
          }
          case OpKind::attention: {
            TraceShapes::AttentionUse& use = s.attention[attention_calibration_key_q(op)];
            if (use.kv.empty()) use.tmpl = op;
            use.kv.insert(op.kv_len);
            use.tp = std::max(use.tp, tp);
            break;
          }
          case OpKind::allreduce:
            s.allreduce.insert({op.bytes, static_cast<int>(op.dtype)});
            if (i > 0 && (step.ops[i - 1].kind == OpKind::gemm || step.ops[i - 1].kind == OpKind::lm_head)) {
              const Op& g = step.ops[i - 1];
              ++s.before_allreduce[{g.m, g.n, g.k, static_cast<int>(g.dtype)}];
            }
            if (i + 1 < step.ops.size() && step.ops[i + 1].kind == OpKind::residual_add &&
                step.ops[i + 1].tokens * step.ops[i + 1].hidden * 2 == op.bytes)
              s.fused_hidden.insert(step.ops[i + 1].hidden);
            break;
          case OpKind::other:
            if (op.us) s.other_us.insert(*op.us);
            s.other_tp = std::max(s.other_tp, tp);
            break;
          case OpKind::grouped_gemm:
            break;  // no table in the simulator: priced by its model (see docs/fidelity.md)
          default:
            if (is_elementwise(op.kind)) {
              TraceShapes::ElementwiseUse& use = s.elementwise[{static_cast<int>(op.kind), op.hidden}];
              use.tokens.insert(op.tokens);
              use.tp = std::max(use.tp, tp);
            }
            break;
        }
      }
  }
  return s;
}

std::vector<std::int64_t> merged_grid(const std::vector<std::int64_t>& grid, const std::set<std::int64_t>& extra) {
  std::set<std::int64_t> all(grid.begin(), grid.end());
  all.insert(extra.begin(), extra.end());
  return {all.begin(), all.end()};
}

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

const std::vector<std::int64_t>& calibration_token_grid() {
  static const std::vector<std::int64_t> grid{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  return grid;
}

CalibrationRequest plan_calibration(const std::vector<Trace>& traces, const CalibrationPlanOptions& o) {
  if (o.ranks < 1) throw InputError(fmt::format("--ranks: expected at least 1, got {}", o.ranks));
  for (const auto& s : o.strategies)
    if (!is_calibratable_strategy(s))
      throw InputError(fmt::format("--strategy: calibrate cannot measure '{}' (it measures {})", s,
                                   fmt::join(calibratable_strategies(), ", ")));
  const TraceShapes s = collect(traces);
  if (s.gemm.empty() && s.attention.empty() && s.elementwise.empty() && s.allreduce.empty())
    throw InputError("calibrate: the traces contain no GEMM, attention, elementwise or allreduce op to measure");

  CalibrationRequest q;
  q.ranks = o.ranks;
  const auto& grid = calibration_token_grid();
  // Each compute op with the GPUs whose slowest time it takes (CalibrationRequest::compute_gpus).
  auto add_compute = [&](Op op, int tp) {
    q.compute.push_back(std::move(op));
    q.compute_gpus.push_back(std::clamp(tp, 1, o.ranks));
  };

  const std::vector<std::int64_t> ms = merged_grid(grid, s.gemm_m);
  for (const auto& [shape, tp] : s.gemm)
    for (std::int64_t m : ms) {
      const auto& [n, k, dt] = shape;
      Op g;
      g.kind = OpKind::gemm;
      g.name = "calibrate_gemm";
      g.m = m, g.n = n, g.k = k, g.dtype = static_cast<DType>(dt);
      add_compute(g, tp);
    }

  for (const auto& [key, use] : s.attention) {
    const std::set<std::int64_t>& used = use.kv;
    std::set<std::int64_t> kvs(used.begin(), used.end());
    const std::int64_t top = 2 * *used.rbegin();
    for (std::int64_t kv = o.min_kv_len; kv <= top; kv *= 2) kvs.insert(kv);
    kvs.insert(top);
    for (std::int64_t kv : kvs) {
      Op a = use.tmpl;
      a.name = "calibrate_attention";
      a.layer = -1;
      a.us.reset();
      a.kv_len = kv;
      add_compute(a, use.tp);
    }
  }

  for (const auto& [kh, use] : s.elementwise) {
    for (std::int64_t t : merged_grid(grid, use.tokens)) {
      Op e;
      e.kind = static_cast<OpKind>(kh.first);
      e.name = "calibrate_" + std::string(to_string(e.kind));
      e.tokens = t;
      e.hidden = kh.second;
      add_compute(e, use.tp);
    }
  }

  if (!s.other_us.empty()) {
    const double top = 2 * *s.other_us.rbegin();
    for (double us = kOtherMinUs; us <= top * kOtherGridFactor; us *= kOtherGridFactor) {
      Op e;
      e.kind = OpKind::other;
      e.name = "calibrate_other";
      e.us = std::round(us * 1000.0) / 1000.0;  // whole nanoseconds: the table's size unit
      add_compute(e, s.other_tp);
    }
  }

  // The GEMM most allreduces follow in the traces (o_proj / down_proj), else the first GEMM.
  if (!s.before_allreduce.empty()) {
    auto best = std::max_element(s.before_allreduce.begin(), s.before_allreduce.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    q.context_gemm.kind = OpKind::gemm;
    std::tie(q.context_gemm.m, q.context_gemm.n, q.context_gemm.k, std::ignore) = best->first;
    q.context_gemm.dtype = static_cast<DType>(std::get<3>(best->first));
  } else if (s.has_gemm) {
    q.context_gemm = s.first_gemm;
    q.context_gemm.kind = OpKind::gemm;
  } else {
    q.context_gemm.kind = OpKind::gemm;
    q.context_gemm.m = 4, q.context_gemm.n = 4096, q.context_gemm.k = 4096;
  }
  q.context_gemm.name = "calibrate_context_gemm";
  q.context_gemm.layer = -1;
  q.context_gemm.us.reset();
  const bool fused = o.ranks > 1 && std::find(o.strategies.begin(), o.strategies.end(), "fused") != o.strategies.end();
  q.transitions = transition_pairs(traces, fused);
  q.compute_layers = compute_layers(traces);
  for (ComputeLayerCase& c : q.compute_layers) c.gpus = std::clamp(c.gpus, 1, o.ranks);

  if (o.ranks > 1) {
    std::set<std::int64_t> exact;
    for (const auto& [b, dt] : s.allreduce) exact.insert(b);
    for (const auto& strategy : o.strategies) {
      std::set<std::int64_t> sizes;
      if (strategy == "fused") {
        // The fused kernel needs rows: tokens x hidden at the hidden sizes the traces reduce.
        std::set<std::int64_t> hiddens = s.fused_hidden;
        if (hiddens.empty()) hiddens.insert(4096);
        for (std::int64_t h : hiddens)
          for (std::int64_t t : grid) sizes.insert(t * h * 2);
        for (std::int64_t b : exact) sizes.insert(b);
      } else {
        for (std::int64_t b = o.min_allreduce_bytes; b <= o.max_allreduce_bytes; b *= 2) sizes.insert(b);
        sizes.insert(exact.begin(), exact.end());
      }
      for (std::int64_t b : sizes) {
        if (custom_strategy(strategy) && (b > kMaxCustomBytes || b % 16 != 0)) continue;
        AllreduceCase c;
        c.strategy = strategy;
        c.bytes = b;
        c.dtype = DType::bf16;
        if (strategy == "fused") {
          // Rows of a hidden size the traces use that divides the message, the largest first.
          std::set<std::int64_t> hiddens = s.fused_hidden;
          if (hiddens.empty()) hiddens.insert(4096);
          for (auto it = hiddens.rbegin(); it != hiddens.rend(); ++it)
            if (b % (*it * 2) == 0) { c.hidden = *it; break; }
          if (c.hidden == 0) continue;
          c.tokens = b / (c.hidden * 2);
        }
        q.allreduce.push_back(c);
      }
    }
    q.allreduce_contexts = allreduce_contexts(traces, o.strategies);
    q.allreduce_layers = allreduce_layers(traces, o.strategies, q.allreduce_contexts);
  }
  return q;
}

double layer_context_sum(const AllreduceLayerCase& layer, const CalibrationMeasurements& m) {
  double sum = 0;
  for (std::size_t c : layer.contexts) {
    const double us = c < m.allreduce_context_us.size() ? m.allreduce_context_us[c] : NAN;
    if (!std::isfinite(us) || us <= 0) return NAN;
    sum += us;
  }
  return sum;
}

Calibration build_calibration(const CalibrationRequest& q, const CalibrationMeasurements& m,
                              const std::vector<Trace>& traces) {
  if (m.compute_us.size() != q.compute.size() || m.allreduce_us.size() != q.allreduce.size() ||
      (!m.transition_us.empty() && m.transition_us.size() != q.transitions.size()) ||
      (!m.allreduce_context_us.empty() && m.allreduce_context_us.size() != q.allreduce_contexts.size()) ||
      (!m.allreduce_layer_us.empty() && m.allreduce_layer_us.size() != q.allreduce_layers.size()) ||
      (!m.compute_layer_us.empty() && m.compute_layer_us.size() != q.compute_layers.size()))
    throw std::invalid_argument("build_calibration: measurements do not match the request");
  const TraceShapes s = collect(traces);
  Calibration cal;
  cal.ranks = q.allreduce.empty() ? 0 : q.ranks;
  if (m.launch_gap_us > 0 && std::isfinite(m.launch_gap_us)) cal.launch_gap_us = m.launch_gap_us;

  // Kernel transitions: the mean per kind pair of what each measured (A, B) pair cost beyond
  // its two ops (either sign: a pair may also overlap a little).
  // Also per pair of shapes (token counts pooled), which the simulator prefers when it matches.
  std::map<std::string, std::pair<double, int>> transitions;
  for (std::size_t i = 0; i < m.transition_us.size(); ++i) {
    const double us = m.transition_us[i];
    if (!std::isfinite(us)) continue;
    const auto& [a, b] = q.transitions[i];
    for (const std::string& key : {transition_key(a.kind, b.kind), transition_key(a, b)}) {
      auto& [sum, n] = transitions[key];
      sum += us;
      ++n;
    }
  }
  for (const auto& [key, acc] : transitions)
    cal.transition_us[key] = std::clamp(acc.first / acc.second, -kMaxSequenceOverheadUs, kMaxSequenceOverheadUs);

  // Allreduces in their trace context: one entry per measured case (NaN: the strategy could
  // not run it on this machine).
  for (std::size_t i = 0; i < m.allreduce_context_us.size(); ++i) {
    const double us = m.allreduce_context_us[i];
    if (std::isfinite(us))
      cal.allreduce_context_us[q.allreduce_contexts[i].key] = std::clamp(us, -kMaxSequenceOverheadUs, kMaxCalUs);
  }

  // Scaled to the layers: every measured layer splits what its allreduces added to it over its
  // allreduces in proportion to their context entries; an entry in several layers takes the mean.
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

  std::map<std::tuple<std::int64_t, std::int64_t, int>, std::map<std::int64_t, Pending>> gemm;
  std::map<std::string, std::map<std::int64_t, Pending>> attention, elementwise, allreduce;

  for (std::size_t i = 0; i < q.compute.size(); ++i) {
    const Op& op = q.compute[i];
    const double us = m.compute_us[i];
    switch (op.kind) {
      case OpKind::gemm:
      case OpKind::lm_head:
        add_point(gemm[{op.n, op.k, static_cast<int>(op.dtype)}], op.m, us, s.gemm_m.count(op.m) > 0);
        break;
      case OpKind::attention: {
        const std::string key = attention_calibration_key_q(op);
        auto used = s.attention.find(key);
        add_point(attention[key], op.kv_len, us, used != s.attention.end() && used->second.kv.count(op.kv_len));
        break;
      }
      case OpKind::other:
        if (op.us) add_point(elementwise["other"], std::llround(*op.us * 1000.0), us, false);
        break;
      default:
        if (is_elementwise(op.kind)) {
          const std::int64_t elements = op.tokens * op.hidden;
          // Exact: this very (tokens, hidden) occurs in a trace, not merely its element count.
          auto used = s.elementwise.find({static_cast<int>(op.kind), op.hidden});
          add_point(elementwise[to_string(op.kind)], elements, us,
                    used != s.elementwise.end() && used->second.tokens.count(op.tokens) > 0);
        }
        break;
    }
  }
  std::set<std::int64_t> exact_ar;
  for (const auto& [b, dt] : s.allreduce) exact_ar.insert(b);
  for (std::size_t i = 0; i < q.allreduce.size(); ++i)
    add_point(allreduce[q.allreduce[i].strategy], q.allreduce[i].bytes, m.allreduce_us[i],
              exact_ar.count(q.allreduce[i].bytes) > 0);

  for (const auto& [key, table] : gemm)
    for (const SizeCalPoint& p : finish(table))
      cal.gemm.push_back({p.size, std::get<0>(key), std::get<1>(key), static_cast<DType>(std::get<2>(key)), p.us});
  for (const auto& [key, table] : attention)
    if (!table.empty()) cal.attention[key] = finish(table);
  for (const auto& [key, table] : elementwise)
    if (!table.empty()) cal.elementwise[key] = finish(table);
  for (const auto& [key, table] : allreduce)
    if (!table.empty()) cal.allreduce[key] = finish(table);
  if (cal.allreduce.empty()) cal.ranks = 0;

  cal.notes = fmt::format("eaglesim calibrate on {}: per-op µs = steady-state time per op in a CUDA graph of "
                          "back-to-back copies with rotating weights (inter-kernel gap included); allreduce = "
                          "in-context increment over a {}x{}x{} GEMM; {:.0f} s",
                          m.device, q.context_gemm.m, q.context_gemm.n, q.context_gemm.k, m.seconds);
  for (const auto& n : m.notes) cal.notes += "; " + n;
  return cal;
}

namespace {

// The consecutive compute-op pairs a step charges a transition for per copy of the layer: the
// layer's own, and its last op into the next copy's first.
std::vector<std::pair<const Op*, const Op*>> layer_pairs(const ComputeLayerCase& layer) {
  std::vector<std::pair<const Op*, const Op*>> pairs;
  const std::size_t n = layer.ops.size();
  for (std::size_t i = 0; i < n && n > 1; ++i) {
    const Op& a = layer.ops[(i + n - 1) % n];
    const Op& b = layer.ops[i];
    if (transition_kind(a.kind) && transition_kind(b.kind)) pairs.emplace_back(&a, &b);
  }
  return pairs;
}

double pairs_sum(const std::map<std::string, double>& table, const std::vector<std::pair<const Op*, const Op*>>& pairs) {
  double sum = 0;
  for (const auto& [a, b] : pairs) sum += find_transition(table, *a, *b).value_or(0.0);
  return sum;
}

using OpPairs = std::vector<std::pair<const Op*, const Op*>>;
using WantedEntries = std::map<std::string, std::pair<double, int>>;  // shape key -> (sum wanted, layers)

// One layer against its measured chain: its ops by the tables and its transitions. When the tables
// price every op (else that op's model error would land in the transitions) and the chain was
// measured, each of `shifted` (some of the layer's pairs) wants its entry moved, all by one amount,
// so that the layer's ops and transitions add up to the chain; `wanted` collects that.
LayerTransitionFit fit_layer(const ComputeLayerCase& layer, double measured_us, const Topology& topo,
                             const OpPairs& pairs, const OpPairs& shifted, WantedEntries& wanted) {
  const std::map<std::string, double>& table = topo.calibration.transition_us;
  LayerTransitionFit f;
  f.where = layer.where;
  f.measured_us = measured_us;
  bool by_tables = true;
  for (const Op& op : layer.ops) {
    const OpCost c = compute_cost(op, topo);
    f.ops_us += c.us;
    by_tables = by_tables && c.calibrated;
  }
  f.pairs_us = pairs_sum(table, pairs);
  f.pairs = static_cast<int>(pairs.size());
  f.fitted = by_tables && std::isfinite(measured_us) && measured_us > 0 && !shifted.empty();
  if (f.fitted) {
    const double shift = (measured_us - f.ops_us - f.pairs_us) / static_cast<double>(shifted.size());
    for (const auto& [a, b] : shifted) {
      auto& [sum, count] = wanted[transition_key(*a, *b)];
      sum += find_transition(table, *a, *b).value_or(0.0) + shift;
      ++count;
    }
  }
  return f;
}

// Every wanted entry becomes the mean of what its layers want (clamped to the table's range).
void set_wanted_means(const WantedEntries& wanted, std::map<std::string, double>& table) {
  for (const auto& [key, acc] : wanted)
    table[key] = std::clamp(acc.first / acc.second, -kMaxSequenceOverheadUs, kMaxSequenceOverheadUs);
}

}  // namespace

std::vector<LayerTransitionFit> fit_transitions_to_layers(const CalibrationRequest& q,
                                                          const CalibrationMeasurements& m, Topology& topo) {
  if (!m.compute_layer_us.empty() && m.compute_layer_us.size() != q.compute_layers.size())
    throw std::invalid_argument("fit_transitions_to_layers: measurements do not match the request");
  std::vector<LayerTransitionFit> fits;
  WantedEntries wanted;
  for (std::size_t l = 0; l < m.compute_layer_us.size(); ++l) {
    const OpPairs pairs = layer_pairs(q.compute_layers[l]);
    fits.push_back(fit_layer(q.compute_layers[l], m.compute_layer_us[l], topo, pairs, pairs, wanted));
  }
  set_wanted_means(wanted, topo.calibration.transition_us);
  // What each layer's transitions come to now (shared entries are means, so not exactly the fit).
  for (std::size_t l = 0; l < fits.size(); ++l)
    fits[l].fitted_us = pairs_sum(topo.calibration.transition_us, layer_pairs(q.compute_layers[l]));
  return fits;
}

ComputeLayerCase stripped_layer(const AllreduceLayerCase& layer) {
  // The second copy of a two-copy chain without its allreduces is what every copy after the first
  // runs in the chain calibrate times (its head ops went to the copy before it).
  const LayerChain chain = layer_chain(layer, 2);
  ComputeLayerCase out;
  out.where = layer.where;
  for (std::size_t j : chain.without)
    if (j >= layer.layer_size && j < 2 * layer.layer_size && !chain.ops[j].is_comm()) out.ops.push_back(chain.ops[j]);
  return out;
}

std::vector<LayerTransitionFit> fit_transitions_to_stripped_layers(const CalibrationRequest& q,
                                                                   const CalibrationMeasurements& m, Topology& topo) {
  if (!m.allreduce_layer_baseline_us.empty() && m.allreduce_layer_baseline_us.size() != q.allreduce_layers.size())
    throw std::invalid_argument("fit_transitions_to_stripped_layers: measurements do not match the request");
  std::set<std::string> compute_layer_keys;
  for (const ComputeLayerCase& layer : q.compute_layers)
    for (const auto& [a, b] : layer_pairs(layer)) compute_layer_keys.insert(transition_key(*a, *b));
  std::vector<LayerTransitionFit> fits;
  std::vector<ComputeLayerCase> layers;
  WantedEntries wanted;
  std::set<std::string> seen;  // one fit per stripped layer (several strategies may share it)
  for (std::size_t l = 0; l < m.allreduce_layer_baseline_us.size(); ++l) {
    // Verify steps only, as for compute layers: entries pool token counts.
    if (q.allreduce_layers[l].step != "verify") continue;
    ComputeLayerCase layer = stripped_layer(q.allreduce_layers[l]);
    const OpPairs pairs = layer_pairs(layer);
    OpPairs own;  // the pairs only stripped layers have
    for (const auto& p : pairs)
      if (!compute_layer_keys.count(transition_key(*p.first, *p.second))) own.push_back(p);
    std::string signature;
    for (const Op& op : layer.ops) signature += op_signature(op);
    if (own.empty() || !seen.insert(signature).second) continue;
    layer.where += " without its allreduces (" + q.allreduce_layers[l].strategy + ")";
    fits.push_back(fit_layer(layer, m.allreduce_layer_baseline_us[l], topo, pairs, own, wanted));
    layers.push_back(std::move(layer));
  }
  set_wanted_means(wanted, topo.calibration.transition_us);
  for (std::size_t l = 0; l < fits.size(); ++l)
    fits[l].fitted_us = pairs_sum(topo.calibration.transition_us, layer_pairs(layers[l]));
  return fits;
}

std::string base_preset_for(const std::string& gpu_name, int count) {
  std::string up;
  for (char c : gpu_name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto has = [&](const char* s) { return up.find(s) != std::string::npos; };
  if (has("H200")) return count <= 2 ? "2x-h200-nvlink" : "8x-h200-nvswitch";
  if (has("H100")) return "8x-h100-nvswitch";
  if (has("B200")) return "8x-b200-nvswitch";
  if (has("A100")) return "8x-a100-nvswitch";
  if (has("L40S")) return "8x-l40s-pcie4";
  if (has("RTX PRO 6000")) return count <= 4 ? "4x-rtx-pro-6000-pcie5" : "8x-rtx-pro-6000-pcie5";
  return "";
}

Topology calibrated_topology(const Topology& base, const CalibrationMeasurements& m, Calibration cal) {
  Topology t = base;
  const int ranks = std::max(1, m.ranks);
  if (ranks < t.gpu_count) {
    // A calibration on fewer GPUs describes a machine of that many: keep the first `ranks`.
    t.gpu_count = ranks;
    std::vector<std::vector<int>> groups;
    for (const auto& g : t.switch_groups) {
      std::vector<int> kept;
      for (int gpu : g)
        if (gpu < ranks) kept.push_back(gpu);
      if (!kept.empty()) groups.push_back(kept);
    }
    t.switch_groups = groups;
    if (static_cast<int>(t.socket_of_gpu.size()) > ranks) t.socket_of_gpu.resize(static_cast<std::size_t>(ranks));
  }
  t.name = fmt::format("{}-calibrated-{}gpu", base.name, t.gpu_count);
  t.description = fmt::format("{} (static fields from preset {}), calibrated on {}", base.description, base.name,
                              m.device);
  t.file.clear();
  t.calibration = std::move(cal);
  if (t.calibration.ranks > t.gpu_count) t.calibration.ranks = t.gpu_count;
  return t;
}

}  // namespace eaglesim
