#include "cost/verify_attention_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <queue>
#include <sstream>
#include <stdexcept>

namespace eaglesim {

namespace cfg = verify_attention_config;

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("verify attention: " + what); }

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }
int round_up(long long a, long long b) { return static_cast<int>((a + b - 1) / b * b); }
std::size_t align256(std::size_t x) { return (x + 255) / 256 * 256; }

// One candidate split length: the items it makes (unsorted) and whether any request splits.
struct Split {
  int chunk = 0;
  std::vector<VerifyAttentionWorkItem> items;
  std::vector<std::int32_t> splits;
};

// Requests of length L get n = ceil(L / chunk) splits of equal tile-aligned length (the last
// one shorter), so that one long request's blocks are as alike as possible.
Split make_split(const std::vector<std::int32_t>& kv_len, int chunk) {
  Split s;
  s.chunk = chunk;
  s.splits.resize(kv_len.size());
  for (std::size_t r = 0; r < kv_len.size(); ++r) {
    const int len = kv_len[r];
    int n = ceil_div(len, chunk);
    const int each = round_up(ceil_div(len, n), cfg::kSplitQuantum);
    n = ceil_div(len, each);
    s.splits[r] = n;
    for (int i = 0; i < n; ++i) {
      VerifyAttentionWorkItem w;
      w.request = static_cast<std::int32_t>(r);
      w.kv_begin = i * each;
      w.kv_end = std::min(len, (i + 1) * each);
      w.slot = i;  // the split's index within its request until the plan assigns slots
      s.items.push_back(w);
    }
  }
  return s;
}

struct CostModel {
  double bytes_per_token = 0;  // K/V bytes one block reads per KV position
  double flops_per_token = 0;  // matrix FLOPs one block does per KV position
  double partial_bytes = 0;    // what one block of a split request writes (fp32 partial + lse)
  double block_bw_cap = 0;     // bytes/s one block can pull on its own (bytes in flight / latency)
  int slots = 0;
  int sms = 0;
  const VerifyAttentionDevice* dev = nullptr;
};

// The blocks in launch order (longest first), each placed on the slot that frees first: what
// the hardware block scheduler does. Returns the makespan in microseconds.
double simulate(const CostModel& m, const std::vector<VerifyAttentionWorkItem>& items_sorted,
                const std::vector<std::int32_t>& splits, int blocks_per_item) {
  const long long total = static_cast<long long>(items_sorted.size()) * blocks_per_item;
  const double concurrent = static_cast<double>(std::min<long long>(total, m.slots));
  const double per_sm = std::ceil(concurrent / m.sms);  // the scheduler spreads blocks over SMs first
  const double bw = std::min({m.block_bw_cap, m.dev->sm_bytes_per_s / per_sm, m.dev->hbm_bytes_per_s / concurrent});
  const double flops = m.dev->mma_flops_per_s / std::max<double>(m.sms, concurrent);
  // Loads and tensor work overlap: a block costs the larger of the two, its tiles computed whole.
  const double bytes_us = 1e6 * m.bytes_per_token / bw, flops_us = 1e6 * m.flops_per_token / flops;
  const double partial_us = 1e6 * m.partial_bytes / bw;
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int i = 0; i < m.slots; ++i) free_at.push(0.0);
  double makespan = 0;
  for (const auto& w : items_sorted) {
    const int len = w.kv_end - w.kv_begin;
    const double d = m.dev->block_start_us + std::max(len * bytes_us, round_up(len, cfg::kTileKv) * flops_us) +
                     (splits[w.request] > 1 ? partial_us : 0.0);
    for (int b = 0; b < blocks_per_item; ++b) {
      const double t = free_at.top() + d;
      free_at.pop();
      free_at.push(t);
      makespan = std::max(makespan, t);
    }
  }
  return makespan;
}

int warps_for(int max_splits, int head_dim_v) {
  const int u = cfg::combine_unroll(head_dim_v);
  int w = 1;
  while (w < 8 && 2 * w * u < max_splits) w *= 2;
  return w;
}

