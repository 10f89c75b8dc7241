#pragma once
// Grouped expert GEMM for a verify step's MoE layers, one launch per grouped GEMM:
//   for every expert e:  y[r, :] = x[r, :] . dequant(W_e)^T   for rows r in [off[e], off[e+1])
// x: bf16 [rows][k], rows sorted by expert (a token routed to top-k experts appears k times);
// W_e: bf16, fp8 e4m3 (per-channel or 128x128-block scales) or int4 (group 32/128 bf16 scales)
// in the packed layout of moe_gemm_layout.cuh; fp32 accumulation; y: bf16 [rows][n].
//
// Why it is shaped this way. With 1-64 rows per expert the op reads each active expert's weights
// once and does little arithmetic on them, so the kernel is a weight stream:
//  * Work items are (expert with rows, 128-channel tile, block of 8R rows); only experts with
//    rows make items. Items x k-chunks form one flat list that a persistent grid splits evenly
//    (stream-K): each CTA streams the same number of weight bytes whatever the routing, and an
//    item cut between CTAs is summed from fp32 partials by the CTA that finishes it last, in a
//    fixed order (deterministic, no spin-waits: safe with any residency).
//  * One producer warp per CTA moves each stage with bulk copies (cp.async.bulk, completing on
//    an mbarrier): one copy per 16-channel block (its k-range is contiguous in the packed
//    layout), one per activation row, weights marked L2 evict-first. 3-8 stages in flight give
//    each SM 50-130 KB of outstanding reads, which is what HBM3e needs to stream at full rate.
//  * Eight consumer warps each own 16 output channels. Weights are the A operand of
//    mma.m16n8k16 (bf16, fp32 accumulate) and the rows are N, so rows pad to 8, not 16. A lane
//    reads its A fragment straight from the packed atom (one 16-byte shared load), converts
//    fp8/int4 to bf16 in registers (int4: per 32-bit word one shift, four ANDs and four bf16x2
//    FMAs that turn subnormal bit patterns into (u - 8) * 2^-56, the group scale either folded
//    into those FMAs' operands or, at <= 16 rows, one fp32 FMA per accumulator and group on the
//    group's partial sum, 2^56 taken out once per output; fp8: shifts/masks + one mul that also
//    applies 2^120 and the block scale), and takes the activations with ldmatrix from a padded
//    (conflict-free) stage buffer.
// Requirements (checked on the host by plan_grouped_gemm): k % 64 == 0, x and W 16-byte aligned,
// sm_90 (bulk copies, mbarrier tx-counts). The workspace's counters must be zero before the
// first launch; every launch leaves them zero.
#include <cstdint>

#if !defined(EAGLESIM_MOE_EMULATE)
#include <cuda_bf16.h>

#include "grid_dependency.cuh"
// The dynamic shared memory of a block (tools/moe_gemm_emulate.cpp maps it to its own buffer).
#define EAGLESIM_MOE_DYNAMIC_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#endif

#include "moe_gemm_layout.cuh"

