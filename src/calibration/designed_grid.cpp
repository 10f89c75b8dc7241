#include "calibration/designed_grid.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "calibration/trace_shapes.hpp"
#include "model/generator.hpp"
#include "trace/eagle_tree.hpp"
#include "topology/calibration_keys.hpp"

namespace eaglesim {

namespace {

const std::vector<std::int64_t>& attention_q_tokens(GridDensity d) {
  static const std::vector<std::int64_t> coarse{1, 4, 16, 64}, full{1, 2, 4, 8, 16, 32, 64};
  return d == GridDensity::full ? full : coarse;
}

const std::vector<std::int64_t>& attention_kv(GridDensity d) {
  static const std::vector<std::int64_t> coarse{512, 2048, 8192, 32768},
      full{512, 1024, 2048, 4096, 8192, 16384, 32768};
  return d == GridDensity::full ? full : coarse;
}

// The batch x tree verify shapes of the serving engines (issue 25's traces): per request, the
// query tokens and mask of a speculative configuration (steps, topk, draft tokens), a batch of
// requests with ragged KV around a mean.
struct BatchPoint {
  int steps, topk, tokens;
};
const std::vector<BatchPoint>& batch_configs() {
  static const std::vector<BatchPoint> c{{0, 1, 1}, {3, 1, 4}, {5, 4, 8}, {6, 8, 32}};  // decode, chain, trees
  return c;
}
const std::vector<std::int32_t>& attention_batches(GridDensity d) {
  static const std::vector<std::int32_t> coarse{8, 64}, full{2, 8, 32, 64};
  return d == GridDensity::full ? full : coarse;
}
const std::vector<std::int64_t>& attention_batch_kv(GridDensity d) {
  static const std::vector<std::int64_t> coarse{512, 4096}, full{512, 2048, 8192};
  return d == GridDensity::full ? full : coarse;
}

// Ragged lengths with the given mean: 0.5, 0.75, 1, 1.25, 1.5 of it in turn (a multiple of 16),
// each at least the query tokens.
std::vector<std::int64_t> ragged_kv(int batch, std::int64_t mean, std::int64_t q_tokens) {
  static const double spread[] = {0.5, 0.75, 1.0, 1.25, 1.5};
  std::vector<std::int64_t> lens;
  for (int r = 0; r < batch; ++r) {
    const std::int64_t len = static_cast<std::int64_t>(spread[r % 5] * static_cast<double>(mean)) / 16 * 16;
    lens.push_back(std::max(len, q_tokens));
  }
  return lens;
}

Op elementwise_op(OpKind kind, std::int64_t tokens, std::int64_t hidden) {
  Op e;
  e.kind = kind;
  e.name = std::string("grid_") + to_string(kind);
  e.tokens = tokens;
  e.hidden = hidden;
  return e;
}

}  // namespace

bool parse_grid_density(const std::string& name, GridDensity& out) {
  if (name == "traces") out = GridDensity::traces;
  else if (name == "coarse") out = GridDensity::coarse;
  else if (name == "full") out = GridDensity::full;
  else return false;
  return true;
}

const std::vector<std::int64_t>& grid_rows(GridDensity d) {
  static const std::vector<std::int64_t> coarse{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  static const std::vector<std::int64_t> full{1,   2,   3,   4,    6,    8,    12,   16,   24,
                                              32,  48,  64,  96,   128,  192,  256,  384,  512,
                                              768, 1024, 1536, 2048, 3072, 4096};
  return d == GridDensity::full ? full : coarse;
}

std::vector<DType> grid_weight_dtypes(const std::vector<Trace>& traces) {
  std::set<DType> formats;
  for (const Trace& t : traces) formats.insert(t.meta.weight_dtype.value_or(DType::bf16));
  std::vector<DType> out;
  if (formats.empty() || formats.erase(DType::bf16) > 0) out.push_back(DType::bf16);
  out.insert(out.end(), formats.begin(), formats.end());
  return out;
}

DesignedGrid designed_grid(const std::vector<Trace>& family_traces, GridDensity d) {
  DesignedGrid g;
  if (d == GridDensity::traces || family_traces.empty()) return g;
  std::set<std::tuple<std::int64_t, std::int64_t, int>> gemms;
  std::map<std::string, Op> layouts;  // attention_calibration_key -> a template op
  std::set<std::pair<int, std::int64_t>> elementwise;
  std::set<std::int64_t> norm_widths;
  // Grouped (MoE) GEMMs: (n, k, dtype, routed experts, experts per token). The grid models'
  // traces have one token per step, so an op's routed rows are its experts per token, and the
  // router GEMM before it has one output per routed expert.
  std::set<std::tuple<std::int64_t, std::int64_t, int, std::int64_t, std::int64_t>> grouped;
  for (const Trace& t : family_traces)
    for (const Step& s : t.steps) {
      // In trace order: the embedding (the step's tokens) and each layer's router come before
      // the layer's expert GEMMs.
      std::int64_t step_tokens = 0, routed_experts = 0;
      for (const Op& op : s.ops) {
        if (op.kind == OpKind::embedding && step_tokens == 0) step_tokens = op.tokens;
        if (op.kind == OpKind::gemm && op.name == "router") routed_experts = op.n;
        if (op.kind == OpKind::grouped_gemm && step_tokens > 0 && routed_experts > 0 && op.tokens % step_tokens == 0)
          grouped.insert({op.n, op.k, static_cast<int>(op.dtype), routed_experts, op.tokens / step_tokens});
        if (op.kind == OpKind::gemm || op.kind == OpKind::lm_head)
          gemms.insert({op.n, op.k, static_cast<int>(op.dtype)});
        else if (op.kind == OpKind::attention)
          layouts.emplace(attention_calibration_key(op), op);
        else if (is_elementwise(op.kind))
          elementwise.insert({static_cast<int>(op.kind), elementwise_table_width(op)});
        if (op.kind == OpKind::rmsnorm) norm_widths.insert(op.hidden);
      }
    }
  const auto& rows = grid_rows(d);
  for (const auto& [n, k, dt] : gemms)
    for (std::int64_t m : rows) {
      if (2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) > kGridMaxGemmFlops) continue;
      Op op;
      op.kind = OpKind::gemm;
      op.name = "grid_gemm";
      op.m = m, op.n = n, op.k = k, op.dtype = static_cast<DType>(dt);
      g.compute.push_back(op);
    }
  // Tokens per step over the same grid as the GEMM rows, routed as the generator routes them
  // (tokens x experts per token rows over the experts a uniform router touches).
  for (const auto& [n, k, dt, experts, per_token] : grouped)
    for (std::int64_t tokens : rows) {
      const std::int64_t routed = tokens * per_token;
      if (2.0 * static_cast<double>(routed) * static_cast<double>(n) * static_cast<double>(k) > kGridMaxGemmFlops) continue;
      Op op;
      op.kind = OpKind::grouped_gemm;
      op.name = "grid_grouped_gemm";
      op.tokens = routed;
      op.experts = experts_touched(experts, per_token, tokens);
      op.n = n, op.k = k, op.dtype = static_cast<DType>(dt);
      if (op.weight_bytes() > kGridMaxGroupedWeightBytes) continue;
      g.compute.push_back(op);
    }
  for (const auto& [key, tmpl] : layouts)
    for (std::int64_t q : attention_q_tokens(d))
      for (std::int64_t kv : attention_kv(d)) {
        Op a = tmpl;
        a.name = "grid_attention";
        a.layer = -1;
        a.us.reset();
        a.batch = 1;
        a.kv_lens.clear();
        a.mask = AttentionMask::causal;
        a.q_tokens = q;
        a.kv_len = kv;
        g.compute.push_back(a);
      }
  // Batches (ragged KV, chain and tree masks) over the same layouts; the verify kernel takes at
  // most kMaxGridBatchPositions positions per point here (64 requests x 4096).
  for (const auto& [key, tmpl] : layouts) {
    for (const BatchPoint& c : batch_configs())
      for (std::int32_t b : attention_batches(d))
        for (std::int64_t kv : attention_batch_kv(d)) {
          if (static_cast<double>(b) * static_cast<double>(kv) > kGridMaxBatchPositions) continue;
          Op a = tmpl;
          a.name = kGridBatchAttentionName;
          a.layer = -1;
          a.us.reset();
          a.batch = b;
          a.q_tokens = c.tokens;
          a.kv_lens = ragged_kv(b, kv, c.tokens);
          a.kv_len = *std::max_element(a.kv_lens.begin(), a.kv_lens.end());
          a.mask = c.topk > 1 ? AttentionMask::tree : AttentionMask::causal;
          g.compute.push_back(a);
        }
  }
  for (const BatchPoint& c : batch_configs())
    if (c.topk > 1) g.verify_trees.push_back(derive_eagle_tree(c.steps, c.topk, c.tokens));
  for (const auto& [kind, hidden] : elementwise)
    for (std::int64_t t : rows) g.compute.push_back(elementwise_op(static_cast<OpKind>(kind), t, hidden));
  for (std::int64_t hidden : norm_widths)
    for (std::int64_t t : rows) g.add_rmsnorm.push_back(elementwise_op(OpKind::residual_add, t, hidden));
  return g;
}

}  // namespace eaglesim
