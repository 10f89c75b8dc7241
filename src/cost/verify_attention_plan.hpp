#pragma once
// The verify-attention kernel's launch plan: which kernel variant a shape runs on, how each
// request's KV is cut into splits, the work list, the combine pass and the workspace. Pure host
// C++ in the cost layer, so that the CUDA launcher (cuda/ops/verify_attention_launch.hpp,
// kernels/verify_attention.cuh) and the cost model (cost/attention_geometry.hpp) read one
// planner: the simulator prices the grid the replay launches.
//
// Layout (FlashInfer-style ragged batch):
//   Q   [batch * q_tokens, heads, head_dim_qk]      bf16 (token stride may exceed heads * D)
//   K   cache token t (packed over requests), kv head h: k + t * k_token_stride + h * k_head_stride
//   V   likewise with v_* (MLA: V is the first head_dim_v columns of the K rows: v == k)
//   out [batch * q_tokens, heads, head_dim_v]        bf16
// Request r owns cache tokens [kv_indptr[r], kv_indptr[r] + kv_len[r]); its q_tokens query
// tokens are the LAST q_tokens of those positions (the draft tokens appended to the cache).
// Query token i sees the prefix [0, kv_len - q_tokens) and draft position j iff mask(i, j):
//   chain: j <= i;  tree: bit j of mask word i (ancestor-or-self in the draft tree).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace eaglesim {

enum class VerifyAttentionKind : int {
  gqa = 0,  // K and V separate, head_dim_qk == head_dim_v in {64, 128}, heads % kv_heads == 0
  mla = 1,  // absorbed MLA: one latent KV head of 576 columns, V = its first 512
};

enum class AttentionMaskKind : int {
  chain = 0,  // draft token i sees draft tokens 0..i (also the q_tokens == 1 decode case)
  tree = 1,   // draft token i sees draft token j iff bit j of mask[i] is set
};

// Everything the plan depends on besides the per-request KV lengths.
struct VerifyAttentionShape {
  VerifyAttentionKind kind = VerifyAttentionKind::gqa;
  int batch = 1;
  int q_tokens = 1;  // draft tokens per request, 1..32, the same for every request
  int heads = 1;     // query heads
  int kv_heads = 1;  // 1 for MLA
  int head_dim_qk = 128;
  int head_dim_v = 128;
};


// The kernel configurations; their shared-memory sizes come from one place (the .cuh asserts
// that its layout fits). Usable from device code when compiled by nvcc.
#if defined(__CUDACC__)
#define EAGLESIM_VA_HD __host__ __device__
#else
#define EAGLESIM_VA_HD
#endif
namespace verify_attention_config {
constexpr int kTileKv = 64;  // KV positions per pipeline stage
// Split lengths are multiples of half a tile: a short request then spreads over twice the SMs
// (its splits' last tile is half empty, which costs the block nothing it waits on: the empty
// rows are not read, and at these sizes the block waits on memory, not on the tensor cores).
constexpr int kSplitQuantum = 32;
constexpr int kGqaThreads = 128;
constexpr int kGqaStages = 3;
constexpr int kMlaThreads = 256;
constexpr int kMlaDk = 576;
constexpr int kMlaDv = 512;
constexpr int kMaxQTokens = 32;

EAGLESIM_VA_HD constexpr std::size_t gqa_smem_bytes(int head_dim) {
  return static_cast<std::size_t>(kGqaStages) * 2 * kTileKv * (head_dim + 8) * 2;
}
EAGLESIM_VA_HD constexpr int gqa_blocks_per_sm(int head_dim) { return head_dim <= 64 ? 4 : 2; }
// MLA: the KV ring is cut into slots of 32 positions, five of them; a step computes 64
// positions (two slots) while the next three slots are in flight (112 KB per SM).
constexpr int kMlaSlotKv = 32;
constexpr int kMlaSlots = 5;
EAGLESIM_VA_HD constexpr std::size_t mla_slot_bytes() { return static_cast<std::size_t>(kMlaSlotKv) * (kMlaDk + 8) * 2; }
EAGLESIM_VA_HD constexpr int mla_slots_in_flight() { return kMlaSlots - 2; }
EAGLESIM_VA_HD constexpr std::size_t mla_sp_bytes(int rows) { return static_cast<std::size_t>(4) * rows * (kTileKv + 8) * 4; }
EAGLESIM_VA_HD constexpr std::size_t mla_p_bytes(int rows) { return static_cast<std::size_t>(rows) * (kTileKv + 8) * 2; }
EAGLESIM_VA_HD constexpr std::size_t mla_smem_bytes(int rows) {
  return kMlaSlots * mla_slot_bytes() + mla_sp_bytes(rows) + mla_p_bytes(rows) + 3 * sizeof(float) * rows;
}
// The combine: blocks per output row's columns (grid.y). MLA's 512 columns are cut into four
// slices of 128, so a row's partials are read by four times the blocks (one row per block of
// 8 warps left the combine of a B = 1 MLA op on 32 SMs) and each warp keeps more splits in
// flight in the same registers.
EAGLESIM_VA_HD constexpr int combine_column_slices(int head_dim_v) { return head_dim_v >= 512 ? 4 : 1; }
// Splits one warp keeps in flight (its registers: U x the slice's columns / 32 floats per lane).
EAGLESIM_VA_HD constexpr int combine_unroll(int head_dim_v) {
  return head_dim_v / combine_column_slices(head_dim_v) >= 512 ? 4 : 8;
}
}  // namespace verify_attention_config
#undef EAGLESIM_VA_HD