// The combine launch (overlapped with the attention grid's tail by PDL): its rounds of loads
// in flight, then every partial once at the bandwidth of the SMs its blocks occupy.
double combine_us(const VerifyAttentionDevice& dev, const VerifyAttentionShape& shape, const Split& s) {
  int max_splits = 0;
  double partial_rows = 0, rows = 0;
  const double per_req = static_cast<double>(shape.q_tokens) * shape.heads;
  for (int n : s.splits)
    if (n > 1) {
      max_splits = std::max(max_splits, n);
      partial_rows += n * per_req;
      rows += per_req;
    }
  if (max_splits == 0) return 0;
  const int w = warps_for(max_splits, shape.head_dim_v);
  const int rounds = ceil_div(ceil_div(max_splits, w), cfg::combine_unroll(shape.head_dim_v));
  const double blocks = std::ceil(rows * w / 8.0) * cfg::combine_column_slices(shape.head_dim_v);
  const double bw = std::min(dev.hbm_bytes_per_s, std::min<double>(blocks, dev.sms) * dev.sm_bytes_per_s);
  const double bytes = partial_rows * (4.0 * shape.head_dim_v + 4.0) + rows * 2.0 * shape.head_dim_v;
  return 0.5 * dev.launch_us + rounds * dev.combine_round_us + 1e6 * bytes / bw;
}

void sort_longest_first(std::vector<VerifyAttentionWorkItem>& items) {
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return (a.kv_end - a.kv_begin) > (b.kv_end - b.kv_begin);
  });
}

}  // namespace

const char* variant_name(VerifyAttentionVariant v) {
  switch (v) {
    case VerifyAttentionVariant::gqa_d64_r16: return "gqa_d64_r16";
    case VerifyAttentionVariant::gqa_d64_r32: return "gqa_d64_r32";
    case VerifyAttentionVariant::gqa_d64_r64: return "gqa_d64_r64";
    case VerifyAttentionVariant::gqa_d128_r16: return "gqa_d128_r16";
    case VerifyAttentionVariant::gqa_d128_r32: return "gqa_d128_r32";
    case VerifyAttentionVariant::gqa_d128_r64: return "gqa_d128_r64";
    case VerifyAttentionVariant::mla_r16: return "mla_r16";
    case VerifyAttentionVariant::mla_r32: return "mla_r32";
  }
  return "?";
}

void validate_verify_attention_shape(const VerifyAttentionShape& s) {
  if (s.batch < 1) fail("batch must be >= 1");
  if (s.q_tokens < 1 || s.q_tokens > cfg::kMaxQTokens) fail("q_tokens must be in 1..32 (one mask word per row)");
  if (s.heads < 1 || s.kv_heads < 1) fail("heads and kv_heads must be >= 1");
  if (s.kind == VerifyAttentionKind::gqa) {
    if (s.heads % s.kv_heads != 0) fail("heads must be a multiple of kv_heads");
    if (s.head_dim_qk != s.head_dim_v) fail("GQA needs head_dim_qk == head_dim_v");
    if (s.head_dim_qk != 64 && s.head_dim_qk != 128) fail("GQA head dim must be 64 or 128");
  } else {
    if (s.kv_heads != 1) fail("MLA has one latent KV head");
    if (s.head_dim_qk != cfg::kMlaDk || s.head_dim_v != cfg::kMlaDv) fail("MLA needs head dims 576 (q/k) and 512 (v)");
  }
}

VerifyAttentionKernelConfig choose_verify_attention_kernel(const VerifyAttentionShape& s) {
  validate_verify_attention_shape(s);
  VerifyAttentionKernelConfig k;
  const long long rows = static_cast<long long>(s.heads / s.kv_heads) * s.q_tokens;  // rows per KV head
  if (s.kind == VerifyAttentionKind::gqa) {
    // Warps take 16 rows each (4 warps); the rest of a warp's work is its share of the KV tile.
    const int r = rows <= 16 ? 16 : rows <= 32 ? 32 : 64;
    const bool d64 = s.head_dim_qk == 64;
    const int base = d64 ? static_cast<int>(VerifyAttentionVariant::gqa_d64_r16)
                         : static_cast<int>(VerifyAttentionVariant::gqa_d128_r16);
    k.variant = static_cast<VerifyAttentionVariant>(base + (r == 16 ? 0 : r == 32 ? 1 : 2));
    k.rows_per_block = r;
    k.threads = cfg::kGqaThreads;
    k.blocks_per_sm = cfg::gqa_blocks_per_sm(s.head_dim_qk);
    k.smem_bytes = cfg::gqa_smem_bytes(s.head_dim_qk);
  } else {
    // Q fragments live in registers (rows x 144 columns per warp): 32 rows is the most that fits.
    const int r = rows <= 16 ? 16 : 32;
    k.variant = r == 16 ? VerifyAttentionVariant::mla_r16 : VerifyAttentionVariant::mla_r32;
    k.rows_per_block = r;
    k.threads = cfg::kMlaThreads;
    k.blocks_per_sm = 1;
    k.smem_bytes = cfg::mla_smem_bytes(r);
  }
  k.row_chunks = ceil_div(rows, k.rows_per_block);
  return k;
}

