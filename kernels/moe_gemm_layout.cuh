#pragma once
// The packed weight layout shared by the grouped MoE GEMM (moe_grouped_gemm.cuh), the dense
// weight-only GEMM (weight_only_gemm.cuh), their reference kernels and the host packer
// (src/cuda/ops/moe_gemm_plan.cpp). Plain C++ (host-compilable) with __host__ __device__ helpers.
//
// Why this layout: at a verify step's row counts the GEMMs stream weights, so the layout is the
// tensor-core operand itself. The weights are the A operand of mma.m16n8k16 (output channels
// are M, the few activation rows are N: "swap AB", so rows pad to 8, not 16). Every 512-byte
// "atom" holds one 16-channel x atom_k block; lane L of a warp reads bytes [16L, 16L+16) and
// holds, without any shuffle, its A-fragment registers for atom_k/16 k16-steps:
//   bf16: atom_k = 16, the 4 registers of one step;
//   fp8 : atom_k = 32, two steps, converted in registers to bf16 (bit moves + one multiply);
//   int4: atom_k = 64, four steps, converted with one shift, four ANDs and four bf16x2 FMAs per
//         word (a masked nibble is a bf16 subnormal bit pattern; the FMA scales it and subtracts 8).
// An expert's weights are [n/16][k/atom_k] atoms, k fastest, so one 16-channel block's k-range
// is one contiguous run: a single bulk copy (TMA) per block and stage.
//
// A-fragment coordinates of register r (0..3), element e (0,1) of lane L in a 16x16 step
// (PTX ISA, mma.m16n8k16 .bf16): row = L/4 + 8*(r&1), col = 2*(L%4) + 8*(r>>1) + e.
// Byte placement inside the lane's 16 bytes:
//   bf16: bf16 at byte 4r + 2e.
//   fp8 : step s = col/16 of the atom, 32-bit word w = 2s + (r>>1), byte (r&1) + 2e of w
//         (bytes 0,2 of a word form one register, bytes 1,3 the next: each pair converts with
//         one shift and mask; the bits of every byte stay standard e4m3).
//   int4: word w = step s, nibble at bit 4r + 16e of w (value = nibble - 8): the nibbles at
//         bits 0-7 of each half decode in place, those at bits 8-15 after one shift by 8.
// Scales:
//   int4 (group g = 32 or 128 along k, bf16): per expert [n/16][k/g][8][2] bf16: entry (i, h)
//         is the scale of channel 16*block + i + 8h, so lane L reads one 32-bit word at i = L/4
//         holding the scales of both of its rows.
//   fp8 per channel: fp32 [n_pad16] per expert. fp8 per 128x128 block (DeepSeek-V3 style):
//         fp32 [ceil(n/128)][ceil(k/128)] per expert, the expert's span rounded up to 16 bytes.
// Requirements: k % 64 == 0 (every real model's k; keeps a stage a whole number of atoms), n >= 1
// (padded to 16 with zero weights; outputs past n are never written).
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define EAGLESIM_MOE_HD __host__ __device__ __forceinline__
#else
#define EAGLESIM_MOE_HD inline
#endif