enum class VerifyAttentionVariant : int {
  gqa_d64_r16 = 0, gqa_d64_r32, gqa_d64_r64,
  gqa_d128_r16, gqa_d128_r32, gqa_d128_r64,
  mla_r16, mla_r32,
};
const char* variant_name(VerifyAttentionVariant v);

struct VerifyAttentionKernelConfig {
  VerifyAttentionVariant variant = VerifyAttentionVariant::gqa_d128_r16;
  int rows_per_block = 16;  // query rows (group heads x query tokens) one block holds
  int row_chunks = 1;       // blocks over the rows of one (request, kv head, split)
  int threads = 128;
  int blocks_per_sm = 2;    // resident blocks per SM the planner assumes (launch bounds enforce it)
  std::size_t smem_bytes = 0;
};

// One split of one request: KV positions [kv_begin, kv_end) relative to the request's start.
// slot < 0: the request has one split and the block writes the final bf16 output; otherwise
// it writes a normalised fp32 partial and its log2-sum-exp into partial slot `slot`.
struct VerifyAttentionWorkItem {
  std::int32_t request = 0, kv_begin = 0, kv_end = 0, slot = -1;
};
// A request whose splits the combine kernel merges: slots [slot_base, slot_base + splits).
struct VerifyAttentionCombineItem {
  std::int32_t request = 0, slot_base = 0, splits = 0, pad = 0;
};

// What the planner assumes about the GPU. Defaults: one H200 as measured in this workplace
// (132 SMs, ~4.3 TB/s copy bandwidth) and a sustained mma.sync bf16 rate well below the
// datasheet's wgmma figure.
struct VerifyAttentionDevice {
  int sms = 132;
  double hbm_bytes_per_s = 4.0e12;
  double mma_flops_per_s = 4.0e14;
  double block_start_us = 1.5;     // per block: work item, Q, pipeline fill (one memory latency)
  double launch_us = 2.0;          // a kernel in a graph, start to finish of an empty grid
  // Loaded latency: a block streams at most its bytes in flight per latency. 2.3 us fits the
  // first H200 run (one block alone pulls 29-32 GB/s: GQA B=8 kv=8192 split=4096, MLA B=32).
  double memory_latency_us = 2.3;
  double sm_bytes_per_s = 60e9;    // what one SM's blocks together can stream from HBM
  // The combine: one round of combine_unroll loads per warp (L2-resident partials). The first
  // run's serial combine cost ~0.22 us per split; a round of U loads is taken as 0.5 us.
  double combine_round_us = 0.5;
};

struct VerifyAttentionPlanOptions {
  int chunk_tokens = 0;  // force the split length (rounded up to kSplitQuantum); 0: the planner chooses
};

struct VerifyAttentionPlan {
  VerifyAttentionShape shape;
  VerifyAttentionKernelConfig kernel;
  int chunk_tokens = 0;  // longest split length chosen
  int num_slots = 0;     // partial slots (sum of splits over multi-split requests)
  std::vector<VerifyAttentionWorkItem> work;       // longest first (the block scheduler is greedy)
  std::vector<VerifyAttentionCombineItem> combine; // requests with more than one split
  std::vector<std::int32_t> splits_per_request;
  // Workspace layout (bytes from the workspace start, 256-byte aligned).
  std::size_t work_offset = 0, combine_offset = 0, part_o_offset = 0, part_lse_offset = 0;
  std::size_t workspace_bytes = 0;
  std::vector<unsigned char> metadata;  // work items then combine items, copied to workspace[0, size)
  double estimated_us = 0;              // the planner's model of the launch, for comparison with a timing

  long long grid_blocks() const {
    return static_cast<long long>(work.size()) * shape.kv_heads * kernel.row_chunks;
  }
  long long combine_rows() const {
    return static_cast<long long>(combine.size()) * shape.q_tokens * shape.heads;
  }
};

// Throws std::invalid_argument when the shape or lengths are unsupported (message says why).
void validate_verify_attention_shape(const VerifyAttentionShape& shape);
VerifyAttentionKernelConfig choose_verify_attention_kernel(const VerifyAttentionShape& shape);
VerifyAttentionPlan plan_verify_attention(const VerifyAttentionShape& shape, const std::vector<std::int32_t>& kv_len,
                                          const VerifyAttentionDevice& device = {},
                                          const VerifyAttentionPlanOptions& options = {});

// Tree masks from parent lists (parent[0] = -1, parent[i] < i): bit j of word i set iff j is
// an ancestor-or-self of i. Throws std::invalid_argument on an invalid list.
std::vector<std::uint32_t> tree_mask_from_parents(const std::vector<int>& parent);
// The chain mask as words (bit j of word i set iff j <= i), for callers that want one format.
std::vector<std::uint32_t> chain_mask_words(int q_tokens);

// Bytes the op must move at least: every K/V byte of every request once, Q once, out once.
double verify_attention_min_bytes(const VerifyAttentionShape& shape, const std::vector<std::int32_t>& kv_len);
// Matrix FLOPs of the op (QK^T and PV over every visible-or-not position, as the kernels do).
double verify_attention_flops(const VerifyAttentionShape& shape, const std::vector<std::int32_t>& kv_len);

std::string describe(const VerifyAttentionPlan& plan);

// Warps of the combine kernel per output row (1, 2, 4 or 8): enough that each warp's splits
// are at most two rounds of combine_unroll loads in flight.
int combine_warps_per_row(const VerifyAttentionPlan& plan);

}  // namespace eaglesim
