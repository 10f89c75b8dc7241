#pragma once
// Host API of the grouped MoE GEMM and the dense weight-only GEMM (kernels/moe_grouped_gemm.cuh,
// kernels/weight_only_gemm.cuh): plan, pack, prepare, launch.
//
//   GroupedGemmPlan plan = plan_grouped_gemm(shape, sm_count);     // host only, no CUDA calls
//   prepare_grouped_gemm(plan);                                    // at setup: smem opt-in
//   cudaMalloc(&ws, plan.workspace_bytes); cudaMemset(ws, 0, plan.workspace_bytes);   // once
//   launch_grouped_gemm(plan, args, ws, stream);                   // one kernel, capturable
//
// y[r, :] = x[r, :] . dequant(W_e)^T for the rows r of each expert e, x bf16 [rows][k] sorted by
// expert with expert_offsets[E+1] on the device (a token routed to top-k experts appears k
// times), y bf16 [rows][n], fp32 accumulation. A dense GEMM is the same call with experts = 1
// and expert_offsets = nullptr (plan_weight_only_gemm). The workspace holds per-item counters
// (zero before the first launch; each launch leaves them zero) and fp32 partials for items split
// across CTAs; launches that share a workspace must not run concurrently.
//
// Weights are packed once (pack_grouped_weights) into the tensor-core-native layout described in
// kernels/moe_gemm_layout.cuh; any random byte pattern is also a valid packed weight set of the
// same format (fp8: avoid the NaN codes 0x7f/0xff), which is what a replay that only needs the
// bytes and the speed can fill instead of packing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cost/low_bit_gemm_kernel.hpp"