namespace eaglesim::kernels::moe {

enum class WFormat : int {
  bf16 = 0,
  fp8_channel = 1,  // e4m3 weights, one fp32 scale per output channel (applied after the sum)
  fp8_block = 2,    // e4m3 weights, one fp32 scale per 128x128 block (applied before the mma)
  int4_g32 = 3,     // 4-bit weights (nibble - 8), one bf16 scale per 32 weights along k
  int4_g128 = 4,    // same, one scale per 128
};

constexpr int kAtomBytes = 512;
constexpr int kConsumerWarps = 8;                     // each owns one 16-channel block of a tile
constexpr int kTileN = kConsumerWarps * 16;           // 128 output channels per work item
constexpr int kThreads = (kConsumerWarps + 1) * 32;   // + one producer warp issuing bulk copies
constexpr int kSmemBudget = 104 * 1024;               // per CTA: two CTAs per SM fit in 228 KB
constexpr int kSmemBudget3 = 70 * 1024;               // per CTA with three per SM (tables and 1 KB each besides)
constexpr int kKAlign = 64;

EAGLESIM_MOE_HD constexpr bool is_int4(WFormat f) { return f == WFormat::int4_g32 || f == WFormat::int4_g128; }
EAGLESIM_MOE_HD constexpr bool is_fp8(WFormat f) { return f == WFormat::fp8_channel || f == WFormat::fp8_block; }
EAGLESIM_MOE_HD constexpr int atom_k(WFormat f) { return is_int4(f) ? 64 : is_fp8(f) ? 32 : 16; }
EAGLESIM_MOE_HD constexpr int weight_bits(WFormat f) { return is_int4(f) ? 4 : is_fp8(f) ? 8 : 16; }
EAGLESIM_MOE_HD constexpr int int4_group(WFormat f) { return f == WFormat::int4_g32 ? 32 : 128; }

EAGLESIM_MOE_HD constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Bytes of one expert's packed weights / scales.
EAGLESIM_MOE_HD constexpr std::int64_t packed_weight_bytes(WFormat f, int n, int k) {
  return ceil_div(n, 16) * (k / atom_k(f)) * kAtomBytes;
}
EAGLESIM_MOE_HD constexpr std::int64_t packed_scale_bytes(WFormat f, int n, int k) {
  return is_int4(f) ? ceil_div(n, 16) * (k / int4_group(f)) * 32
         : f == WFormat::fp8_channel ? ceil_div(n, 16) * 16 * 4
         : f == WFormat::fp8_block   ? ceil_div(ceil_div(n, 128) * ceil_div(k, 128), 4) * 16  // 16-B multiple
                                     : 0;
}

// Where weight (n, k) of one expert lives: byte offset from the expert's base and, for int4, the
// bit shift of its nibble inside that byte.
struct PackedPos {
  std::int64_t byte;
  int shift;
};

EAGLESIM_MOE_HD PackedPos packed_weight_pos(WFormat f, int k_total, int n, int k) {
  const int ak = atom_k(f);
  const std::int64_t atom = static_cast<std::int64_t>(n / 16) * (k_total / ak) + k / ak;
  const int row = n % 16, kr = k % ak;
  const int step = kr / 16, col = kr % 16;
  const int lane = (row % 8) * 4 + (col % 8) / 2;
  const int reg = (row / 8) + 2 * (col / 8);
  const int e = col % 2;
  const std::int64_t lane_base = atom * kAtomBytes + lane * 16;
  if (is_int4(f)) {
    const int bit = 4 * reg + 16 * e;
    return {lane_base + step * 4 + bit / 8, bit % 8};
  }
  if (is_fp8(f)) return {lane_base + (2 * step + reg / 2) * 4 + (reg % 2) + 2 * e, 0};
  return {lane_base + reg * 4 + 2 * e, 0};
}

// Element index (bf16 units) of the int4 scale of channel n, group q, inside one expert.
EAGLESIM_MOE_HD std::int64_t packed_int4_scale_index(WFormat f, int k_total, int n, int q) {
  const int groups = k_total / int4_group(f);
  return (static_cast<std::int64_t>(n / 16) * groups + q) * 16 + (n % 8) * 2 + (n % 16) / 8;
}

// e4m3 bits -> value (no NaN: 0x7f/0xff decode as 480, which the packer never produces).
EAGLESIM_MOE_HD float e4m3_to_float(std::uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  float v = e == 0 ? m * (1.0f / 512.0f) : (1.0f + m / 8.0f) * static_cast<float>(1u << e) * (1.0f / 128.0f);
  return s ? -v : v;
}

EAGLESIM_MOE_HD float bf16_bits_to_float(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// ---------------------------------------------------------------- kernel variants
// The knobs the benchmark's --variants sweep compares (bench/gpu/bench_gemm.cu), all in one
// kernel template. Variant 0 is the kernel as designed; the others attack the int4/fp8 issue
// limit seen in profiles (too few warps per scheduler to hide the dependent ALU chains):
//   ctas_per_sm: 2, or 3 with a smaller stage budget (more warps, same bytes in flight);
//   straight:    full stages without per-atom k checks and every row tile's mma unconditional
//                (padding rows only reach outputs that are never written), so a stage is one
//                basic block the scheduler can interleave;
//   int4_tk:     int4 stage depth at <= 16 rows (0: TileConfig's), shallower stages, more of them;
//   pdl:         programmatic dependent launch: the launch and prologue overlap the previous
//                kernel's tail, a dense GEMM's first stages of weights stream before it ends;
//   imad_shift:  the int4/fp8 conversion's right shifts as multiply-high (FMA pipe, not ALU);
//   r64_tk:      int4/fp8 stage depth at 64 rows (0: TileConfig's 64): deeper stages halve the
//                activation row copies per weight byte, which is what 64-row items wait on.
//   int4_fold:   int4 at 8/16 rows with the group scale folded into the decode's FMA operands
//                (4 HMUL2 per group) instead of 4R FFMA on each group's fp32 partial sum.
// Non-zero variants exist for row tiles of 8 and 16 (R <= 2), the verify-step row counts, except
// the r64_tk ones, which exist for 64-row tiles (R == 8) only.
struct KernelVariant {
  const char* name;
  int ctas_per_sm;
  bool straight;
  int int4_tk;
  bool pdl;
  bool imad_shift;
  int r64_tk;
  bool int4_fold;
};
constexpr KernelVariant kVariants[] = {
    {"base", 2, false, 0, false, false, 0, false},
    {"straight", 2, true, 0, false, false, 0, false},
    {"occ3", 3, false, 0, false, false, 0, false},
    {"occ3_straight", 3, true, 0, false, false, 0, false},
    {"occ3_straight_tk128", 3, true, 128, false, false, 0, false},
    {"pdl", 2, false, 0, true, false, 0, false},
    {"occ3_straight_pdl", 3, true, 0, true, false, 0, false},
    {"occ3_straight_imad", 3, true, 0, false, true, 0, false},
    {"straight_imad", 2, true, 0, false, true, 0, false},
    {"occ3_imad", 3, false, 0, false, true, 0, false},
    {"occ3_straight_imad_pdl", 3, true, 0, true, true, 0, false},
    {"r64_tk128", 2, false, 0, false, false, 128, false},
    {"fold", 2, false, 0, false, false, 0, true},
    {"straight_fold", 2, true, 0, false, false, 0, true},
    {"occ3_straight_fold", 3, true, 0, false, false, 0, true},
    {"occ3_straight_pdl_fold", 3, true, 0, true, false, 0, true},
};
constexpr int kVariantCount = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));
constexpr int kMaxVariantRows = 2;  // R (n8 row tiles) up to which the non-zero variants exist
constexpr int kR64 = 8;             // R of the 64-row tile, where the r64_tk variants exist
// Whether variant v is its own kernel for format f at R row tiles (else the plan uses variant 0).
// int4_g32 at 16 rows has no straight variant: a branch-free stage of eight scale groups and two
// row tiles does not fit its registers (ptxas spills).
EAGLESIM_MOE_HD constexpr bool variant_applies(WFormat f, int R, int v) {
  if (v == 0) return true;
  if (v < 0 || v >= kVariantCount) return false;
  const KernelVariant& k = kVariants[v];
  if (k.r64_tk) return R == kR64 && f != WFormat::bf16;
  return R <= kMaxVariantRows && ((k.int4_tk == 0 && !k.int4_fold) || is_int4(f)) &&
         (!k.imad_shift || f != WFormat::bf16) && !(k.straight && R == 2 && f == WFormat::int4_g32);
}

