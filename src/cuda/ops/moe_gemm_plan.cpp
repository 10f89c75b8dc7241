#include "cuda/ops/moe_gemm_plan.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/ops/int4_wgmma_gemm.hpp"
#include "moe_gemm_layout.cuh"

namespace eaglesim::cuda {

namespace km = eaglesim::kernels::moe;

namespace {

km::WFormat kf(GemmWeightFormat f) { return static_cast<km::WFormat>(static_cast<int>(f)); }

struct Cfg {
  int tk, stages, ctas_per_sm;
  std::size_t smem;
};

template <km::WFormat F, int R, int V>
Cfg cfg_of(int experts) {
  using C = km::TileConfig<F, R, V>;
  return {C::kTK, C::kStages, C::kVariant.ctas_per_sm, C::smem_bytes(experts)};
}

template <km::WFormat F, int R, int V>
void pick_if(int v, int experts, Cfg& c) {
  if constexpr (km::variant_applies(F, R, V))
    if (v == V) c = cfg_of<F, R, V>(experts);
}

template <km::WFormat F, int R, int... Vs>
Cfg cfg_pick(int v, int experts, std::integer_sequence<int, Vs...>) {
  Cfg c = cfg_of<F, R, 0>(experts);
  (pick_if<F, R, Vs>(v, experts, c), ...);
  return c;
}

template <km::WFormat F>
Cfg cfg_rows(int r, int v, int experts) {
  constexpr auto vs = std::make_integer_sequence<int, km::kVariantCount>{};
  switch (r) {
    case 1: return cfg_pick<F, 1>(v, experts, vs);
    case 2: return cfg_pick<F, 2>(v, experts, vs);
    case 4: return cfg_pick<F, 4>(v, experts, vs);
    default: return cfg_pick<F, 8>(v, experts, vs);
  }
}

Cfg cfg_for(GemmWeightFormat f, int r, int v, int experts) {
  switch (f) {
    case GemmWeightFormat::bf16: return cfg_rows<km::WFormat::bf16>(r, v, experts);
    case GemmWeightFormat::fp8_channel: return cfg_rows<km::WFormat::fp8_channel>(r, v, experts);
    case GemmWeightFormat::fp8_block: return cfg_rows<km::WFormat::fp8_block>(r, v, experts);
    case GemmWeightFormat::int4_g32: return cfg_rows<km::WFormat::int4_g32>(r, v, experts);
    case GemmWeightFormat::int4_g128: return cfg_rows<km::WFormat::int4_g128>(r, v, experts);
  }
  return cfg_rows<km::WFormat::bf16>(r, v, experts);
}

constexpr int kMaxExperts = 4096;             // the work-list tables live in shared memory
constexpr std::size_t kSmemPerSm = 228 * 1024;  // H100/H200; 1 KB of it is reserved per CTA
constexpr std::size_t kSmemPerCtaMax = 227 * 1024;

// The GEMV kernel's work split for a dense GEMM of m <= kGemvMaxRows rows and n16 = ceil(n / 16)
// channel blocks. A task is gemv_units_per_task units of one block; a block's k is cut into at
// most 8 tasks per CTA, so long k also splits over a cluster of up to 8 CTAs (the k-slices);
// blocks are then grouped so that the grid is about two CTAs per SM and every warp of a CTA has
// a task (the two counts are explained where they are taken): a CTA's warps stream many tasks
// back to back (each loading the next while it multiplies), and a CTA copies its slice of the
// activations once for all its blocks.
//
// Which kernel a plan picks (gemv = -1): gemv_picked (cost/low_bit_gemm_kernel.hpp), measured
// by `bench_gemm` on 1 x H200. Grouped GEMMs run the stream-K kernel: a grouped form of this
// kernel (one grid plane per expert with rows) measured 0.6-1.1x of it on every grouped shape of
// the table.
constexpr int kGemvMaxTasksPerBlock = 8;
constexpr int kGemvMaxBlocksPerCta = 8;
constexpr std::size_t kGemvSmemMax = 100 * 1024;

void plan_gemv(GroupedGemmPlan& p, int sm_count) {
  const GroupedGemmShape& s = p.shape;
  const int rows = s.max_rows;
  if (s.experts != 1 || rows > kGemvMaxRows) {
    if (s.gemv == 1)
      throw InputError(fmt::format("grouped GEMM: the GEMV kernel runs dense GEMMs of at most {} rows (got {} "
                                   "expert(s), {} rows)", kGemvMaxRows, s.experts, rows));
    return;
  }
  const km::WFormat f = kf(s.format);
  const int units = s.k / km::kGemvUnitK;
  const int per_task = km::gemv_units_per_task(f);
  const int tasks_k = (units + per_task - 1) / per_task;  // tasks per block over the whole k
  int split = std::clamp((tasks_k + kGemvMaxTasksPerBlock - 1) / kGemvMaxTasksPerBlock, 1, km::kGemvMaxSplit);
  if (s.gemv_split > 0) split = std::clamp(s.gemv_split, 1, std::min(km::kGemvMaxSplit, units));
  const int per_cta = (units + split - 1) / split;
  split = (units + per_cta - 1) / per_cta;
  const int parts = (per_cta + per_task - 1) / per_task;
  const int n16 = (s.n + 15) / 16;
  const int row_tiles = rows > 8 ? 2 : 1;
  // Blocks per CTA: the larger of two counts.
  //  * The fewest that keep the grid within two CTAs per SM (what the registers of the int4 and
  //    fp8 instances let reside): a grid beyond that runs a second wave, which pays the whole
  //    DRAM latency and the block reduction again, where two blocks per CTA keep both tasks of
  //    every warp loading from the start.
  //  * As many as give each of the CTA's warps a task (kGemvMaxWarps / parts): a block of short
  //    k has only 1-4 tasks, and a CTA of so few warps copies the activations alone, then runs
  //    its one task as a single latency chain; one CTA of 8 warps over 8 / parts blocks shares
  //    the copy and overlaps the chains. Measured over the dense shapes of `bench_gemm
  //    --gemv-sweep` (Llama-3.1-70B and Kimi-K2 TP8 projections, m = 1, 4, 16, every grid of
  //    split 1-8 x 1-8 blocks): docs/kernels/gemv.md, "The GEMV grid".
  const std::int64_t want_ctas = 2 * static_cast<std::int64_t>(std::max(sm_count, 1));
  const int max_bpc = std::min(kGemvMaxBlocksPerCta, n16);
  const std::int64_t one_wave = (static_cast<std::int64_t>(n16) * split + want_ctas - 1) / want_ctas;
  const std::int64_t busy_warps = km::kGemvMaxWarps / parts;
  int bpc = static_cast<int>(std::clamp<std::int64_t>(std::max(one_wave, busy_warps), 1, max_bpc));
  if (s.gemv_blocks_per_cta > 0) bpc = std::min(s.gemv_blocks_per_cta, max_bpc);
  auto smem_of = [&](int b) {
    return static_cast<std::size_t>(km::gemv_smem_bytes(8 * row_tiles, row_tiles, b, parts, per_cta));
  };
  while (bpc > 1 && smem_of(bpc) > kGemvSmemMax) --bpc;
  const std::size_t smem = smem_of(bpc);
  const int ctas_n = (n16 + bpc - 1) / bpc;
  if (smem > kGemvSmemMax || ctas_n > 65535) {
    if (s.gemv == 1)
      throw InputError(fmt::format("grouped GEMM: the GEMV kernel cannot run n={} k={} ({} B of shared memory "
                                   "per CTA, at most {})", s.n, s.k, smem, kGemvSmemMax));
    return;
  }
  if (s.gemv == -1) {
    if (!gemv_picked(km::is_int4(f), rows, s.n, static_cast<double>(p.weight_bytes_per_expert + p.scale_bytes_per_expert)))
      return;
  }
  p.gemv = true;
  p.gemv_split = split;
  p.gemv_units_per_cta = per_cta;
  p.gemv_units_per_task = per_task;
  p.gemv_parts = parts;
  p.gemv_blocks_per_cta = bpc;
  p.gemv_warps = std::min(km::kGemvMaxWarps, bpc * parts);
  p.gemv_row_tiles = row_tiles;
  p.gemv_pdl = true;
  p.gemv_smem_bytes = smem;
  p.pdl = p.gemv_pdl;
  p.variant = fmt::format("{} gemv r{} split{} b{} p{}x{} w{}{}", to_string(s.format), 8 * row_tiles, split, bpc, parts, per_task, p.gemv_warps, p.gemv_pdl ? " pdl" : "");
}

}  // namespace

int grouped_gemm_variant_count() { return km::kVariantCount; }

const char* grouped_gemm_variant_name(int variant) {
  return variant >= 0 && variant < km::kVariantCount ? km::kVariants[variant].name : "?";
}

// The variant each format and row tile runs unless a shape asks for another: the winner of
// `bench_gemm --variants` on 1 x H200 for that class (correct, and faster than base by more than
// 2 % in median over the class's shapes of >= 16 MB; docs/kernels/moe-and-quant-gemm.md,
// "Kernel variants"); base (0) where none won. Indices are kernels/moe_gemm_layout.cuh's
// kVariants: 1 straight, 3 occ3_straight, 5 pdl, 6 occ3_straight_pdl. int4_g32 at 8/16 rows runs
// the scale-folded form of its winner (12 fold, 13 straight_fold, 14 occ3_straight_fold) on
// instruction counts alone, until a sweep has measured them: with the one-shift decode, folding
// the group scale into the decode's FMAs takes 4 HMUL2 per group where scaling the partial sums
// takes 4R FFMA, 4R zeroings and the scale's conversion to fp32, eight groups per 256 k.
int default_grouped_gemm_variant(GemmWeightFormat format, int row_tile, bool dense) {
  using F = GemmWeightFormat;
  struct Winner {
    F format;
    bool dense;
    int row_tile, variant;
  };
  static constexpr Winner kWinners[] = {
      {F::fp8_block, true, 8, 5},    {F::fp8_channel, true, 8, 5},  {F::fp8_channel, true, 16, 6},
      {F::int4_g128, true, 8, 3},    {F::int4_g128, true, 16, 1},   {F::int4_g32, true, 8, 13},
      {F::int4_g32, true, 16, 5},    {F::bf16, false, 16, 6},       {F::fp8_block, false, 8, 3},
      {F::fp8_block, false, 16, 3},  {F::fp8_channel, false, 8, 3}, {F::fp8_channel, false, 16, 6},
      {F::int4_g128, false, 8, 6},   {F::int4_g128, false, 16, 1},  {F::int4_g32, false, 8, 14},
      {F::int4_g32, false, 16, 12},
  };
  for (const Winner& w : kWinners)
    if (w.format == format && w.dense == dense && w.row_tile == row_tile) return w.variant;
  return 0;
}

GroupedGemmPlan without_early_launch(const GroupedGemmPlan& plan, int sm_count) {
  GroupedGemmPlan p = plan;
  if (p.gemv) {
    p.gemv_pdl = p.pdl = false;
    return p;
  }
  if (!p.pdl) return p;
  const km::KernelVariant& v = km::kVariants[p.kernel_variant];
  for (int w = 0; w < km::kVariantCount; ++w) {
    const km::KernelVariant& u = km::kVariants[w];
    if (!u.pdl && u.ctas_per_sm == v.ctas_per_sm && u.straight == v.straight && u.int4_tk == v.int4_tk &&
        u.imad_shift == v.imad_shift && u.r64_tk == v.r64_tk && u.int4_fold == v.int4_fold) {
      GroupedGemmShape s = p.shape;
      s.variant = w;
      s.gemv = 0;
      return plan_grouped_gemm(s, sm_count);
    }
  }
  return p;
}

const char* to_string(GemmWeightFormat f) {
  switch (f) {
    case GemmWeightFormat::bf16: return "bf16";
    case GemmWeightFormat::fp8_channel: return "fp8_channel";
    case GemmWeightFormat::fp8_block: return "fp8_block";
    case GemmWeightFormat::int4_g32: return "int4_g32";
    case GemmWeightFormat::int4_g128: return "int4_g128";
  }
  return "?";
}

bool parse_gemm_weight_format(const std::string& name, GemmWeightFormat& out) {
  for (int i = 0; i <= 4; ++i) {
    const auto f = static_cast<GemmWeightFormat>(i);
    if (name == to_string(f)) {
      out = f;
      return true;
    }
  }
  return false;
}

std::int64_t packed_gemm_weight_bytes(GemmWeightFormat format, int n, int k) {
  return km::packed_weight_bytes(kf(format), n, k);
}
std::int64_t packed_gemm_scale_bytes(GemmWeightFormat format, int n, int k) {
  return km::packed_scale_bytes(kf(format), n, k);
}

std::string grouped_gemm_unsupported_reason(const GroupedGemmShape& s) {
  if (s.experts < 1 || s.experts > kMaxExperts)
    return fmt::format("experts must be in [1, {}] (got {})", kMaxExperts, s.experts);
  if (s.n < 1) return fmt::format("n must be >= 1 (got {})", s.n);
  if (s.k < km::kKAlign || s.k % km::kKAlign != 0)
    return fmt::format("k must be a positive multiple of {} (got {})", km::kKAlign, s.k);
  if (s.max_rows < 1) return fmt::format("max_rows must be >= 1 (got {})", s.max_rows);
  if (s.format == GemmWeightFormat::int4_g128 && s.k % 128 != 0)
    return fmt::format("int4 with group 128 needs k % 128 == 0 (got k={}); use int4_g32", s.k);
  return {};
}

GroupedGemmPlan plan_grouped_gemm(const GroupedGemmShape& shape, int sm_count) {
  if (const std::string why = grouped_gemm_unsupported_reason(shape); !why.empty())
    throw InputError("grouped GEMM: " + why);
  if (sm_count < 1) throw InputError(fmt::format("grouped GEMM: sm_count must be >= 1 (got {})", sm_count));
  GroupedGemmPlan p;
  p.shape = shape;
  // Row tile: the smallest that holds the busiest expert's rows in one item (weights then stream
  // once per item); padding rows cost mma issue slots, which this memory-bound op has spare. A
  // dense int4 / fp8 GEMM of more rows takes several smaller items (dense_weight_only_row_tile).
  const int hint = shape.rows_per_expert > 0 ? std::min(shape.rows_per_expert, shape.max_rows) : shape.max_rows;
  const bool dense_low_bit = shape.experts == 1 && shape.format != GemmWeightFormat::bf16;
  const int r =
      (dense_low_bit ? dense_weight_only_row_tile(km::is_int4(kf(shape.format)), hint) : weight_only_row_tile(hint)) / 8;
  if (shape.variant < -1 || shape.variant >= km::kVariantCount)
    throw InputError(fmt::format("grouped GEMM: variant must be -1 (the default) or in [0, {}) (got {})",
                                 km::kVariantCount, shape.variant));
  int v = shape.variant >= 0 ? shape.variant : default_grouped_gemm_variant(shape.format, 8 * r, shape.experts == 1);
  if (!km::variant_applies(kf(shape.format), r, v)) v = 0;
  const Cfg c = cfg_for(shape.format, r, v, shape.experts);
  p.kernel_variant = v;
  p.pdl = km::kVariants[v].pdl;
  p.row_tile = 8 * r;
  p.tile_n = km::kTileN;
  p.k_tile = c.tk;
  p.stages = c.stages;
  p.threads = km::kThreads;
  p.smem_bytes = c.smem;
  if (p.smem_bytes > kSmemPerCtaMax)
    throw InputError(fmt::format("grouped GEMM: {} experts need {} B of shared memory per CTA", shape.experts,
                                 p.smem_bytes));
  p.ctas_per_sm = static_cast<int>(std::max<std::size_t>(
      1, std::min<std::size_t>(static_cast<std::size_t>(c.ctas_per_sm), kSmemPerSm / (p.smem_bytes + 1024 + 128))));  // + reserved, + static
  p.grid = sm_count * p.ctas_per_sm;
  const int n_tiles = (shape.n + km::kTileN - 1) / km::kTileN;
  // Items: sum over experts of ceil(rows_e / row_tile) tiles <= active experts + rows / row_tile.
  const std::int64_t row_blocks = std::min(shape.experts, shape.max_rows) + shape.max_rows / p.row_tile;
  p.max_items = static_cast<int>(std::min<std::int64_t>(row_blocks * n_tiles, 1 << 30));
  p.counter_bytes = align256(static_cast<std::size_t>(p.max_items) * km::kConsumerWarps * sizeof(int));
  p.partial_bytes = static_cast<std::size_t>(p.grid) * 2 * km::kConsumerWarps * r * 32 * 4 * sizeof(float);
  p.workspace_bytes = p.counter_bytes + p.partial_bytes;
  p.weight_bytes_per_expert = packed_gemm_weight_bytes(shape.format, shape.n, shape.k);
  p.scale_bytes_per_expert = packed_gemm_scale_bytes(shape.format, shape.n, shape.k);
  p.variant = fmt::format("{} r{} tk{} s{}", to_string(shape.format), p.row_tile, p.k_tile, p.stages);
  if (v != 0) p.variant += fmt::format(" {} x{}", km::kVariants[v].name, p.ctas_per_sm);
  if (shape.gemv < -1 || shape.gemv > 1)
    throw InputError(fmt::format("grouped GEMM: gemv must be -1, 0 or 1 (got {})", shape.gemv));
  if (shape.wgmma < 0 || shape.wgmma > 1)
    throw InputError(fmt::format("grouped GEMM: wgmma must be 0 or 1 (got {})", shape.wgmma));
  // An explicitly requested kernel variant or GEMV is the stream-K / GEMV kernel's; otherwise a
  // dense int4 GEMM of enough rows asked to run on wgmma does (its time is the tensor cores').
  if (shape.experts == 1 && shape.wgmma == 1 && shape.variant < 0 && shape.gemv != 1 &&
      int4_wgmma_unsupported_reason(shape.format, shape.max_rows, shape.n, shape.k).empty()) {
    plan_int4_wgmma(p, sm_count);
    return p;
  }
  // An explicitly requested kernel variant is a variant of the stream-K kernel.
  if (shape.gemv == 1 || (shape.gemv == -1 && shape.variant < 0)) plan_gemv(p, sm_count);
  return p;
}

GroupedGemmPlan plan_weight_only_gemm(GemmWeightFormat format, int m, int n, int k, int sm_count, int variant,
                                      int gemv, int wgmma) {
  GroupedGemmShape s;
  s.format = format;
  s.experts = 1;
  s.n = n;
  s.k = k;
  s.max_rows = m;
  s.rows_per_expert = m;
  s.variant = variant;
  s.gemv = gemv;
  s.wgmma = wgmma;
  return plan_grouped_gemm(s, sm_count);
}

PackedGemmWeights pack_grouped_weights(GemmWeightFormat format, int experts, int n, int k, const void* weights,
                                       const void* scales) {
  GroupedGemmShape s;
  s.format = format;
  s.experts = experts;
  s.n = n;
  s.k = k;
  s.max_rows = 1;
  if (const std::string why = grouped_gemm_unsupported_reason(s); !why.empty())
    throw InputError("pack_grouped_weights: " + why);
  if (!weights) throw InputError("pack_grouped_weights: no weights");
  const km::WFormat f = kf(format);
  if (f != km::WFormat::bf16 && !scales) throw InputError("pack_grouped_weights: this format needs scales");
  const std::int64_t wb = km::packed_weight_bytes(f, n, k), sb = km::packed_scale_bytes(f, n, k);
  PackedGemmWeights out;
  out.weights.assign(static_cast<std::size_t>(wb * experts), 0);  // zero: the padding channels
  out.scales.assign(static_cast<std::size_t>(sb * experts), 0);
  const auto* w8 = static_cast<const std::uint8_t*>(weights);
  for (int e = 0; e < experts; ++e) {
    std::uint8_t* dst = out.weights.data() + wb * e;
    for (int row = 0; row < n; ++row) {
      const std::int64_t src_row = static_cast<std::int64_t>(e) * n + row;
      for (int col = 0; col < k; ++col) {
        const km::PackedPos pos = km::packed_weight_pos(f, k, row, col);
        if (f == km::WFormat::bf16) {
          std::memcpy(dst + pos.byte, w8 + (src_row * k + col) * 2, 2);
        } else if (km::is_fp8(f)) {
          const std::uint8_t b = w8[src_row * k + col];
          if ((b & 0x7f) == 0x7f)
            throw InputError(fmt::format("pack_grouped_weights: NaN fp8 weight at expert {} [{}, {}]", e, row, col));
          dst[pos.byte] = b;
        } else {
          const std::uint8_t b = w8[src_row * (k / 2) + col / 2];
          const int nibble = (col % 2) ? (b >> 4) : (b & 15);
          dst[pos.byte] = static_cast<std::uint8_t>(dst[pos.byte] | (nibble << pos.shift));
        }
      }
    }
    std::uint8_t* sdst = out.scales.data() + sb * e;
    if (f == km::WFormat::fp8_channel) {
      std::memcpy(sdst, static_cast<const float*>(scales) + static_cast<std::int64_t>(e) * n, sizeof(float) * n);
    } else if (f == km::WFormat::fp8_block) {
      const std::int64_t blocks = km::ceil_div(n, 128) * km::ceil_div(k, 128);
      std::memcpy(sdst, static_cast<const float*>(scales) + e * blocks, sizeof(float) * blocks);
    } else if (km::is_int4(f)) {
      const int groups = k / km::int4_group(f);
      const auto* s16 = static_cast<const std::uint16_t*>(scales);
      auto* d16 = reinterpret_cast<std::uint16_t*>(sdst);
      for (int row = 0; row < n; ++row)
        for (int q = 0; q < groups; ++q)
          d16[km::packed_int4_scale_index(f, k, row, q)] =
              s16[(static_cast<std::int64_t>(e) * n + row) * groups + q];
    }
  }
  return out;
}

}  // namespace eaglesim::cuda