namespace eaglesim::kernels::moe {

struct GemmParams {
  const __nv_bfloat16* x = nullptr;  // [rows][k]
  const int* expert_offsets = nullptr;  // [experts + 1]; nullptr: one expert with dense_rows rows
  int dense_rows = 0;
  const std::uint8_t* w = nullptr;  // expert e at w + e * w_expert_bytes
  const std::uint8_t* scales = nullptr;  // expert e at scales + e * s_expert_bytes (none for bf16)
  __nv_bfloat16* y = nullptr;  // [rows][n]
  int experts = 1, n = 0, k = 0;
  std::int64_t w_expert_bytes = 0, s_expert_bytes = 0;
  float* partials = nullptr;  // [grid][2][kConsumerWarps][R][32 lanes][4]
  int* counters = nullptr;    // [max_items][kConsumerWarps]
  int max_items = 0;
};

namespace detail {

// The PTX primitives. tools/moe_gemm_emulate.cpp defines EAGLESIM_MOE_EMULATE and supplies each
// of them with the PTX ISA's semantics to run this file's kernels on a CPU.
#if !defined(EAGLESIM_MOE_EMULATE)
__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

__device__ __forceinline__ std::uint64_t l2_evict_first_policy() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void bulk_load(std::uint32_t dst, const void* src, std::uint32_t bytes,
                                          std::uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void bulk_load_evict_first(std::uint32_t dst, const void* src, std::uint32_t bytes,
                                                      std::uint32_t bar, std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          dst),
      "l"(src), "r"(bytes), "r"(bar), "l"(policy)
      : "memory");
}

// B fragments of two k16 steps for one n8 tile of rows (matrices: k 0-7, 8-15, 16-23, 24-31).
__device__ __forceinline__ void ldsm_x4(std::uint32_t addr, std::uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int LUT>
__device__ __forceinline__ std::uint32_t lop3(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(LUT));
  return d;
}

__device__ __forceinline__ std::uint32_t mul_hi_u32(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("mul.hi.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

__device__ __forceinline__ std::uint32_t bf2_sub(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("sub.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ std::uint32_t bf2_mul(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// Both halves the low (high) half of v: written as 16-bit moves, the form ptxas can turn into an
// operand swizzle (.H0_H0 / .H1_H1) of the bf16x2 instruction that reads the result.
__device__ __forceinline__ std::uint32_t bf2_lo2(std::uint32_t v) {
  std::uint32_t d;
  asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %1;\n\tmov.b32 %0, {l, l};\n\t}" : "=r"(d) : "r"(v));
  return d;
}
__device__ __forceinline__ std::uint32_t bf2_hi2(std::uint32_t v) {
  std::uint32_t d;
  asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %1;\n\tmov.b32 %0, {h, h};\n\t}" : "=r"(d) : "r"(v));
  return d;
}
// a * b + c, one rounding. bf16 has no .ftz form: subnormal inputs are kept (PTX ISA), which
// the int4 decode relies on.
__device__ __forceinline__ std::uint32_t bf2_fma(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// Programmatic dependent launch (grid_dependency.cuh): wait until the previous kernel in the
// stream has completed and its writes are visible; let the next kernel launch (it still waits for
// this one's completion before it reads what this one writes).
__device__ __forceinline__ void grid_dependency_wait() { wait_for_previous_grid(); }
__device__ __forceinline__ void launch_dependents() { allow_next_grid_launch(); }
#endif  // !EAGLESIM_MOE_EMULATE

// q >> s (0 < s < 32). Imad: as the high word of q * 2^(32 - s), an integer multiply on the FMA
// pipe instead of a shift on the ALU pipe, which the int4/fp8 conversion keeps busiest.
template <bool Imad>
__device__ __forceinline__ std::uint32_t shr(std::uint32_t q, int s) {
  if constexpr (Imad) return mul_hi_u32(q, 1u << (32 - s));
  else return q >> s;
}

// One int4 word = one k16 step: register r from the nibbles at bits 4r and 16+4r. Decoded with
// one shift, four ANDs and four bf16x2 FMAs per word (no magic-number OR, no per-pair shift):
//  * a nibble u masked in place at bits 0-3 of a bf16 half is the subnormal u * 2^-133;
//  * at bits 4-7 it is u * 2^-129 (bit 7 is the exponent's lowest bit, and the bf16 encoding is
//    linear across the subnormal / first-binade boundary, so u >= 8 lands on the same line);
//  * the nibbles at bits 8-15 take the same two masks after one shift by 8.
// fma(t, 2^77 or 2^73, -2^-53) is then (u - 8) * 2^-56 exactly (4 significant bits: the one
// rounding never rounds). 2^-56 rather than 2^0 keeps every multiplier a bf16 (2^133 is not) and
// leaves room both ways for a folded group scale s (see Int4Scale): s * 2^77 stays finite for
// |s| < 2^51 and (u - 8) * s * 2^-56 normal for |s| >= 2^-70. The 2^-56 stays in every product and
// fp32 partial sum (far from fp32's underflow) and kInt4DecodeUnscale takes it out once per
// output, in store_tile.
constexpr std::uint32_t kInt4Mask0 = 0x000F000Fu;  // nibble at bits 0-3 of each half
constexpr std::uint32_t kInt4Mask4 = 0x00F000F0u;  // nibble at bits 4-7 of each half
constexpr std::uint32_t kInt4Mul0 = 0x66006600u;   // 2^77: u * 2^-133 -> u * 2^-56
constexpr std::uint32_t kInt4Mul4 = 0x64006400u;   // 2^73: u * 2^-129 -> u * 2^-56
constexpr std::uint32_t kInt4Zero = 0xA500A500u;   // -2^-53 = -8 * 2^-56: the zero point
constexpr float kInt4DecodeUnscale = 0x1p56f;

// The FMA operands of one scale group, the scale folded in: mul0/zero_lo for registers 0 and 2
// (the lane's row L/4, scale in the low half of the packed scale word), mul4/zero_hi for 1 and 3
// (row L/4 + 8, high half). A power-of-two multiple of a bf16 is exact, so the folded FMA gives
// (u - 8) * s * 2^-56 with one rounding, as (u - 8) times s would be rounded.
struct Int4Scale {
  std::uint32_t mul0, zero_lo, mul4, zero_hi;
};

#if !defined(EAGLESIM_INT4_MAGIC_DECODE)
__device__ __forceinline__ Int4Scale int4_scale(std::uint32_t sw) {
  const std::uint32_t s_lo = bf2_lo2(sw), s_hi = bf2_hi2(sw);
  return {bf2_mul(s_lo, kInt4Mul0), bf2_mul(s_lo, kInt4Zero), bf2_mul(s_hi, kInt4Mul4), bf2_mul(s_hi, kInt4Zero)};
}
// The unscaled operands: (u - 8) * 2^-56 exactly, for the paths that scale fp32 partial sums.
constexpr Int4Scale kInt4Unscaled = {kInt4Mul0, kInt4Zero, kInt4Mul4, kInt4Zero};

template <bool Imad = false>
__device__ __forceinline__ void int4_step(std::uint32_t q, Int4Scale c, std::uint32_t (&a)[4]) {
  const std::uint32_t q8 = shr<Imad>(q, 8);
  a[0] = bf2_fma(q & kInt4Mask0, c.mul0, c.zero_lo);
  a[1] = bf2_fma(q & kInt4Mask4, c.mul4, c.zero_hi);
  a[2] = bf2_fma(q8 & kInt4Mask0, c.mul0, c.zero_lo);
  a[3] = bf2_fma(q8 & kInt4Mask4, c.mul4, c.zero_hi);
}
#else
// Build-time fallback (-DEAGLESIM_INT4_MAGIC_DECODE) for a device whose bf16 FMA would flush
// subnormal inputs: each nibble ORed into 0x4300 (bf16 128, ulp 1) is 128 + u exactly, minus 136
// is u - 8 exactly, times s * 2^-56 (mul0 / mul4 here; no zero terms) rounds once: the same
// values as the FMA decode, for 3 shifts + 4 lop3 + 8 bf16x2 ops per word instead of 1 + 4 + 4.
__device__ __forceinline__ Int4Scale int4_scale(std::uint32_t sw) {
  constexpr std::uint32_t k2m56 = 0x23802380u;  // 2^-56
  return {bf2_mul(bf2_lo2(sw), k2m56), 0u, bf2_mul(bf2_hi2(sw), k2m56), 0u};
}
constexpr Int4Scale kInt4Unscaled = {0x23802380u, 0u, 0x23802380u, 0u};

template <bool Imad = false>
__device__ __forceinline__ void int4_step(std::uint32_t q, Int4Scale c, std::uint32_t (&a)[4]) {
  constexpr std::uint32_t kMagic = 0x43004300u, k136 = 0x43084308u;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const std::uint32_t t = lop3<(0xF0 & 0xCC) | 0xAA>(r ? shr<Imad>(q, 4 * r) : q, kInt4Mask0, kMagic);
    a[r] = bf2_mul(bf2_sub(t, k136), (r & 1) ? c.mul4 : c.mul0);
  }
}
#endif

// One fp8 word = two registers: bytes 0,2 -> `lo`, bytes 1,3 -> `hi`. An e4m3 byte moved to bf16
// bits {15, 10..4} is its value times 2^-120 (also for e4m3 subnormals, which become bf16
// subnormals); `bias` multiplies that back (2^120, times the block scale where there is one).
template <bool Imad = false>
__device__ __forceinline__ void fp8_word(std::uint32_t q, std::uint32_t bias, std::uint32_t& lo, std::uint32_t& hi) {
  const std::uint32_t h = (shr<Imad>(q, 4) & 0x07F007F0u) | (q & 0x80008000u);
  const std::uint32_t q8 = q << 8;
  const std::uint32_t l = (shr<Imad>(q8, 4) & 0x07F007F0u) | (q8 & 0x80008000u);
  lo = bf2_mul(l, bias);
  hi = bf2_mul(h, bias);
}

__device__ __forceinline__ std::uint32_t bf16x2_bits(float v) {
  const __nv_bfloat162 b = __floats2bfloat162_rn(v, v);
  return *reinterpret_cast<const std::uint32_t*>(&b);
}

// FirstAlways: the first row tile's mma without the check (an item has at least one row), so at
// 8 rows per item a stage has no branch at all.
template <int R, bool FirstAlways = false>
__device__ __forceinline__ void mma_pair(float (&acc)[R][4], const std::uint32_t (&a0)[4],
                                         const std::uint32_t (&a1)[4], std::uint32_t xaddr, int xpitch,
                                         int row_tiles) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if ((FirstAlways && r == 0) || r < row_tiles) {
      std::uint32_t b[4];
      ldsm_x4(xaddr + r * 8 * xpitch, b);
      mma_bf16(acc[r], a0, b[0], b[1]);
      mma_bf16(acc[r], a1, b[2], b[3]);
    }
  }
}

// One stage of one warp's 16-channel block: klen (a multiple of 64) of the stage's k. Full: klen
// is the whole stage (no per-atom checks); the variant's `straight` knob also drops the first row
// tile's check.
template <WFormat F, int R, int V = 0, bool Full = false>
__device__ __forceinline__ void consume_stage(const unsigned char* stage, int warp, int lane, int k0, int klen,
                                              int row_tiles, float block_scale, float (&acc)[R][4]) {
  using Cfg = TileConfig<F, R, V>;
  constexpr bool kAll = Cfg::kVariant.straight;
  constexpr bool kImad = Cfg::kVariant.imad_shift;
  const unsigned char* wblk = stage + Cfg::kWeightOff + warp * Cfg::kBlockWeightBytes + lane * 16;
  const std::uint32_t xaddr =
      smem_u32(stage + Cfg::kXOff) + (lane & 7) * Cfg::kXPitch + (lane >> 3) * 16;  // + 64 B per 32 k
  if constexpr (F == WFormat::bf16) {
#pragma unroll
    for (int q = 0; q < Cfg::kTK / 32; ++q) {
      if (Full || q * 32 < klen) {
        const uint4 w0 = *reinterpret_cast<const uint4*>(wblk + (2 * q) * kAtomBytes);
        const uint4 w1 = *reinterpret_cast<const uint4*>(wblk + (2 * q + 1) * kAtomBytes);
        const std::uint32_t a0[4] = {w0.x, w0.y, w0.z, w0.w};
        const std::uint32_t a1[4] = {w1.x, w1.y, w1.z, w1.w};
        mma_pair<R, kAll>(acc, a0, a1, xaddr + 64 * q, Cfg::kXPitch, row_tiles);
      }
    }
  } else if constexpr (is_fp8(F)) {
    std::uint32_t bias = 0x7B807B80u;  // 2^120
    if constexpr (F == WFormat::fp8_block)
      bias = bf16x2_bits(block_scale * 0x1p120f);
#pragma unroll
    for (int q = 0; q < Cfg::kTK / 32; ++q) {
      if (Full || q * 32 < klen) {
        const uint4 raw = *reinterpret_cast<const uint4*>(wblk + q * kAtomBytes);
        std::uint32_t a0[4], a1[4];
        fp8_word<kImad>(raw.x, bias, a0[0], a0[1]);
        fp8_word<kImad>(raw.y, bias, a0[2], a0[3]);
        fp8_word<kImad>(raw.z, bias, a1[0], a1[1]);
        fp8_word<kImad>(raw.w, bias, a1[2], a1[3]);
        mma_pair<R, kAll>(acc, a0, a1, xaddr + 64 * q, Cfg::kXPitch, row_tiles);
      }
    }
  } else {
    constexpr int G = int4_group(F);
    const unsigned char* sblk = stage + Cfg::kScaleOff + warp * Cfg::kBlockScaleBytes + (lane >> 2) * 4;
    if constexpr (R <= 2 && !Cfg::kVariant.int4_fold) {
      // Few rows: the group scale multiplies the fp32 partial sum of its group (4R FFMA per group)
      // instead of being folded into the decode (4 HMUL2 per group); the mma then sees u - 8
      // exactly (times 2^-56).
      constexpr int kPairsPerGroup = G / 32;
      static_assert(Cfg::kTK % G == 0, "a stage holds whole scale groups");
      float part[R][4];
#pragma unroll
      for (int at = 0; at < Cfg::kTK / 64; ++at) {
        if (Full || at * 64 < klen) {
          const uint4 raw = *reinterpret_cast<const uint4*>(wblk + at * kAtomBytes);
          const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int q = 2 * at + h;
            if (q % kPairsPerGroup == 0) {
#pragma unroll
              for (int r = 0; r < R; ++r) part[r][0] = part[r][1] = part[r][2] = part[r][3] = 0.f;
            }
            std::uint32_t a0[4], a1[4];
            int4_step<kImad>(words[2 * h], kInt4Unscaled, a0);
            int4_step<kImad>(words[2 * h + 1], kInt4Unscaled, a1);
            mma_pair<R, kAll>(part, a0, a1, xaddr + 64 * q, Cfg::kXPitch, row_tiles);
            if (q % kPairsPerGroup == kPairsPerGroup - 1) {
              const std::uint32_t sw = *reinterpret_cast<const std::uint32_t*>(sblk + (q / kPairsPerGroup) * 32);
              const float s_lo = __uint_as_float(sw << 16), s_hi = __uint_as_float(sw & 0xffff0000u);
#pragma unroll
              for (int r = 0; r < R; ++r) {
                acc[r][0] = fmaf(part[r][0], s_lo, acc[r][0]);
                acc[r][1] = fmaf(part[r][1], s_lo, acc[r][1]);
                acc[r][2] = fmaf(part[r][2], s_hi, acc[r][2]);
                acc[r][3] = fmaf(part[r][3], s_hi, acc[r][3]);
              }
            }
          }
        }
      }
    } else {
      // The group scale folded into the decode's FMA operands (4 HMUL2 per group and lane, no
      // per-pair multiply): at 32/64 rows, where per-row-tile FFMAs on partial sums would cost
      // more, and in the int4_fold variants. Stages that start on a group boundary (every stage
      // depth but int4_g128's 64) compute the operands once per group.
      constexpr bool kAligned = Cfg::kTK % G == 0;
      Int4Scale sc{};
#pragma unroll
      for (int at = 0; at < Cfg::kTK / 64; ++at) {
        if (Full || at * 64 < klen) {
          const uint4 raw = *reinterpret_cast<const uint4*>(wblk + at * kAtomBytes);
          const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int q = 2 * at + h;  // 32 k: inside one scale group for both group sizes
            if (!kAligned || (32 * q) % G == 0) {
              const int g_rel = kAligned ? 32 * q / G : ((k0 % G) + 32 * q) / G;
              sc = int4_scale(*reinterpret_cast<const std::uint32_t*>(sblk + g_rel * 32));
            }
            std::uint32_t a0[4], a1[4];
            int4_step<kImad>(words[2 * h], sc, a0);
            int4_step<kImad>(words[2 * h + 1], sc, a1);
            mma_pair<R, kAll>(acc, a0, a1, xaddr + 64 * q, Cfg::kXPitch, row_tiles);
          }
        }
      }
    }
  }
}