// ---------------------------------------------------------------- tile configuration

// Row tile: R n8 tiles of activation rows (8R rows) per work item. Stage k-depth TK keeps the
// activation slice of a stage near 8 KB; stages fill the variant's budget (at least 3, at most 8).
template <WFormat F, int R, int V = 0>
struct TileConfig {
  static_assert(V >= 0 && V < kVariantCount && (V == 0 || R <= kMaxVariantRows || (R == kR64 && kVariants[V].r64_tk)),
                "no such kernel variant");
  static constexpr KernelVariant kVariant = kVariants[V];
  static constexpr int kAtomK = atom_k(F);
  // int4 at 16 rows with three CTAs per SM: k = 128 stages (three of 256 would not fit the budget)
  static constexpr int kInt4TK = kVariant.int4_tk ? kVariant.int4_tk : kVariant.ctas_per_sm >= 3 && R == 2 ? 128 : 256;
  static constexpr int kR64TK = kVariant.r64_tk ? kVariant.r64_tk : 64;  // int4/fp8 at 64 rows
  static constexpr int kTK = is_int4(F) ? (R <= 2 ? kInt4TK : R == 4 ? 128 : kR64TK)
                             : is_fp8(F) ? (R <= 4 ? 128 : kR64TK)
                                         : 64;
  static constexpr int kAtomsPerStage = kTK / kAtomK;                    // per 16-channel block
  static constexpr int kBlockWeightBytes = kAtomsPerStage * kAtomBytes;  // one block's run
  static constexpr int kScaleGroupsPerStage =
      is_int4(F) ? (kTK >= int4_group(F) ? kTK / int4_group(F) : 1) : 0;
  static constexpr int kBlockScaleBytes = kScaleGroupsPerStage * 32;
  static constexpr int kXPitch = kTK * 2 + 16;  // +16 B: the 8 rows of an ldmatrix hit 8 bank groups
  static constexpr int kWeightOff = 0;
  static constexpr int kScaleOff = kConsumerWarps * kBlockWeightBytes;
  // fp8_block: the 16-byte window holding the tile's scale for this k-block
  static constexpr int kXOff = kScaleOff + kConsumerWarps * kBlockScaleBytes + (F == WFormat::fp8_block ? 16 : 0);
  static constexpr int kStageBytes = ((kXOff + 8 * R * kXPitch) + 127) / 128 * 128;
  static constexpr int kBudget = kVariant.ctas_per_sm >= 3 ? kSmemBudget3 : kSmemBudget;
  static constexpr int kStagesRaw = kBudget / kStageBytes;
  static constexpr int kStages = kStagesRaw < 3 ? 3 : kStagesRaw > 8 ? 8 : kStagesRaw;
  // Dynamic shared memory besides the stages: 2 mbarriers per stage, then expert offsets and
  // the work-item prefix (E+1 ints each).
  static constexpr int kBarrierOff = kStages * kStageBytes;
  static constexpr int kTableOff = kBarrierOff + 16 * kStages;
  static constexpr std::size_t smem_bytes(int experts) {
    return static_cast<std::size_t>(kTableOff) + 8u * static_cast<std::size_t>(experts + 1);
  }
};