VerifyAttentionPlan plan_verify_attention(const VerifyAttentionShape& shape, const std::vector<std::int32_t>& kv_len,
                                          const VerifyAttentionDevice& dev, const VerifyAttentionPlanOptions& opt) {
  validate_verify_attention_shape(shape);
  if (static_cast<int>(kv_len.size()) != shape.batch) fail("kv_len must have batch entries");
  for (std::size_t r = 0; r < kv_len.size(); ++r)
    if (kv_len[r] < shape.q_tokens)
      fail("request " + std::to_string(r) + ": kv_len " + std::to_string(kv_len[r]) + " < q_tokens " +
           std::to_string(shape.q_tokens) + " (the draft tokens are part of the KV)");
  if (dev.sms < 1) fail("device needs >= 1 SM");

  VerifyAttentionPlan plan;
  plan.shape = shape;
  plan.kernel = choose_verify_attention_kernel(shape);
  const auto& k = plan.kernel;
  const int blocks_per_item = shape.kv_heads * k.row_chunks;

  CostModel m;
  m.dev = &dev;
  m.sms = dev.sms;
  m.slots = dev.sms * k.blocks_per_sm;
  if (shape.kind == VerifyAttentionKind::gqa) {
    m.bytes_per_token = 2.0 * (shape.head_dim_qk + shape.head_dim_v);
    m.block_bw_cap = (cfg::kGqaStages - 1) * 2.0 * cfg::kTileKv * 2 * shape.head_dim_qk / (dev.memory_latency_us * 1e-6);
  } else {
    m.bytes_per_token = 2.0 * shape.head_dim_qk;
    // Capped at one 64-position step (two slots, 74.75 KB) per memory latency, the calibrated
    // rate. The ring keeps three slots in flight, but this model has no latency growth under
    // load: with a three-slot cap it picks fewer, longer blocks that leave a third of the SMs
    // idle and relies on each pulling 49 GB/s.
    m.block_bw_cap = 2 * static_cast<double>(cfg::mla_slot_bytes()) / (dev.memory_latency_us * 1e-6);
  }
  m.flops_per_token = 2.0 * k.rows_per_block * (shape.head_dim_qk + shape.head_dim_v);
  m.partial_bytes = static_cast<double>(k.rows_per_block) * (4.0 * shape.head_dim_v + 4.0);

  const int max_len = *std::max_element(kv_len.begin(), kv_len.end());
  std::vector<int> candidates;
  if (opt.chunk_tokens > 0) {
    candidates.push_back(round_up(opt.chunk_tokens, cfg::kSplitQuantum));
  } else {
    // Split lengths that cut the longest request into n equal tile-aligned pieces; stop once the
    // grid holds many waves (finer splits then only add partial traffic).
    const long long cap_blocks = 16LL * m.slots;
    int last = -1;
    for (int n = 1;; n += std::max(1, n / 32)) {  // every n up to 32, then ~3% steps
      const int c = round_up(ceil_div(max_len, n), cfg::kSplitQuantum);
      if (c != last) {
        long long blocks = 0;
        for (int len : kv_len) blocks += static_cast<long long>(ceil_div(len, c)) * blocks_per_item;
        if (n > 1 && blocks > cap_blocks) break;
        candidates.push_back(c);
        last = c;
      }
      if (c <= cfg::kSplitQuantum) break;
      if (n > 4096) break;
    }
  }

  double best = 0;
  Split chosen;
  for (int c : candidates) {
    Split s = make_split(kv_len, c);
    sort_longest_first(s.items);
    const double est = dev.launch_us + simulate(m, s.items, s.splits, blocks_per_item) + combine_us(dev, shape, s);
    if (chosen.items.empty() || est < best * (1 - 1e-9)) {
      best = est;
      chosen = std::move(s);
    }
  }

  plan.chunk_tokens = chosen.chunk;
  plan.estimated_us = best;
  plan.splits_per_request = chosen.splits;
  std::vector<std::int32_t> slot_base(kv_len.size(), -1);
  int slots = 0;
  for (std::size_t r = 0; r < kv_len.size(); ++r) {
    if (chosen.splits[r] > 1) {
      slot_base[r] = slots;
      plan.combine.push_back({static_cast<std::int32_t>(r), slots, chosen.splits[r], 0});
      slots += chosen.splits[r];
    }
  }
  plan.num_slots = slots;
  plan.work = std::move(chosen.items);
  for (auto& w : plan.work) w.slot = slot_base[w.request] < 0 ? -1 : slot_base[w.request] + w.slot;

  const std::size_t work_bytes = plan.work.size() * sizeof(VerifyAttentionWorkItem);
  const std::size_t combine_bytes = plan.combine.size() * sizeof(VerifyAttentionCombineItem);
  const std::size_t part_rows = static_cast<std::size_t>(slots) * shape.q_tokens * shape.heads;
  plan.work_offset = 0;
  plan.combine_offset = align256(work_bytes);
  plan.part_o_offset = plan.combine_offset + align256(combine_bytes);
  plan.part_lse_offset = plan.part_o_offset + align256(part_rows * shape.head_dim_v * sizeof(float));
  plan.workspace_bytes = plan.part_lse_offset + align256(part_rows * sizeof(float));
  plan.metadata.assign(plan.part_o_offset, 0);
  if (work_bytes) std::memcpy(plan.metadata.data() + plan.work_offset, plan.work.data(), work_bytes);
  if (combine_bytes) std::memcpy(plan.metadata.data() + plan.combine_offset, plan.combine.data(), combine_bytes);
  return plan;
}