struct Item {
  int e, tile, row0, rows;
};

// Item index -> (expert, 128-channel tile, row block). Items are expert-major, then tile, then row
// block, so a dense GEMM's row blocks of one tile run side by side and share its weights in L2.
__device__ __forceinline__ Item decode_item(int item, const int* s_off, const int* s_items, int experts,
                                            int rows_per_block) {
  int lo = 0, hi = experts;  // s_items[lo] <= item < s_items[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (s_items[mid] <= item) lo = mid;
    else hi = mid;
  }
  const int rows_e = s_off[lo + 1] - s_off[lo];
  const int blocks = (rows_e + rows_per_block - 1) / rows_per_block;
  const int local = item - s_items[lo];
  const int rb = local % blocks;
  Item it;
  it.e = lo;
  it.tile = local / blocks;
  it.row0 = s_off[lo] + rb * rows_per_block;
  it.rows = min(rows_per_block, rows_e - rb * rows_per_block);
  return it;
}

template <WFormat F, int R>
__device__ __forceinline__ void store_tile(const GemmParams& p, const Item& it, int warp, int lane,
                                           int row_tiles, const float (&acc)[R][4]) {
  const int ch_base = it.tile * kTileN + warp * 16 + (lane >> 2);
  float s[2] = {1.f, 1.f};
  if constexpr (is_int4(F)) s[0] = s[1] = kInt4DecodeUnscale;
  if constexpr (F == WFormat::fp8_channel) {
    const float* sc = reinterpret_cast<const float*>(p.scales + it.e * p.s_expert_bytes);
    s[0] = ch_base < p.n ? sc[ch_base] : 0.f;
    s[1] = ch_base + 8 < p.n ? sc[ch_base + 8] : 0.f;
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r < row_tiles) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int row = 8 * r + 2 * (lane & 3) + (j & 1);
        const int ch = ch_base + 8 * (j >> 1);
        if (row < it.rows && ch < p.n)
          p.y[static_cast<std::int64_t>(it.row0 + row) * p.n + ch] = __float2bfloat16(acc[r][j] * s[j >> 1]);
      }
    }
  }
}

