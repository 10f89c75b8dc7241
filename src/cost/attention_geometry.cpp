#include "cost/attention_geometry.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <stdexcept>

namespace eaglesim {

namespace {

// Resident blocks per SM the decode kernel's split heuristic aims at (decode_attention_split).
constexpr int kDecodeBlocksPerSm = 2;
// Shapes remembered per thread before the memo starts over.
constexpr std::size_t kMemoLimit = 1 << 14;

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// Blocks of `lengths` (longest first) onto `slots` slots, each onto the slot that frees first (the
// hardware block scheduler): the KV positions of the busiest slot.
double list_schedule_tokens(const std::vector<std::pair<int, long long>>& lengths_and_copies, double slots) {
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  const long long n = static_cast<long long>(std::max(1.0, slots));
  for (long long i = 0; i < n; ++i) free_at.push(0.0);
  double makespan = 0;
  for (const auto& [len, copies] : lengths_and_copies)
    for (long long c = 0; c < copies; ++c) {
      const double t = free_at.top() + len;
      free_at.pop();
      free_at.push(t);
      makespan = std::max(makespan, t);
    }
  return makespan;
}

AttentionGeometry verify_geometry(const VerifyAttentionShape& shape, const std::vector<std::int32_t>& kv, int sms) {
  VerifyAttentionDevice dev;
  dev.sms = sms;
  const VerifyAttentionPlan plan = plan_verify_attention(shape, kv, dev);
  AttentionGeometry g;
  g.verify_kernel = true;
  g.blocks = static_cast<double>(plan.grid_blocks());
  g.slots = static_cast<double>(sms) * plan.kernel.blocks_per_sm;
  g.waves = std::ceil(g.blocks / g.slots);
  g.active_sms = std::min<double>(g.blocks, sms);
  const long long per_item = static_cast<long long>(shape.kv_heads) * plan.kernel.row_chunks;
  std::vector<std::pair<int, long long>> items;
  items.reserve(plan.work.size());
  for (const VerifyAttentionWorkItem& w : plan.work) items.emplace_back(w.kv_end - w.kv_begin, per_item);
  g.crit_tokens = list_schedule_tokens(items, g.slots);
  g.rows_computed = static_cast<double>(plan.kernel.row_chunks) * plan.kernel.rows_per_block;
  g.rows_per_block = plan.kernel.rows_per_block;
  g.combine = !plan.combine.empty();
  g.partial_bytes = static_cast<double>(plan.num_slots) * shape.q_tokens * shape.heads * (4.0 * shape.head_dim_v + 4.0);
  g.block_bytes_per_token = shape.kind == VerifyAttentionKind::mla ? 2.0 * shape.head_dim_qk
                                                                     : 2.0 * (shape.head_dim_qk + shape.head_dim_v);
  return g;
}

// One causal request per block row, as cuda/ops/replay_kernels.cu launches it (a batch counted as
// that many such launches' blocks).
AttentionGeometry decode_geometry(const Op& op, int sms) {
  const bool mla = op.variant == AttentionVariant::mla;
  const int heads = static_cast<int>(std::max<std::int64_t>(1, op.heads));
  const int kv_heads = mla ? 1 : static_cast<int>(std::max<std::int64_t>(1, op.kv_heads));
  const int dk = static_cast<int>(mla ? op.kv_lora_rank + op.rope_dim : op.head_dim);
  const int dv = static_cast<int>(mla ? op.kv_lora_rank : op.head_dim);
  const int rows = heads / kv_heads * static_cast<int>(std::max<std::int64_t>(1, op.q_tokens));
  const int kv = static_cast<int>(std::max<std::int64_t>(1, op.kv_len));
  const DecodeAttentionSplit s = decode_attention_split(kv, decode_attention_tile(dk, mla), kv_heads, rows, sms);
  const double batch = std::max(1, op.batch);
  AttentionGeometry g;
  g.verify_kernel = false;
  g.blocks = batch * s.splits * kv_heads * s.row_blocks;
  g.slots = static_cast<double>(sms) * kDecodeBlocksPerSm;
  g.waves = std::ceil(g.blocks / g.slots);
  g.active_sms = std::min<double>(g.blocks, sms);
  g.crit_tokens = g.waves * s.split_len;
  g.rows_computed = static_cast<double>(s.row_blocks) * kDecodeAttentionRowsPerBlock;
  g.rows_per_block = kDecodeAttentionRowsPerBlock;
  g.combine = true;  // the decode kernel always runs its combine
  g.partial_bytes = batch * s.splits * static_cast<double>(op.q_tokens) * heads * (dv + 2.0) * 4.0;
  g.block_bytes_per_token = mla ? 2.0 * dk : 2.0 * (dk + dv);
  return g;
}

}  // namespace

DecodeAttentionSplit decode_attention_split(int kv_len, int tile, int kv_heads, int rows_per_kv_head, int sms) {
  DecodeAttentionSplit p;
  p.row_blocks = static_cast<int>(ceil_div(std::max(1, rows_per_kv_head), kDecodeAttentionRowsPerBlock));
  const int per_split = std::max(1, kv_heads) * p.row_blocks;
  const int max_splits = static_cast<int>(ceil_div(std::max(1, kv_len), tile));
  const int want = std::max(1, static_cast<int>(ceil_div(static_cast<long long>(kDecodeBlocksPerSm) * sms, per_split)));
  const int splits = std::min(max_splits, want);
  const long long len = ceil_div(ceil_div(std::max(1, kv_len), splits), tile) * tile;
  p.split_len = static_cast<int>(len);
  p.splits = static_cast<int>(ceil_div(std::max(1, kv_len), len));
  return p;
}

VerifyAttentionShape verify_attention_shape(const Op& op) {
  VerifyAttentionShape shape;
  shape.batch = static_cast<int>(op.batch);
  shape.q_tokens = static_cast<int>(op.q_tokens);
  shape.heads = static_cast<int>(op.heads);
  if (op.variant == AttentionVariant::mla) {
    shape.kind = VerifyAttentionKind::mla;
    shape.kv_heads = 1;
    shape.head_dim_qk = static_cast<int>(op.kv_lora_rank + op.rope_dim);
    shape.head_dim_v = static_cast<int>(op.kv_lora_rank);
  } else {
    shape.kind = VerifyAttentionKind::gqa;
    shape.kv_heads = static_cast<int>(op.kv_heads);
    shape.head_dim_qk = shape.head_dim_v = static_cast<int>(op.head_dim);
  }
  return shape;
}

std::vector<std::int32_t> verify_attention_kv_lens(const Op& op) {
  std::vector<std::int32_t> kv(static_cast<std::size_t>(std::max(1, op.batch)), static_cast<std::int32_t>(op.kv_len));
  if (!op.kv_lens.empty())
    for (std::size_t r = 0; r < kv.size() && r < op.kv_lens.size(); ++r) kv[r] = static_cast<std::int32_t>(op.kv_lens[r]);
  return kv;
}

AttentionGeometry persistent_attention_geometry(const Op& op, int sms) {
  if (op.variant != AttentionVariant::gqa)
    throw std::invalid_argument("persistent_attention_geometry: op '" + op.name + "' is not GQA attention");
  sms = std::max(1, sms);
  const long long heads = std::max<std::int64_t>(1, op.heads);
  const long long row_tiles = ceil_div(std::max<std::int64_t>(1, op.q_tokens), kPersistentAttentionTileRows);
  // Tiles by their request's KV length (longest first for the list schedule); the busiest CTA's
  // steps come from the same schedule over the lengths in steps.
  std::map<int, long long, std::greater<int>> tiles_by_len;
  for (std::int32_t len : verify_attention_kv_lens(op)) tiles_by_len[std::max(1, len)] += heads * row_tiles;
  std::vector<std::pair<int, long long>> items, steps;
  long long tiles = 0;
  for (const auto& [len, n] : tiles_by_len) {
    items.emplace_back(len, n);
    steps.emplace_back(static_cast<int>(ceil_div(len, kPersistentAttentionTileKeys)), n);
    tiles += n;
  }
  AttentionGeometry g;
  g.verify_kernel = false;
  g.blocks = static_cast<double>(tiles);
  g.slots = static_cast<double>(sms);
  g.waves = std::ceil(g.blocks / g.slots);
  g.active_sms = std::min<double>(g.blocks, sms);
  g.crit_tokens = list_schedule_tokens(items, g.slots);
  g.crit_steps = list_schedule_tokens(steps, g.slots);
  g.rows_computed = static_cast<double>(row_tiles) * kPersistentAttentionTileRows *
                    static_cast<double>(heads) / static_cast<double>(std::max<std::int64_t>(1, op.kv_heads));
  g.rows_per_block = kPersistentAttentionTileRows;
  g.combine = false;
  g.partial_bytes = 0;
  g.block_bytes_per_token = 2.0 * 2.0 * static_cast<double>(op.head_dim);  // K and V, bf16
  return g;
}

AttentionGeometry attention_geometry(const Op& op, int sms) {
  sms = std::max(1, sms);
  const VerifyAttentionShape shape = verify_attention_shape(op);
  const std::vector<std::int32_t> kv = verify_attention_kv_lens(op);
  std::vector<std::int64_t> key{static_cast<int>(shape.kind), shape.batch, shape.q_tokens, shape.heads, shape.kv_heads,
                                shape.head_dim_qk, shape.head_dim_v, sms, op.kv_len};
  key.insert(key.end(), kv.begin(), kv.end());
  thread_local std::map<std::vector<std::int64_t>, AttentionGeometry> memo;
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  AttentionGeometry g;
  try {
    g = verify_geometry(shape, kv, sms);
  } catch (const std::invalid_argument&) {  // a shape the verify kernel does not take
    g = decode_geometry(op, sms);
  }
  if (memo.size() >= kMemoLimit) memo.clear();
  memo.emplace(std::move(key), g);
  return g;
}

}  // namespace eaglesim
