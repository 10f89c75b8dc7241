#pragma once
// The launch geometry of the attention kernels the replay runs, from an attention op: how many
// CTAs, how many waves of them the GPU's resident slots take, how many KV positions the busiest
// slot streams one block after another, the rows the tiles really compute, and whether a combine
// pass merges split partials. The fitted attention model (cost/fitted_model.hpp) prices these,
// so a shape's cost follows the grid the kernel launches rather than its bytes alone: a group of
// 5 heads x 32 tokens fills three 64-row blocks (192 rows computed for 160), a shape whose grid
// is 1.1 waves pays for 2.
//
// Two kernels, as cuda/replay/rank_program.cpp picks them:
//   - the verify-attention kernel (cost/verify_attention_plan.hpp): any batch, ragged KV, chain or
//     tree mask, q_tokens 1..32, GQA head dim 64/128, absorbed MLA 576/512; its planner chooses
//     the splits, and the geometry is read off that plan;
//   - the split-KV decode kernel (cuda/ops/replay_kernels.hpp) for one causal request the verify
//     kernel does not take (q_tokens over 32, head dim 256): its split count comes from
//     decode_attention_split below, which the launcher calls too.
#include <cstdint>
#include <vector>

#include "cost/verify_attention_plan.hpp"
#include "trace/op.hpp"

namespace eaglesim {

// The split-KV decode kernel: query rows (group heads x q tokens) per block, and its KV tile by
// head dim (shared memory under ~60 KB per block).
inline constexpr int kDecodeAttentionRowsPerBlock = 16;
constexpr int decode_attention_tile(int head_dim_qk, bool shared_kv) { return !shared_kv && head_dim_qk <= 128 ? 64 : 32; }

struct DecodeAttentionSplit {
  int splits = 1, split_len = 1, row_blocks = 1;
};
// About two blocks per SM over the whole grid (splits x kv_heads x row_blocks), each split at
// least one tile long.
DecodeAttentionSplit decode_attention_split(int kv_len, int tile, int kv_heads, int rows_per_kv_head, int sms);

// The verify kernel's shape and per-request KV lengths for an attention op.
VerifyAttentionShape verify_attention_shape(const Op& op);
std::vector<std::int32_t> verify_attention_kv_lens(const Op& op);

struct AttentionGeometry {
  bool verify_kernel = true;  // false: the split-KV decode kernel
  double blocks = 0;          // CTAs of the attention grid
  double slots = 0;           // CTAs the GPU holds at once (SMs x resident blocks per SM)
  double waves = 0;           // ceil(blocks / slots)
  double active_sms = 0;      // SMs with a block (min(blocks, SMs): the scheduler spreads first)
  double crit_tokens = 0;     // KV positions the busiest slot streams (list schedule, longest first)
  double rows_computed = 0;   // query rows per KV head the tiles compute (row blocks x rows per block)
  double rows_per_block = 0;  // query rows one CTA computes (its tile's rows, padding included)
  bool combine = false;       // a second kernel merges split partials
  double partial_bytes = 0;   // fp32 partials + log-sum-exp written by the splits (read again by the combine)
  double block_bytes_per_token = 0;  // K/V bytes one block reads per KV position
  // KV steps (tiles of positions) the busiest slot takes one after another; set for the
  // persistent kernel, whose per-step latency its fit prices (0 for the replay's kernels).
  double crit_steps = 0;
};

// The geometry on a GPU of `sms` SMs. Memoised per shape (the planner's search is not free and
// the simulator asks per op).
AttentionGeometry attention_geometry(const Op& op, int sms);

// cuDNN's SDPA flash forward for Hopper, the kernel PyTorch's scaled_dot_product_attention runs
// for the torch reference step with its boolean mask (recorded as
// cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x{64,128}: a grid of one
// CTA per SM, 384 threads, 134-232 KB of shared memory, so one resident CTA per SM). Each CTA
// walks work tiles of 64 query rows of one (request, query head) — no split-KV and no packing of a
// KV head's query heads — and streams the request's whole KV in steps of 128 positions. Recorded
// on an H100 the time follows the busiest CTA's steps: ceil(tiles / SMs) x ceil(kv / 128).
inline constexpr int kPersistentAttentionTileRows = 64;
inline constexpr int kPersistentAttentionTileKeys = 128;
AttentionGeometry persistent_attention_geometry(const Op& op, int sms);

}  // namespace eaglesim