// A position in the ring of S stage buffers: the slot and the parity of its use, advanced by one
// per chunk. Deriving both from a 64-bit chunk index (% S, / S) cost about 20 instructions per
// chunk in the consumers' loop, 7 % of its instructions.
template <int S>
struct StageRing {
  int slot;
  std::uint32_t phase;
  __device__ explicit StageRing(std::int64_t index)
      : slot(static_cast<int>(index % S)), phase(static_cast<std::uint32_t>((index / S) & 1)) {}
  __device__ void advance() {
    if (++slot == S) {
      slot = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace detail

// V: the kernel variant (kVariants in moe_gemm_layout.cuh); 0 is the kernel as designed.
template <WFormat F, int R, int V = 0>
__global__ void __launch_bounds__(kThreads, kVariants[V].ctas_per_sm) moe_grouped_gemm_kernel(const GemmParams p) {
  using Cfg = TileConfig<F, R, V>;
  using namespace detail;
  constexpr int S = Cfg::kStages, TK = Cfg::kTK, AK = Cfg::kAtomK;
  constexpr int kRowsPerBlock = 8 * R;
  constexpr bool kPdl = Cfg::kVariant.pdl;
  // With PDL only a dense GEMM's work list is known before the previous kernel ends (a grouped
  // one's comes from the routing in expert_offsets): every thread waits before the first read of
  // anything a previous kernel may write, except a dense producer's weight copies.
  const bool dense_early = kPdl && p.expert_offsets == nullptr;
  if constexpr (kPdl) {
    launch_dependents();
    if (!dense_early) grid_dependency_wait();
  }
  EAGLESIM_MOE_DYNAMIC_SMEM(smem);
  const std::uint32_t smem0 = smem_u32(smem);
  const std::uint32_t full0 = smem0 + Cfg::kBarrierOff, empty0 = full0 + 8 * S;
  int* s_off = reinterpret_cast<int*>(smem + Cfg::kTableOff);
  int* s_items = s_off + p.experts + 1;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int E = p.experts;
  const int n16 = (p.n + 15) / 16, n_tiles = (p.n + kTileN - 1) / kTileN;

  // ---- the work list: items per expert and their prefix (only experts with rows make items)
  for (int i = threadIdx.x; i <= E; i += kThreads)
    s_off[i] = p.expert_offsets ? p.expert_offsets[i] : (i == 0 ? 0 : p.dense_rows);
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, kConsumerWarps);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  {
    // Items per expert and their exclusive prefix, by the whole block (it stands between the
    // launch and the first bulk copy): each thread sums a run of experts, a shuffle scan per
    // warp, then the warp totals.
    __shared__ int s_warp_total[kThreads / 32];
    const int per = (E + kThreads - 1) / kThreads;
    const int e0 = min(E, static_cast<int>(threadIdx.x) * per), e1 = min(E, e0 + per);
    auto items_of = [&](int e) {
      const int rows = s_off[e + 1] - s_off[e];
      return rows > 0 ? (rows + kRowsPerBlock - 1) / kRowsPerBlock * n_tiles : 0;
    };
    int local = 0;
    for (int e = e0; e < e1; ++e) local += items_of(e);
    int incl = local;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    if (lane == 31) s_warp_total[warp] = incl;
    __syncthreads();
    int run = incl - local;
    for (int w = 0; w < warp; ++w) run += s_warp_total[w];
    for (int e = e0; e < e1; ++e) {
      s_items[e] = run;
      run += items_of(e);
    }
    if (threadIdx.x == kThreads - 1) s_items[E] = run;
  }
  __syncthreads();
  const int total_items = s_items[E];
  if (total_items > p.max_items) __trap();  // more rows than the plan's workspace was sized for
  const int kc = (p.k + TK - 1) / TK;
  const std::int64_t T = static_cast<std::int64_t>(total_items) * kc;
  const std::int64_t G = min(static_cast<std::int64_t>(gridDim.x), T);
  if (static_cast<std::int64_t>(blockIdx.x) >= G) return;
  const std::int64_t begin = sk_begin(blockIdx.x, T, G), end = sk_begin(blockIdx.x + 1, T, G);

  if (warp == kConsumerWarps) {
    // ---- producer: bulk copies for every chunk of this CTA's range, in order
    const std::uint64_t policy = l2_evict_first_policy();
    // Walks chunks [from, to) of the range: the chunk's index in the range picks its stage slot
    // (index % S) and the parity of that slot's use (index / S). kWeights / kX pick the copies; the transaction count is set with the weights.
    constexpr int kWeights = 1, kX = 2;
    auto issue = [&](std::int64_t from, std::int64_t to, int parts) {
      StageRing<S> ring(from - begin);
      for (std::int64_t pos = from; pos < to;) {
        const int item = static_cast<int>(pos / kc);
        const int c0 = static_cast<int>(pos % kc);
        const int c1 = static_cast<int>(min(static_cast<std::int64_t>(kc), c0 + (to - pos)));
        const Item w = decode_item(item, s_off, s_items, E, kRowsPerBlock);
        const int nb = min(kConsumerWarps, n16 - w.tile * kConsumerWarps);
        const std::uint8_t* wexp = p.w + w.e * p.w_expert_bytes;
        const std::uint8_t* sexp = p.scales + w.e * p.s_expert_bytes;
        for (int c = c0; c < c1; ++c, ring.advance()) {
          const int slot = ring.slot;
          const int k0 = c * TK, klen = min(TK, p.k - k0);
          const std::uint32_t wbytes = klen / AK * kAtomBytes, xbytes = klen * 2;
          const std::uint32_t stage = smem0 + slot * Cfg::kStageBytes, bar = full0 + 8 * slot;
          if (parts & kWeights) {
            mbar_wait(empty0 + 8 * slot, ring.phase ^ 1u);
            std::uint32_t sbytes = 0, tile_sbytes = 0;
            int q0 = 0;
            if constexpr (is_int4(F)) {
              constexpr int Gs = int4_group(F);
              q0 = k0 / Gs;
              sbytes = static_cast<std::uint32_t>((k0 + klen + Gs - 1) / Gs - q0) * 32;
            }
            if constexpr (F == WFormat::fp8_block) tile_sbytes = 16;
            if (lane == 0) mbar_arrive_expect_tx(bar, nb * (wbytes + sbytes) + tile_sbytes + w.rows * xbytes);
            __syncwarp();
            if (lane < nb) {
              const int blk = w.tile * kConsumerWarps + lane;
              bulk_load_evict_first(stage + Cfg::kWeightOff + lane * Cfg::kBlockWeightBytes,
                                    wexp + (static_cast<std::int64_t>(blk) * (p.k / AK) + k0 / AK) * kAtomBytes,
                                    wbytes, bar, policy);
              if constexpr (is_int4(F))
                bulk_load(stage + Cfg::kScaleOff + lane * Cfg::kBlockScaleBytes,
                          sexp + (static_cast<std::int64_t>(blk) * (p.k / int4_group(F)) + q0) * 32, sbytes, bar);
            }
            if constexpr (F == WFormat::fp8_block) {
              if (lane == 31) {
                // the 16-byte aligned window holding this (tile, k-block)'s scale; it lands at kScaleOff
                const std::int64_t idx = static_cast<std::int64_t>(w.tile) * ((p.k + 127) / 128) + k0 / 128;
                bulk_load(stage + Cfg::kScaleOff, sexp + (idx & ~std::int64_t(3)) * 4, 16, bar);
              }
            }
          }
          if (parts & kX) {
            for (int r = lane; r < w.rows; r += 32)
              bulk_load(stage + Cfg::kXOff + r * Cfg::kXPitch,
                        p.x + static_cast<std::int64_t>(w.row0 + r) * p.k + k0, xbytes, bar);
          }
        }
        pos += c1 - c0;
      }
    };
    std::int64_t from = begin;
    if (dense_early) {
      // the first S stages' weights, then the activations once the previous kernel is done
      const std::int64_t early = min(end, begin + S);
      issue(begin, early, kWeights);
      grid_dependency_wait();
      issue(begin, early, kX);
      from = early;
    }
    issue(from, end, kWeights | kX);
    return;
  }

  // ---- consumers
  if (dense_early) grid_dependency_wait();  // before the first write of y, partials or counters
  StageRing<S> ring(0);
  for (std::int64_t pos = begin; pos < end;) {
    const int item = static_cast<int>(pos / kc);
    const int c0 = static_cast<int>(pos % kc);
    const int c1 = static_cast<int>(min(static_cast<std::int64_t>(kc), c0 + (end - pos)));
    const Item w = decode_item(item, s_off, s_items, E, kRowsPerBlock);
    const bool mine = warp < n16 - w.tile * kConsumerWarps;
    const int row_tiles = (w.rows + 7) / 8;
    float acc[R][4];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = 0.f;
    for (int c = c0; c < c1; ++c, ring.advance()) {
      const int slot = ring.slot;
      mbar_wait(full0 + 8 * slot, ring.phase);
      if (mine) {
        const unsigned char* stage = smem + slot * Cfg::kStageBytes;
        float block_scale = 1.f;
        if constexpr (F == WFormat::fp8_block) {
          // this chunk's scale, out of the 16-byte window the producer copied
          const std::int64_t idx = static_cast<std::int64_t>(w.tile) * ((p.k + 127) / 128) + (c * TK) / 128;
          block_scale = reinterpret_cast<const float*>(stage + Cfg::kScaleOff)[idx & 3];
        }
        const int klen = min(TK, p.k - c * TK);
        bool full = false;
        if constexpr (Cfg::kVariant.straight) full = klen == TK;
        if (full)
          consume_stage<F, R, V, Cfg::kVariant.straight>(stage, warp, lane, c * TK, klen, row_tiles, block_scale, acc);
        else
          consume_stage<F, R, V, false>(stage, warp, lane, c * TK, klen, row_tiles, block_scale, acc);
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(empty0 + 8 * slot);
    }
    if (mine) {
      if (c0 == 0 && c1 == kc) {
        store_tile<F, R>(p, w, warp, lane, row_tiles, acc);
      } else {
        // a piece of an item: leave the fp32 partial; the last contributor sums all pieces
        const int slot = pos == begin ? 0 : 1;
        float4* mine_part = reinterpret_cast<float4*>(p.partials) +
                            ((static_cast<std::int64_t>(blockIdx.x) * 2 + slot) * kConsumerWarps + warp) * R * 32;
#pragma unroll
        for (int r = 0; r < R; ++r)
          if (r < row_tiles) mine_part[r * 32 + lane] = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
        __threadfence();
        __syncwarp();
        int prev = 0;
        if (lane == 0) prev = atomicAdd(&p.counters[item * kConsumerWarps + warp], 1);
        prev = __shfl_sync(0xffffffffu, prev, 0);
        const std::int64_t cf = sk_owner(static_cast<std::int64_t>(item) * kc, T, G);
        const std::int64_t cl = sk_owner(static_cast<std::int64_t>(item + 1) * kc - 1, T, G);
        if (prev == cl - cf) {
          __threadfence();
          float sum[R][4];
#pragma unroll
          for (int r = 0; r < R; ++r) sum[r][0] = sum[r][1] = sum[r][2] = sum[r][3] = 0.f;
          for (std::int64_t cc = cf; cc <= cl; ++cc) {
            const int sl = sk_slot(cc, item, kc, T, G);
            const float4* part = reinterpret_cast<const float4*>(p.partials) +
                                 ((cc * 2 + sl) * kConsumerWarps + warp) * R * 32;
#pragma unroll
            for (int r = 0; r < R; ++r) {
              if (r < row_tiles) {
                const float4 v = __ldcg(part + r * 32 + lane);
                sum[r][0] += v.x;
                sum[r][1] += v.y;
                sum[r][2] += v.z;
                sum[r][3] += v.w;
              }
            }
          }
          store_tile<F, R>(p, w, warp, lane, row_tiles, sum);
          if (lane == 0) p.counters[item * kConsumerWarps + warp] = 0;  // ready for the next launch
        }
      }
    }
    pos += c1 - c0;
  }
}

}  // namespace eaglesim::kernels::moe