std::vector<std::uint32_t> tree_mask_from_parents(const std::vector<int>& parent) {
  if (parent.empty() || parent.size() > static_cast<std::size_t>(cfg::kMaxQTokens))
    fail("tree needs 1..32 tokens");
  if (parent[0] != -1) fail("parent[0] must be -1 (the root follows the prefix)");
  std::vector<std::uint32_t> m(parent.size());
  m[0] = 1u;
  for (std::size_t i = 1; i < parent.size(); ++i) {
    if (parent[i] < 0 || parent[i] >= static_cast<int>(i)) fail("parent[i] must be in [0, i)");
    m[i] = m[parent[i]] | (1u << i);
  }
  return m;
}

std::vector<std::uint32_t> chain_mask_words(int q_tokens) {
  if (q_tokens < 1 || q_tokens > cfg::kMaxQTokens) fail("q_tokens must be in 1..32");
  std::vector<std::uint32_t> m(q_tokens);
  for (int i = 0; i < q_tokens; ++i) m[i] = i == 31 ? 0xffffffffu : ((2u << i) - 1u);
  return m;
}

double verify_attention_min_bytes(const VerifyAttentionShape& s, const std::vector<std::int32_t>& kv_len) {
  const double tokens = std::accumulate(kv_len.begin(), kv_len.end(), 0.0);
  const double kv_per_token = s.kind == VerifyAttentionKind::mla
                                  ? 2.0 * s.head_dim_qk
                                  : 2.0 * s.kv_heads * (s.head_dim_qk + s.head_dim_v);
  const double q = 2.0 * s.batch * s.q_tokens * s.heads * s.head_dim_qk;
  const double o = 2.0 * s.batch * s.q_tokens * s.heads * s.head_dim_v;
  return tokens * kv_per_token + q + o;
}

double verify_attention_flops(const VerifyAttentionShape& s, const std::vector<std::int32_t>& kv_len) {
  const double tokens = std::accumulate(kv_len.begin(), kv_len.end(), 0.0);
  return 2.0 * tokens * s.q_tokens * s.heads * (s.head_dim_qk + s.head_dim_v);
}

int combine_warps_per_row(const VerifyAttentionPlan& plan) {
  int max_splits = 0;
  for (const auto& c : plan.combine) max_splits = std::max<int>(max_splits, c.splits);
  return warps_for(max_splits, plan.shape.head_dim_v);
}

std::string describe(const VerifyAttentionPlan& p) {
  std::ostringstream os;
  int max_splits = 0;
  for (int n : p.splits_per_request) max_splits = std::max(max_splits, n);
  os << variant_name(p.kernel.variant) << " rows/block=" << p.kernel.rows_per_block << " chunks=" << p.kernel.row_chunks
     << " split=" << p.chunk_tokens << " max_splits=" << max_splits << " items=" << p.work.size()
     << " blocks=" << p.grid_blocks() << " combine_rows=" << p.combine_rows()
     << " combine_warps=" << (p.combine.empty() ? 0 : combine_warps_per_row(p)) << " est_us=" << p.estimated_us;
  return os.str();
}

}  // namespace eaglesim