namespace eaglesim::cuda {

// Values match kernels::moe::WFormat.
enum class GemmWeightFormat : int {
  bf16 = 0,
  fp8_channel = 1,  // e4m3, fp32 scale per output channel
  fp8_block = 2,    // e4m3, fp32 scale per 128x128 block (DeepSeek-V3 / Kimi-K2 checkpoints)
  int4_g32 = 3,     // int4 (nibble - 8), bf16 scale per 32 weights along k
  int4_g128 = 4,    // int4, bf16 scale per 128 weights along k
};
const char* to_string(GemmWeightFormat f);
bool parse_gemm_weight_format(const std::string& name, GemmWeightFormat& out);

struct GroupedGemmShape {
  GemmWeightFormat format = GemmWeightFormat::bf16;
  int experts = 1;          // E; 1 with no offsets is a dense GEMM
  int n = 0, k = 0;         // per expert: W_e is [n, k]
  int max_rows = 0;         // most rows one launch carries in total (sizes the workspace)
  int rows_per_expert = 0;  // rows the busiest expert is expected to get (picks the row tile); 0: max_rows
  int variant = -1;         // kernel variant (grouped_gemm_variant_name); -1: the default for the format and row tile
  // Dense GEMMs of at most kGemvMaxRows rows: -1 the plan picks the kernel (see plan_grouped_gemm;
  // never when `variant` names a stream-K variant), 0 the stream-K kernel, 1 the GEMV kernel
  // (kernels/weight_only_gemv.cuh; InputError where it cannot run the shape, grouped GEMMs too).
  int gemv = -1;
  // The GEMV kernel's 16-channel blocks per CTA; 0: the plan's choice (the fewest that keep the
  // grid within two CTAs per SM and give each of a CTA's warps a task). A bench knob, clamped to
  // [1, min(8, n / 16)].
  int gemv_blocks_per_cta = 0;
  // The GEMV kernel's k-split (CTAs per cluster); 0: the plan's choice (at most 8 tasks per block
  // and slice). A bench knob (bench_gemm --gemv-sweep), clamped to [1, min(8, k / 64)].
  int gemv_split = 0;
  // Dense int4 GEMMs of at least kInt4WgmmaMinRows rows (int4_wgmma_gemm.hpp): 1 runs them on the
  // wgmma kernel where it takes the shape (compute capability 9.0 only), 0 on the stream-K kernel.
  // Opt-in (the replay: EAGLESIM_INT4_GEMM=wgmma) until its speed is measured on the device.
  int wgmma = 0;
};

// Rows up to which a dense GEMM can run as the GEMV kernel (and the rule that picks it):
// cost/low_bit_gemm_kernel.hpp, which the simulator's fits share.
using eaglesim::kGemvMaxRows;

// The workspace's regions (counters, then partials) and the replay's packed weight regions start
// on 256-byte boundaries.
inline std::size_t align256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

struct GroupedGemmPlan {
  GroupedGemmShape shape;
  int row_tile = 8;        // activation rows per work item: 8, 16, 32 or 64 (an expert with more rows
                           // gets several items, each streaming its weights again)
  int tile_n = 128;        // output channels per work item
  int k_tile = 64;         // k per pipeline stage
  int stages = 4;
  int grid = 0;            // persistent CTAs
  int ctas_per_sm = 2;
  int threads = 288;
  std::size_t smem_bytes = 0;       // dynamic shared memory per CTA
  int max_items = 0;                // work items the workspace has counters for
  std::size_t counter_bytes = 0;    // workspace: counters first ...
  std::size_t partial_bytes = 0;    // ... then fp32 partials
  std::size_t workspace_bytes = 0;
  std::int64_t weight_bytes_per_expert = 0;  // packed weights of one expert (expert e at e * this)
  std::int64_t scale_bytes_per_expert = 0;
  int kernel_variant = 0;           // the variant the launch runs (a requested one that does not apply: 0)
  bool pdl = false;                 // launched with programmatic dependent launch
  std::string variant;              // "int4_g32 r16 tk256 s3", then the variant's name unless it is "base"
  // The GEMV kernel (dense, m <= kGemvMaxRows): grid (gemv_split, ceil(n / 16 / gemv_blocks_per_cta)),
  // clusters of gemv_split CTAs that split k into slices of gemv_units_per_cta 64-k units; each
  // CTA's gemv_warps warps run gemv_blocks_per_cta x gemv_parts tasks of gemv_units_per_task
  // units; no workspace use. The stream-K fields above stay filled (the reference kernel and
  // callers that size a workspace read them).
  bool gemv = false;
  int gemv_split = 1;
  int gemv_units_per_cta = 0;
  int gemv_units_per_task = 0;
  int gemv_parts = 0;
  int gemv_blocks_per_cta = 0;
  int gemv_warps = 0;
  int gemv_row_tiles = 1;  // rows of one pass: 8 x this
  bool gemv_pdl = false;
  std::size_t gemv_smem_bytes = 0;
  // The wgmma kernel (dense int4, int4_wgmma_gemm.hpp): tiles of 192 channels x wgmma_rows (64 or
  // 128) rows, wgmma_row_tiles of them over the rows, each split over k wgmma_splits ways; grid,
  // threads, smem_bytes, counter/partial bytes above are its own.
  bool wgmma = false;
  int wgmma_rows = 0;
  int wgmma_row_tiles = 0;
  int wgmma_splits = 1;
};

// The kernel variants (kernels/moe_gemm_layout.cuh, kVariants): 0 is "base", the kernel as designed.
int grouped_gemm_variant_count();
const char* grouped_gemm_variant_name(int variant);
// The variant a plan runs when the shape asks for none (variant = -1); dense: one expert.
int default_grouped_gemm_variant(GemmWeightFormat format, int row_tile, bool dense);

// Empty when the kernels support the shape, else why not.
std::string grouped_gemm_unsupported_reason(const GroupedGemmShape& shape);
// Tile choice, stages, grid, shared memory and workspace for `sm_count` SMs. Throws InputError
// for unsupported shapes. Pure host code.
GroupedGemmPlan plan_grouped_gemm(const GroupedGemmShape& shape, int sm_count);
// Dense y[m, n] = x[m, k] . W^T, 1 <= m (fast up to ~64, correct for any m).
// m <= kGemvMaxRows runs the GEMV kernel unless a variant or gemv = 0 asks for the stream-K one.
GroupedGemmPlan plan_weight_only_gemm(GemmWeightFormat format, int m, int n, int k, int sm_count, int variant = -1,
                                      int gemv = -1, int wgmma = 0);

struct GroupedGemmArgs {
  const void* x = nullptr;              // bf16 [rows][k], 16-byte aligned
  const int* expert_offsets = nullptr;  // device int [E+1], offsets[E] <= rows; nullptr: dense
  int rows = 0;                         // rows of x and y (dense: m); <= plan.shape.max_rows
  const void* weights = nullptr;        // packed, expert e at e * weight_bytes_per_expert
  const void* scales = nullptr;         // packed, expert e at e * scale_bytes_per_expert (bf16: none)
  void* y = nullptr;                    // bf16 [rows][n]
};

// Shared-memory opt-in for the plan's kernel on the current device. Call at setup, outside graph
// capture; launch_grouped_gemm calls it on first use per device too.
void prepare_grouped_gemm(const GroupedGemmPlan& plan);

// The same GEMM launched without programmatic dependent launch (it waits for the kernel ahead of
// it to end): the GEMV kernel without its PDL attribute, a stream-K `pdl` variant as its twin
// without it (the same tiles and stages); the plan itself where it launches without PDL already.
// Prepare it before launching it.
GroupedGemmPlan without_early_launch(const GroupedGemmPlan& plan, int sm_count);
// CTAs of the plan's kernel that fit one SM of the current device (the plan assumes ctas_per_sm).
int grouped_gemm_resident_ctas(const GroupedGemmPlan& plan);
// One kernel launch, stream-ordered and capturable; checks the arguments and the launch.
void launch_grouped_gemm(const GroupedGemmPlan& plan, const GroupedGemmArgs& args, void* workspace,
                         cudaStream_t stream);
// The plain reference kernel (one thread per output) on the same packed weights.
void launch_grouped_gemm_reference(const GroupedGemmPlan& plan, const GroupedGemmArgs& args, cudaStream_t stream);

// Packing, on the host. Logical inputs, per expert row-major [n][k]:
//   bf16: uint16 bf16 bits [E][n][k];   fp8: e4m3 bytes [E][n][k] (NaN codes are refused);
//   int4: bytes [E][n][k/2], weight (n, k) in byte k/2, low nibble first, value = nibble - 8
//         (the layout of group-quantised int4 checkpoints).
// Logical scales: bf16: none (nullptr); fp8_channel: float [E][n];
//   fp8_block: float [E][ceil(n/128)][ceil(k/128)]; int4: uint16 bf16 bits [E][n][k/g].
struct PackedGemmWeights {
  std::vector<std::uint8_t> weights;  // E * weight_bytes_per_expert
  std::vector<std::uint8_t> scales;   // E * scale_bytes_per_expert
};
PackedGemmWeights pack_grouped_weights(GemmWeightFormat format, int experts, int n, int k, const void* weights,
                                       const void* scales);
std::int64_t packed_gemm_weight_bytes(GemmWeightFormat format, int n, int k);  // per expert
std::int64_t packed_gemm_scale_bytes(GemmWeightFormat format, int n, int k);   // per expert

}  // namespace eaglesim::cuda