// ---------------------------------------------------------------- GEMV split (weight_only_gemv.cuh)
constexpr int kGemvMaxWarps = 8;  // warps per CTA
constexpr int kGemvMaxSplit = 8;  // CTAs per cluster (the portable cluster size)
constexpr int kGemvUnitK = 64;    // k per unit: one int4 atom, two fp8 atoms, four bf16 atoms

// Units (64 k of one 16-channel block) of one GEMV task: 64 B of weights per lane, two tasks in
// registers at a time (the one being multiplied and the next one loading).
EAGLESIM_MOE_HD constexpr int gemv_units_per_task(WFormat f) { return is_int4(f) ? 4 : is_fp8(f) ? 2 : 1; }

// Shared memory per activation row: the slice's units_per_cta * 128 B, pitch + 16 B (the eight
// row addresses of an ldmatrix then fall in eight different bank groups).
EAGLESIM_MOE_HD constexpr int gemv_x_pitch(int units_per_cta) { return units_per_cta * kGemvUnitK * 2 + 16; }
// Then the fp32 partial sums: one 512-byte slot per task and row tile.
EAGLESIM_MOE_HD constexpr int gemv_partials_offset(int m, int units_per_cta) {
  return (m * gemv_x_pitch(units_per_cta) + 127) / 128 * 128;
}
EAGLESIM_MOE_HD constexpr int gemv_smem_bytes(int m, int row_tiles, int blocks_per_cta, int parts, int units_per_cta) {
  return gemv_partials_offset(m, units_per_cta) + blocks_per_cta * parts * row_tiles * 512;
}

// ---------------------------------------------------------------- stream-K schedule
// The work is items x kc chunks (item = expert, 128-channel tile, row block; chunk = TK of k),
// flattened item-major. CTA c of G takes chunks [c*T/G, (c+1)*T/G): every CTA gets the same
// weight bytes within one chunk, whatever the expert counts. An item split across CTAs is summed
// by the CTA that finishes last, in CTA order (deterministic), from fp32 partials.
EAGLESIM_MOE_HD std::int64_t sk_begin(std::int64_t c, std::int64_t total, std::int64_t grid) {
  return c * total / grid;
}
// The CTA whose range holds chunk p (grid <= total, so no range is empty).
EAGLESIM_MOE_HD std::int64_t sk_owner(std::int64_t p, std::int64_t total, std::int64_t grid) {
  return ((p + 1) * grid - 1) / total;
}
// Partial slot of CTA c for item i: 0 if its range starts inside the item (the item is its first
// segment), 1 if the item is the last segment of a range that began earlier.
EAGLESIM_MOE_HD int sk_slot(std::int64_t c, std::int64_t item, std::int64_t kc, std::int64_t total,
                            std::int64_t grid) {
  return sk_begin(c, total, grid) >= item * kc ? 0 : 1;
}

}  // namespace eaglesim::kernels::moe
