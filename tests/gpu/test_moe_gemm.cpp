// Correctness of the grouped MoE GEMM and the dense weight-only GEMM (kernels/moe_grouped_gemm.cuh,
// src/cuda/ops/moe_gemm_plan.hpp) and of their plain reference kernel, against a CPU double reference
// built from the unpacked weights. Fresh random inputs per case (never zeros), outputs poisoned
// with NaN before every launch (so an unwritten element fails), ||out - ref|| / ||ref|| < 1e-2,
// no NaN, two launches bitwise equal (the split-K sum is deterministic) and the workspace
// counters left zero. CPU-only cases (schedule and packing) run without a GPU; the rest skip.
// EAGLESIM_TEST_QUICK=1 keeps only small shapes (for compute-sanitizer runs).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "cost/low_bit_gemm_kernel.hpp"
#include "cuda/ops/moe_gemm_plan.hpp"
#include "moe_gemm_layout.cuh"

namespace eaglesim::cuda {
namespace {

namespace km = eaglesim::kernels::moe;
using F = GemmWeightFormat;

bool quick() { return std::getenv("EAGLESIM_TEST_QUICK") != nullptr; }

bool have_sm90() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) return false;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return false;
  return prop.major >= 9;
}

#define SKIP_WITHOUT_SM90() \
  if (!have_sm90()) GTEST_SKIP() << "needs a GPU of compute capability 9.0 or newer"

void ok(cudaError_t rc) { ASSERT_EQ(rc, cudaSuccess) << cudaGetErrorString(rc); }

std::uint16_t to_bf16(float f) {  // round to nearest even, as the device does
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
float from_bf16(std::uint16_t h) { return km::bf16_bits_to_float(h); }

int sm_count() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  return sms > 0 ? sms : 132;
}

// Logical (unpacked) weights of E experts and their exact values for the CPU reference.
struct Logical {
  std::vector<std::uint8_t> w;     // format-specific, see pack_grouped_weights
  std::vector<std::uint8_t> s;     // format-specific scales
  std::vector<float> channel;      // fp8_channel: scale per (expert, channel)
  // value of weight (e, n, k) including every scale
  F f;
  int E, n, k;
  double at(int e, int row, int col) const {
    const std::int64_t rn = static_cast<std::int64_t>(e) * n + row;
    switch (f) {
      case F::bf16: {
        std::uint16_t h;
        std::memcpy(&h, w.data() + (rn * k + col) * 2, 2);
        return from_bf16(h);
      }
      case F::fp8_channel:
        return static_cast<double>(km::e4m3_to_float(w[rn * k + col])) * channel[rn];
      case F::fp8_block: {
        const std::int64_t kb = (k + 127) / 128, nb = (n + 127) / 128;
        float sc;
        std::memcpy(&sc, s.data() + ((e * nb + row / 128) * kb + col / 128) * 4, 4);
        return static_cast<double>(km::e4m3_to_float(w[rn * k + col])) * sc;
      }
      default: {
        const int g = f == F::int4_g32 ? 32 : 128;
        const std::uint8_t b = w[rn * (k / 2) + col / 2];
        const int nib = (col % 2) ? (b >> 4) : (b & 15);
        std::uint16_t sh;
        std::memcpy(&sh, s.data() + (rn * (k / g) + col / g) * 2, 2);
        return static_cast<double>(nib - 8) * from_bf16(sh);
      }
    }
  }
};

// extremes: int4 nibbles only 0 and 15 (the ends of the decode, -8 and +7) and group scales of
// both signs; fp8 bytes only zeros, subnormals and +-448.
Logical make_weights(F f, int E, int n, int k, std::mt19937_64& rng, bool extremes = false) {
  Logical L;
  L.f = f;
  L.E = E;
  L.n = n;
  L.k = k;
  std::uniform_real_distribution<float> u(-1.f, 1.f), pos(0.5f, 1.5f);
  const std::int64_t count = static_cast<std::int64_t>(E) * n * k;
  if (f == F::bf16) {
    L.w.resize(count * 2);
    for (std::int64_t i = 0; i < count; ++i) {
      const std::uint16_t h = to_bf16(0.05f * u(rng));
      std::memcpy(L.w.data() + i * 2, &h, 2);
    }
  } else if (f == F::fp8_channel || f == F::fp8_block) {
    L.w.resize(count);
    for (auto& b : L.w) {
      if (extremes) {
        const std::uint8_t ends[] = {0x00, 0x80, 0x01, 0x07, 0x85, 0x7e, 0xfe};
        b = ends[rng() % 7];
        continue;
      }
      do b = static_cast<std::uint8_t>(rng() >> 56);
      while ((b & 0x7f) == 0x7f);  // NaN codes
    }
    if (f == F::fp8_channel) {
      L.channel.resize(static_cast<std::size_t>(E) * n);
      for (auto& c : L.channel) c = 1e-3f * pos(rng);
      L.s.resize(L.channel.size() * 4);
      std::memcpy(L.s.data(), L.channel.data(), L.s.size());
    } else {
      const std::int64_t blocks = static_cast<std::int64_t>(E) * ((n + 127) / 128) * ((k + 127) / 128);
      std::vector<float> sc(blocks);
      for (auto& c : sc) c = 1e-3f * pos(rng);
      L.s.resize(blocks * 4);
      std::memcpy(L.s.data(), sc.data(), L.s.size());
    }
  } else {
    const int g = f == F::int4_g32 ? 32 : 128;
    L.w.resize(count / 2);
    for (auto& b : L.w) {
      b = static_cast<std::uint8_t>(rng() >> 56);
      if (extremes) b = static_cast<std::uint8_t>(((b & 1) ? 0x0f : 0x00) | ((b & 2) ? 0xf0 : 0x00));
    }
    const std::int64_t scales = count / g;
    L.s.resize(scales * 2);
    for (std::int64_t i = 0; i < scales; ++i) {
      const std::uint16_t h = to_bf16(0.01f * pos(rng) * (extremes && (rng() & 1) ? -1.f : 1.f));
      std::memcpy(L.s.data() + i * 2, &h, 2);
    }
  }
  return L;
}

template <typename T>
struct Dev {
  T* p = nullptr;
  std::size_t count = 0;
  explicit Dev(std::size_t n) : count(n) { EXPECT_EQ(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)), cudaSuccess); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  void put(const std::vector<T>& v) { ASSERT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess); }
  std::vector<T> get() const {
    std::vector<T> v(count);
    EXPECT_EQ(cudaMemcpy(v.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

struct Outcome {
  double rel = 0;
  std::int64_t nan = 0;
};

Outcome compare(const std::vector<std::uint16_t>& y, const std::vector<double>& ref) {
  Outcome o;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = from_bf16(y[i]);
    if (std::isnan(v)) {
      ++o.nan;
      continue;
    }
    num += (v - ref[i]) * (v - ref[i]);
    den += ref[i] * ref[i];
  }
  o.rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return o;
}

// One grouped GEMM case: experts with the given row counts (zeros allowed), fresh random data.
// rows_hint picks the plan's row tile (0: the largest count), so a hint below the busiest
// expert exercises several row blocks per expert.
// variant: the kernel variant to run (-1: the plan's default); one that must apply is checked to.
// extremes: make_weights' extreme values.
// gemv: the plan's kernel choice (-1 its own, 0 stream-K, 1 the GEMV kernel, which the plan
// must then have picked).
void run_case(F f, int n, int k, const std::vector<int>& counts, std::uint64_t seed, int rows_hint = 0,
              bool dense = false, int variant = -1, bool extremes = false, int gemv = -1, int wgmma = 0) {
  SCOPED_TRACE(::testing::Message() << to_string(f) << " n=" << n << " k=" << k << " experts=" << counts.size()
                                    << " seed=" << seed << (dense ? " dense" : "") << " variant=" << variant
                                    << (extremes ? " extremes" : "") << " gemv=" << gemv << " wgmma=" << wgmma);
  std::mt19937_64 rng(seed);
  const int E = static_cast<int>(counts.size());
  std::vector<int> off(E + 1, 0);
  for (int e = 0; e < E; ++e) off[e + 1] = off[e] + counts[e];
  const int rows = off[E];
  const int busiest = *std::max_element(counts.begin(), counts.end());

  GroupedGemmShape shape;
  shape.format = f;
  shape.experts = E;
  shape.n = n;
  shape.k = k;
  shape.max_rows = std::max(rows, 1);
  shape.rows_per_expert = rows_hint > 0 ? rows_hint : std::max(busiest, 1);
  shape.variant = variant;
  shape.gemv = gemv;
  const GroupedGemmPlan plan = dense ? plan_weight_only_gemm(f, rows, n, k, sm_count(), variant, gemv, wgmma)
                                     : plan_grouped_gemm(shape, sm_count());
  SCOPED_TRACE(plan.variant);
  if (gemv >= 0) EXPECT_EQ(plan.gemv, gemv == 1);
  if (wgmma == 1) EXPECT_TRUE(plan.wgmma);
  if (variant >= 0 && km::variant_applies(static_cast<km::WFormat>(static_cast<int>(f)), plan.row_tile / 8, variant))
    EXPECT_EQ(plan.kernel_variant, variant);

  const Logical L = make_weights(f, E, n, k, rng, extremes);
  const PackedGemmWeights packed = pack_grouped_weights(f, E, n, k, L.w.data(), L.s.empty() ? nullptr : L.s.data());
  std::vector<std::uint16_t> x(static_cast<std::size_t>(rows) * k);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : x) v = to_bf16(u(rng));

  std::vector<double> ref(static_cast<std::size_t>(rows) * n);
  std::vector<double> wrow(k);
  for (int e = 0; e < E; ++e)
    for (int c = 0; c < n; ++c) {
      for (int kk = 0; kk < k; ++kk) wrow[kk] = L.at(e, c, kk);
      for (int r = off[e]; r < off[e + 1]; ++r) {
        double acc = 0;
        const std::uint16_t* xr = x.data() + static_cast<std::size_t>(r) * k;
        for (int kk = 0; kk < k; ++kk) acc += static_cast<double>(from_bf16(xr[kk])) * wrow[kk];
        ref[static_cast<std::size_t>(r) * n + c] = acc;
      }
    }

  Dev<std::uint16_t> dx(x.size()), dy(ref.size());
  Dev<std::uint8_t> dw(packed.weights.size()), ds(std::max<std::size_t>(packed.scales.size(), 16));
  Dev<int> doff(off.size());
  Dev<unsigned char> ws(plan.workspace_bytes);
  dx.put(x);
  dw.put(packed.weights);
  if (!packed.scales.empty()) ds.put(packed.scales);
  doff.put(off);
  ok(cudaMemset(ws.p, 0, plan.workspace_bytes));

  GroupedGemmArgs a;
  a.x = dx.p;
  a.expert_offsets = dense ? nullptr : doff.p;
  a.rows = rows;
  a.weights = dw.p;
  a.scales = packed.scales.empty() ? nullptr : ds.p;
  a.y = dy.p;

  std::vector<std::uint16_t> first;
  for (int rep = 0; rep < 2; ++rep) {
    ok(cudaMemset(dy.p, 0xff, dy.count * 2));  // NaN
    launch_grouped_gemm(plan, a, ws.p, nullptr);
    ok(cudaDeviceSynchronize());
    const std::vector<std::uint16_t> y = dy.get();
    const Outcome o = compare(y, ref);
    EXPECT_EQ(o.nan, 0) << "rep " << rep;
    EXPECT_LT(o.rel, 1e-2) << "rep " << rep;
    if (rep == 0) first = y;
    else EXPECT_TRUE(first == y) << "two launches differ: the split-K sum must be deterministic";
  }
  const std::vector<unsigned char> w_after = ws.get();
  const bool counters_zero = std::all_of(w_after.begin(), w_after.begin() + plan.counter_bytes,
                                         [](unsigned char b) { return b == 0; });
  EXPECT_TRUE(counters_zero) << "the kernel must leave its counters zero";

  ok(cudaMemset(dy.p, 0xff, dy.count * 2));
  launch_grouped_gemm_reference(plan, a, nullptr);
  ok(cudaDeviceSynchronize());
  const Outcome r = compare(dy.get(), ref);
  EXPECT_EQ(r.nan, 0) << "reference kernel";
  EXPECT_LT(r.rel, 1e-2) << "reference kernel";
}

std::vector<int> uniform_counts(int experts, int rows) { return std::vector<int>(experts, rows); }

// Routed top-k over `experts` for `tokens` tokens: each token picks topk distinct experts.
std::vector<int> routed_counts(int experts, int tokens, int topk, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> c(experts, 0);
  for (int t = 0; t < tokens; ++t) {
    std::set<int> chosen;
    while (static_cast<int>(chosen.size()) < std::min(topk, experts)) chosen.insert(static_cast<int>(rng() % experts));
    for (int e : chosen) ++c[e];
  }
  return c;
}

const F kAllFormats[] = {F::bf16, F::fp8_channel, F::fp8_block, F::int4_g32, F::int4_g128};

// ---------------------------------------------------------------- CPU-only checks

// Stream-K bookkeeping: for every item the owner formula names exactly the CTAs whose ranges
// meet it, and no two pieces share a partial slot.
TEST(MoeGemmSchedule, OwnersAndSlotsMatchTheRanges) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const std::int64_t kc = 1 + rng() % 40, items = 1 + rng() % 300, T = items * kc;
    const std::int64_t G = 1 + static_cast<std::int64_t>(rng() % std::min<std::int64_t>(T, 600));
    std::set<std::pair<std::int64_t, int>> used;
    for (std::int64_t c = 0; c < G; ++c) {
      const std::int64_t b = km::sk_begin(c, T, G), e = km::sk_begin(c + 1, T, G);
      ASSERT_LT(b, e) << "empty range with G <= T";
      for (std::int64_t p = b; p < e; ++p) ASSERT_EQ(km::sk_owner(p, T, G), c);
      for (std::int64_t pos = b; pos < e;) {
        const std::int64_t item = pos / kc, c0 = pos % kc, c1 = std::min(kc, c0 + (e - pos));
        if (!(c0 == 0 && c1 == kc)) {
          const int slot = pos == b ? 0 : 1;
          ASSERT_EQ(slot, km::sk_slot(c, item, kc, T, G));
          ASSERT_TRUE(used.insert({c, slot}).second);
          const std::int64_t cf = km::sk_owner(item * kc, T, G), cl = km::sk_owner((item + 1) * kc - 1, T, G);
          ASSERT_TRUE(cf <= c && c <= cl);
          ASSERT_GT(cl, cf) << "a split item has at least two pieces";
        }
        pos += c1 - c0;
      }
    }
  }
}

// The packed layout is a bijection onto the expert's bytes (nibbles for int4), and each weight
// lands where the mma A fragment of the PTX ISA expects it.
TEST(MoeGemmLayout, PackedPositionsFormTheFragments) {
  for (F f : kAllFormats) {
    const km::WFormat kf = static_cast<km::WFormat>(static_cast<int>(f));
    const int n = 48, k = 256;
    const std::int64_t bytes = km::packed_weight_bytes(kf, n, k);
    const int bits = km::weight_bits(kf);
    std::vector<int> hits(bytes * 8 / bits, 0);
    for (int row = 0; row < n; ++row)
      for (int col = 0; col < k; ++col) {
        const km::PackedPos p = km::packed_weight_pos(kf, k, row, col);
        ASSERT_GE(p.byte, 0);
        ASSERT_LT(p.byte, bytes);
        const std::int64_t slot = (p.byte * 8 + p.shift) / bits;
        ++hits[slot];
        // the fragment view: lane, register, element of the 16x16 step
        const std::int64_t in_atom = p.byte % km::kAtomBytes;
        const int lane = static_cast<int>(in_atom / 16);
        const int r_local = row % 16, c_local = col % 16;
        ASSERT_EQ(lane, (r_local % 8) * 4 + (c_local % 8) / 2);
        ASSERT_EQ((row / 16) * (k / km::atom_k(kf)) + col / km::atom_k(kf), p.byte / km::kAtomBytes);
      }
    for (int h : hits) ASSERT_EQ(h, 1) << to_string(f);
  }
}

// The variants: every one is named, those that apply get their own kernel (three CTAs per SM
// where asked, in the shared memory that leaves), the others fall back to variant 0.
TEST(MoeGemmPlan, VariantsPlanTheirOwnKernels) {
  ASSERT_GT(grouped_gemm_variant_count(), 1);
  EXPECT_STREQ(grouped_gemm_variant_name(0), "base");
  for (int v = 0; v < grouped_gemm_variant_count(); ++v) {
    EXPECT_STRNE(grouped_gemm_variant_name(v), "?");
    for (F f : kAllFormats) {
      GroupedGemmShape s;
      s.format = f;
      s.experts = 384;
      s.n = 512;
      s.k = 7168;
      s.max_rows = 32;
      s.variant = v;
      for (int r : {1, 2}) {
        s.rows_per_expert = 8 * r;  // row tiles 8 and 16
        const GroupedGemmPlan p = plan_grouped_gemm(s, 132);
        const bool applies = km::variant_applies(static_cast<km::WFormat>(static_cast<int>(f)), r, v);
        EXPECT_EQ(p.kernel_variant, applies ? v : 0) << to_string(f) << " " << grouped_gemm_variant_name(v);
        EXPECT_EQ(p.ctas_per_sm, km::kVariants[p.kernel_variant].ctas_per_sm) << p.variant;
        EXPECT_LE(p.ctas_per_sm * (p.smem_bytes + 1024 + 128), 228u * 1024) << p.variant;
        EXPECT_GE(p.stages, 3) << p.variant;
        EXPECT_EQ(p.grid, 132 * p.ctas_per_sm);
      }
      s.rows_per_expert = 64;  // row tile 64: only the r64_tk variants
      s.max_rows = 512;
      const bool r64 = km::variant_applies(static_cast<km::WFormat>(static_cast<int>(f)), km::kR64, v);
      EXPECT_EQ(r64, v == 0 || (km::kVariants[v].r64_tk > 0 && f != F::bf16)) << grouped_gemm_variant_name(v);
      const GroupedGemmPlan p64 = plan_grouped_gemm(s, 132);
      EXPECT_EQ(p64.kernel_variant, r64 ? v : 0) << to_string(f) << " " << grouped_gemm_variant_name(v);
      EXPECT_GE(p64.stages, 3) << p64.variant;
      EXPECT_EQ(p64.row_tile, 64) << p64.variant;
      EXPECT_LE(p64.ctas_per_sm * (p64.smem_bytes + 1024 + 128), 228u * 1024) << p64.variant;
      s.max_rows = 32;
    }
  }
  GroupedGemmShape bad;
  bad.n = 128;
  bad.k = 128;
  bad.max_rows = 1;
  bad.variant = grouped_gemm_variant_count();
  EXPECT_THROW(plan_grouped_gemm(bad, 132), InputError);
}

TEST(MoeGemmPlan, RefusesWhatTheKernelCannotDo) {
  GroupedGemmShape s;
  s.format = F::int4_g128;
  s.experts = 8;
  s.n = 4096;
  s.k = 192;
  s.max_rows = 64;
  EXPECT_NE(grouped_gemm_unsupported_reason(s), "");  // k % 128
  s.format = F::int4_g32;
  EXPECT_EQ(grouped_gemm_unsupported_reason(s), "");
  s.k = 100;
  EXPECT_NE(grouped_gemm_unsupported_reason(s), "");
  s.k = 256;
  const GroupedGemmPlan p = plan_grouped_gemm(s, 132);
  EXPECT_EQ(p.row_tile, 64);
  EXPECT_GT(p.workspace_bytes, 0u);
  EXPECT_LE(p.smem_bytes, 113u * 1024);  // two CTAs per SM
  EXPECT_EQ(p.grid, 264);
}

// ---------------------------------------------------------------- GPU: grouped

// Every format at the row counts of a verify step, one expert with no rows among them.
TEST(MoeGemmGrouped, RowsPerExpertAcrossFormats) {
  SKIP_WITHOUT_SM90();
  const std::vector<int> per_expert = quick() ? std::vector<int>{1, 3, 8} : std::vector<int>{1, 3, 8, 16, 64};
  std::uint64_t seed = 100;
  for (F f : kAllFormats)
    for (int rows : per_expert) {
      std::vector<int> counts = uniform_counts(quick() ? 3 : 5, rows);
      counts[1] = 0;
      run_case(f, quick() ? 160 : 512, quick() ? 512 : 2048, counts, ++seed);
    }
}

// The real models' expert shapes (few experts, so the CPU reference stays quick).
TEST(MoeGemmGrouped, RealModelShapes) {
  SKIP_WITHOUT_SM90();
  if (quick()) GTEST_SKIP() << "EAGLESIM_TEST_QUICK";
  struct Case {
    const char* what;
    F f;
    int n, k;
    std::vector<int> counts;
  };
  const std::vector<Case> cases = {
      {"kimi-k2 tp8 gate_up", F::int4_g32, 512, 7168, {1, 0, 2, 1}},
      {"kimi-k2 tp8 down", F::int4_g32, 7168, 256, {3, 1, 0, 9}},
      {"deepseek-v3 tp8 gate_up", F::fp8_block, 512, 7168, {2, 1, 0, 1}},
      {"deepseek-v3 tp8 down", F::fp8_block, 7168, 256, {1, 12, 4}},
      {"qwen3-235b tp1 gate_up", F::int4_g128, 3072, 4096, {1, 2}},
      {"qwen3-235b tp4 down", F::fp8_channel, 4096, 384, {5, 0, 17, 33}},
      {"qwen3-235b tp8 down", F::int4_g32, 4096, 192, {2, 7, 1}},
      {"glm-4.5 tp8 gate_up", F::bf16, 384, 5120, {4, 1, 0, 6}},
      {"glm-4.5 tp8 down", F::bf16, 5120, 192, {1, 1, 3}},
  };
  std::uint64_t seed = 200;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    run_case(c.f, c.n, c.k, c.counts, ++seed);
  }
}

// Uneven routed counts (zeros among them), n not a multiple of 16 or of the 128-channel tile,
// and a row-tile hint below the busiest expert (several row blocks per expert).
TEST(MoeGemmGrouped, UnevenRoutingAndOddShapes) {
  SKIP_WITHOUT_SM90();
  std::uint64_t seed = 300;
  const int n_odd[] = {40, 200, 392};
  for (F f : kAllFormats) {
    const std::vector<int> routed = routed_counts(24, quick() ? 6 : 20, 8, seed);
    const int n = n_odd[seed % 3];
    run_case(f, n, 320 - (f == F::int4_g128 ? 64 : 0), routed, ++seed);
    run_case(f, 136, 384, {0, 37, 2, 0, 70, 1}, ++seed, /*rows_hint=*/16);
    run_case(f, 24, 128, {0, 0, 5}, ++seed);
  }
}

// The decode's extreme values (int4 nibbles 0 and 15, negative group scales; fp8 zeros,
// subnormals, +-448) at every row tile (8 / 16 / 32 / 64 rows), grouped and dense split-K.
TEST(MoeGemmGrouped, DecodeExtremes) {
  SKIP_WITHOUT_SM90();
  std::uint64_t seed = 350;
  for (F f : {F::int4_g32, F::int4_g128, F::fp8_channel, F::fp8_block}) {
    run_case(f, 200, 512, {3, 0, 9, 1}, ++seed, 0, false, -1, true);
    run_case(f, 136, 512, {0, 37, 2, 0, 70, 1}, ++seed, 16, false, -1, true);
    run_case(f, 152, 256, {30, 17, 0, 25}, ++seed, 0, false, -1, true);
    run_case(f, 392, 1024, {64}, ++seed, 0, true, -1, true);
    run_case(f, 1280, 2048, {1}, ++seed, 0, true, -1, true);
  }
}

// Every int4 weight value decoded exactly: weight (c, kk) has nibble (c + 3 kk) % 16 (each of the
// 16 values at every nibble position of the packed words), scales of both signs, and one-hot
// activation rows, so each output is one weight times its scale: y must equal the bf16 rounding
// of (nibble - 8) * scale exactly. m = 1, 16 (scale on the fp32 partial sum), 32 and 64 (scale on
// each weight pair); every variant at the row tiles it exists for.
void run_exact_int4(F f, int m, int col0, int variant, int gemv = -1) {
  SCOPED_TRACE(::testing::Message() << to_string(f) << " m=" << m << " col0=" << col0 << " variant=" << variant
                                    << " gemv=" << gemv);
  const int n = 48, k = 256, g = f == F::int4_g32 ? 32 : 128;
  std::vector<std::uint8_t> w(static_cast<std::size_t>(n) * k / 2), s(static_cast<std::size_t>(n) * (k / g) * 2);
  auto nibble = [](int c, int kk) { return (c + 3 * kk) % 16; };
  for (int c = 0; c < n; ++c)
    for (int kk = 0; kk < k; kk += 2)
      w[(static_cast<std::size_t>(c) * k + kk) / 2] =
          static_cast<std::uint8_t>(nibble(c, kk) | (nibble(c, kk + 1) << 4));
  std::vector<std::uint16_t> sc(s.size() / 2);
  for (std::size_t i = 0; i < sc.size(); ++i) sc[i] = to_bf16((i % 3 == 1 ? -1.f : 1.f) * (0.25f + 0.01f * i));
  std::memcpy(s.data(), sc.data(), s.size());
  const PackedGemmWeights packed = pack_grouped_weights(f, 1, n, k, w.data(), s.data());
  const GroupedGemmPlan plan = plan_weight_only_gemm(f, m, n, k, sm_count(), variant, gemv);
  SCOPED_TRACE(plan.variant);
  std::vector<int> col(m);
  std::vector<std::uint16_t> x(static_cast<std::size_t>(m) * k, 0);
  for (int r = 0; r < m; ++r) {
    col[r] = (col0 + r) % k;
    x[static_cast<std::size_t>(r) * k + col[r]] = to_bf16(1.f);
  }
  Dev<std::uint16_t> dx(x.size()), dy(static_cast<std::size_t>(m) * n);
  Dev<std::uint8_t> dw(packed.weights.size()), ds(std::max<std::size_t>(packed.scales.size(), 16));
  Dev<unsigned char> ws(plan.workspace_bytes);
  dx.put(x);
  dw.put(packed.weights);
  ds.put(packed.scales);
  ok(cudaMemset(ws.p, 0, plan.workspace_bytes));
  ok(cudaMemset(dy.p, 0xff, dy.count * 2));
  GroupedGemmArgs a;
  a.x = dx.p;
  a.rows = m;
  a.weights = dw.p;
  a.scales = ds.p;
  a.y = dy.p;
  launch_grouped_gemm(plan, a, ws.p, nullptr);
  ok(cudaDeviceSynchronize());
  const std::vector<std::uint16_t> y = dy.get();
  int bad = 0;
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c) {
      const float want = static_cast<float>(nibble(c, col[r]) - 8) * from_bf16(sc[c * (k / g) + col[r] / g]);
      const std::uint16_t got = y[static_cast<std::size_t>(r) * n + c];
      if (!(from_bf16(got) == from_bf16(to_bf16(want))) && ++bad <= 5)  // by value: +0 == -0
        ADD_FAILURE() << "row " << r << " (k " << col[r] << ") channel " << c << ": nibble " << nibble(c, col[r])
                      << " got " << from_bf16(got) << " want " << want;
    }
  EXPECT_EQ(bad, 0);
}

TEST(MoeGemmGrouped, Int4DecodeExact) {
  SKIP_WITHOUT_SM90();
  for (F f : {F::int4_g32, F::int4_g128}) {
    for (int gemv : {0, 1}) {
      for (int col0 : {0, 5, 64, 131}) run_exact_int4(f, 1, col0, -1, gemv);
      for (int col0 : {0, 16, 32, 48}) run_exact_int4(f, 16, col0, -1, gemv);  // the 64 k of an atom
      run_exact_int4(f, 5, 200, -1, gemv);
    }
    run_exact_int4(f, 32, 0, -1);
    run_exact_int4(f, 32, 32, -1);
    run_exact_int4(f, 64, 0, -1);
    run_exact_int4(f, 64, 100, -1);
    for (int v = 1; v < grouped_gemm_variant_count(); ++v) {
      run_exact_int4(f, 1, 7, v);
      run_exact_int4(f, 16, 32, v);
    }
  }
}

// ---------------------------------------------------------------- GPU: dense

TEST(WeightOnlyGemm, DenseRowsAcrossFormats) {
  SKIP_WITHOUT_SM90();
  const std::vector<int> ms = quick() ? std::vector<int>{1, 4, 16} : std::vector<int>{1, 4, 16, 64, 256};
  std::uint64_t seed = 400;
  for (F f : {F::int4_g128, F::int4_g32, F::fp8_channel, F::fp8_block, F::bf16})
    for (int m : ms) {
      const int n = m >= 64 ? 392 : (quick() ? 200 : 1280), k = m >= 64 ? 1024 : (quick() ? 512 : 2048);
      run_case(f, n, k, {m}, ++seed, 0, /*dense=*/true);
    }
}

// Few 128-channel tiles and a long k: the stream-K split carries nearly all of the work.
TEST(WeightOnlyGemm, SplitKOnNarrowOutputs) {
  SKIP_WITHOUT_SM90();
  if (quick()) GTEST_SKIP() << "EAGLESIM_TEST_QUICK";
  run_case(F::int4_g128, 256, 8192, {4}, 501, 0, true, -1, false, 0);
  run_case(F::fp8_channel, 128, 14336, {1}, 502, 0, true, -1, false, 0);
  run_case(F::int4_g32, 2112, 7168, {16}, 503, 0, true, -1, false, 0);  // Kimi-K2 fused q_a + kv_a
}

// Dense int4 at 33+ rows runs on the wgmma kernel: row tiles of 64 and 128, several row tiles,
// n not a multiple of 192 (or 16), k split over many CTAs (the splits meet and sum their
// partials) and unsplit, both scale groups; against the CPU, twice (deterministic, counters zero).
TEST(WeightOnlyGemm, Int4WgmmaMatchesTheCpu) {
  SKIP_WITHOUT_SM90();
  struct Case { F f; int m, n, k; };
  const std::vector<Case> cases = {
      {F::int4_g32, 33, 300, 256},     // 64-row tile, one n tile, unsplit-ish
      {F::int4_g128, 64, 1280, 1024},  // five n tiles, split over k
      {F::int4_g32, 128, 1280, 8192},  // Llama-3.1-70B TP8 qkv at 32 x 4 rows: split 18 ways
      {F::int4_g128, 200, 264, 384},   // two row tiles, n past a tile by 8
      {F::int4_g32, 100, 7168, 256},   // 28 n tiles, one split
  };
  std::uint64_t seed = 900;
  for (const Case& c : cases) {
    if (quick() && c.k > 1024) continue;
    run_case(c.f, c.n, c.k, {c.m}, ++seed, 0, /*dense=*/true, -1, false, -1, /*wgmma=*/1);
  }
}

// The split choice: one wave, at least two 128-k stages per split, unsplit when the tiles fill the SMs.
TEST(WeightOnlyGemm, Int4WgmmaPlan) {
  const GroupedGemmPlan off = plan_weight_only_gemm(F::int4_g32, 128, 1280, 8192, 132);
  EXPECT_FALSE(off.wgmma);  // opt-in
  const GroupedGemmPlan a = plan_weight_only_gemm(F::int4_g32, 128, 1280, 8192, 132, -1, -1, 1);
  EXPECT_TRUE(a.wgmma);
  EXPECT_EQ(a.wgmma_rows, 128);
  EXPECT_EQ(a.wgmma_splits, 18);  // 7 tiles of 192 channels, 132 / 7
  EXPECT_LE(a.grid, 132);
  const GroupedGemmPlan b = plan_weight_only_gemm(F::int4_g128, 64, 7168, 8192, 132, -1, -1, 1);
  EXPECT_EQ(b.wgmma_rows, 64);
  EXPECT_EQ(b.wgmma_splits, 3);  // 38 tiles
  const GroupedGemmPlan c = plan_weight_only_gemm(F::int4_g32, 32, 7168, 8192, 132, -1, -1, 1);
  EXPECT_FALSE(c.wgmma);  // below kInt4WgmmaMinRows: the weight stream's kernels
  const GroupedGemmPlan d = plan_weight_only_gemm(F::int4_g32, 128, 1280, 8256, 132, -1, -1, 1);
  EXPECT_FALSE(d.wgmma);  // k % 128 != 0
  const GroupedGemmPlan e = plan_weight_only_gemm(F::fp8_block, 128, 1280, 8192, 132, -1, -1, 1);
  EXPECT_FALSE(e.wgmma);
}

// The GEMV kernel (m <= 16) against the CPU: every row count 1-16 (one and two row tiles, rows
// past m reading zeros), n not a multiple of 16, k from one unit to k-slices split over a
// cluster of 8 CTAs, tasks that end short, several blocks per CTA with a last group short of
// blocks, warps with one task and with many; every format.
TEST(WeightOnlyGemv, MatchesTheCpu) {
  SKIP_WITHOUT_SM90();
  std::uint64_t seed = 700;
  const std::vector<int> ms = quick() ? std::vector<int>{1, 4, 9} : std::vector<int>{1, 2, 3, 4, 5, 7, 8, 9, 12, 16};
  for (F f : kAllFormats) {
    const int k_min = f == F::int4_g128 ? 128 : 64;
    for (int m : ms) run_case(f, 200, quick() ? 512 : 1536, {m}, ++seed, 0, true, -1, false, 1);
    run_case(f, 8, k_min, {4}, ++seed, 0, true, -1, false, 1);        // one unit, one partial block
    run_case(f, 1536, 7168, {4}, ++seed, 0, true, -1, false, 1);      // Kimi-K2 q_a: a cluster split
    if (!quick()) {
      run_case(f, 576, 7168, {16}, ++seed, 0, true, -1, false, 1);    // Kimi-K2 kv_a
      run_case(f, 4096, 128, {3}, ++seed, 0, true, -1, false, 1);     // Kimi-K2 k_absorb: two units
      run_case(f, 136, 14336, {2}, ++seed, 0, true, -1, false, 1);    // long k: eight CTAs, several rounds per warp
      run_case(f, 264, 7168 + 128, {8}, ++seed, 0, true, -1, false, 1);  // a slice that ends short
      run_case(f, 392, 1024, {6}, ++seed, 0, true, -1, false, 1);
      run_case(f, 16384 - 16 * 5 + 8, 512, {4}, ++seed, 0, true, -1, false, 1);  // 3 blocks per CTA, last CTA 1
      run_case(f, 8192, 4096, {13}, ++seed, 0, true, -1, false, 1);             // blocks and a cluster split
    }
  }
  // the extreme values of make_weights
  for (F f : kAllFormats) run_case(f, 136, 2048, {5}, ++seed, 0, true, -1, true, 1);
}

// The plan's GEMV split: the k-slices cover k exactly once with no empty CTA, the tasks of a
// slice cover it with no empty task, the block groups cover n, clusters of at most 8, shared
// memory within the budget; shapes it cannot take go to the stream-K kernel.
TEST(WeightOnlyGemv, PlanCoversTheOpOnce) {
  for (F f : kAllFormats)
    for (int m : {1, 4, 8, 9, 16})
      for (int n : {16, 200, 1536, 7168, 57344})
        for (int k : {128, 256, 1536, 2048, 7168, 14336, 28672, 65536}) {
          if (f == F::int4_g128 && k % 128) continue;
          const GroupedGemmPlan p = plan_weight_only_gemm(f, m, n, k, 132);
          SCOPED_TRACE(p.variant);
          if (!p.gemv) continue;
          const int units = k / km::kGemvUnitK;
          const int n16 = (n + 15) / 16;
          EXPECT_GE(p.gemv_split, 1);
          EXPECT_LE(p.gemv_split, km::kGemvMaxSplit);
          EXPECT_GE(p.gemv_split * p.gemv_units_per_cta, units);
          EXPECT_LT((p.gemv_split - 1) * p.gemv_units_per_cta, units);  // no empty CTA
          EXPECT_EQ(p.gemv_units_per_task, km::gemv_units_per_task(static_cast<km::WFormat>(static_cast<int>(f))));
          EXPECT_GE(p.gemv_parts * p.gemv_units_per_task, p.gemv_units_per_cta);
          EXPECT_LT((p.gemv_parts - 1) * p.gemv_units_per_task, p.gemv_units_per_cta);  // no empty task
          EXPECT_GE(p.gemv_blocks_per_cta, 1);
          EXPECT_LE(p.gemv_blocks_per_cta, n16);
          EXPECT_LE(p.gemv_warps, km::kGemvMaxWarps);
          EXPECT_LE(p.gemv_warps, p.gemv_blocks_per_cta * p.gemv_parts);  // no warp without a task
          EXPECT_LE(p.gemv_smem_bytes, 100u * 1024);
          EXPECT_EQ(p.gemv_smem_bytes, static_cast<std::size_t>(km::gemv_smem_bytes(m > 8 ? 16 : 8, m > 8 ? 2 : 1,
                                                                                     p.gemv_blocks_per_cta, p.gemv_parts,
                                                                                     p.gemv_units_per_cta)));
          // The fewest blocks per CTA that keep the grid within two CTAs per SM (one wave) and
          // give each of the CTA's 8 warps a task, unless the block limit or shared memory stops
          // the grouping first.
          const int bpc = p.gemv_blocks_per_cta;
          const auto ctas = [&](int b) { return static_cast<long long>((n16 + b - 1) / b) * p.gemv_split; };
          const bool can_grow = bpc < std::min(8, n16) &&
                                km::gemv_smem_bytes(m > 8 ? 16 : 8, m > 8 ? 2 : 1, bpc + 1, p.gemv_parts,
                                                    p.gemv_units_per_cta) <= 100 * 1024;
          if (can_grow) {
            EXPECT_LE(ctas(bpc), 2 * 132);
            EXPECT_GE(bpc, km::kGemvMaxWarps / p.gemv_parts);  // every warp a task
            EXPECT_EQ(p.gemv_warps, std::min(km::kGemvMaxWarps, bpc * p.gemv_parts));
          }
          if (bpc > 1) EXPECT_TRUE(ctas(bpc - 1) > 2 * 132 || (bpc - 1) * p.gemv_parts < km::kGemvMaxWarps);
        }
  EXPECT_THROW(plan_weight_only_gemm(F::bf16, 16, 128, 1 << 20, 132, -1, 1), InputError);  // no room for the slice
  EXPECT_FALSE(plan_weight_only_gemm(F::int4_g32, 17, 1536, 7168, 132).gemv);   // rows past the GEMV kernel's
  EXPECT_FALSE(plan_weight_only_gemm(F::int4_g32, 4, 1536, 7168, 132, 1).gemv);  // a stream-K variant asked for
  EXPECT_FALSE(plan_weight_only_gemm(F::int4_g32, 4, 1536, 7168, 132, -1, 0).gemv);
  EXPECT_TRUE(plan_weight_only_gemm(F::int4_g32, 4, 1536, 7168, 132).gemv);
  EXPECT_FALSE(plan_weight_only_gemm(F::int4_g32, 4, 4608, 7168, 132).gemv);   // 18.6 MB of int4: stream-K
  EXPECT_TRUE(plan_weight_only_gemm(F::fp8_block, 4, 4608, 7168, 132).gemv);   // 33 MB of fp8: GEMV
  EXPECT_FALSE(plan_weight_only_gemm(F::int4_g32, 16, 7168, 1024, 132).gemv);  // 16 rows, wide output
  EXPECT_TRUE(plan_weight_only_gemm(F::int4_g32, 16, 1536, 7168, 132).gemv);
  EXPECT_THROW(plan_weight_only_gemm(F::int4_g32, 17, 1536, 7168, 132, -1, 1), InputError);
  GroupedGemmShape grouped;
  grouped.format = F::int4_g32;
  grouped.experts = 384;
  grouped.n = 512;
  grouped.k = 7168;
  grouped.max_rows = 32;  // Kimi-K2 TP8 gate_up, 4 tokens x top-8
  grouped.rows_per_expert = 2;
  EXPECT_FALSE(plan_grouped_gemm(grouped, 132).gemv);  // grouped GEMMs run the stream-K kernel
  grouped.gemv = 1;
  EXPECT_THROW(plan_grouped_gemm(grouped, 132), InputError);
  // The k-split knob (bench_gemm --gemv-sweep): taken as asked up to 8 CTAs per cluster and the
  // op's units, and the slices still cover k once with no empty CTA.
  for (int k : {128, 7168})
    for (int split = 1; split <= 9; ++split) {
      GroupedGemmShape dense;
      dense.format = F::int4_g32;
      dense.n = 1536;
      dense.k = k;
      dense.max_rows = dense.rows_per_expert = 4;
      dense.gemv = 1;
      dense.gemv_split = split;
      if (k == 7168 && split < 2) {  // 112 units in one CTA: the activation slice exceeds its shared memory
        EXPECT_THROW(plan_grouped_gemm(dense, 132), InputError);
        continue;
      }
      const GroupedGemmPlan p = plan_grouped_gemm(dense, 132);
      const int units = k / km::kGemvUnitK;
      SCOPED_TRACE(p.variant);
      EXPECT_EQ(p.gemv_split, std::min({split, km::kGemvMaxSplit, units}));
      EXPECT_GE(p.gemv_split * p.gemv_units_per_cta, units);
      EXPECT_LT((p.gemv_split - 1) * p.gemv_units_per_cta, units);
    }
}

// ---------------------------------------------------------------- GPU: kernel variants

// Every variant against the CPU reference at the row tiles it exists for (8 and 16 rows; 64 for
// the r64_tk ones): items split across CTAs, a k that ends in a partial stage, an empty expert,
// one of two row tiles used, dense split-K.
TEST(MoeGemmVariants, EveryVariantMatchesTheCpu) {
  SKIP_WITHOUT_SM90();
  std::uint64_t seed = 600;
  for (int v = 1; v < grouped_gemm_variant_count(); ++v) {
    SCOPED_TRACE(grouped_gemm_variant_name(v));
    for (F f : kAllFormats) {
      const int k_partial = f == F::int4_g128 ? 2176 : 2112;  // not a multiple of any stage depth
      run_case(f, 200, k_partial, {3, 0, 9, 1}, ++seed, 0, false, v);
      run_case(f, 136, 384, {0, 7, 2, 0, 13, 1}, ++seed, 16, false, v);
      run_case(f, 1280, quick() ? 1024 : 4096, {1}, ++seed, 0, true, v);
      run_case(f, 392, 1024, {16}, ++seed, 0, true, v);
      if (!quick()) run_case(f, 512, 7168, routed_counts(8, 2, 4, seed), ++seed, 0, false, v);  // Kimi-K2 expert shape
      // 64-row tiles (the r64_tk variants): dense m = 64 and 256, grouped 45 rows (Qwen3 T = 512),
      // k ending in a partial stage
      run_case(f, 392, 1024 + (f == F::int4_g128 ? 128 : 64), {64}, ++seed, 0, true, v);
      run_case(f, 200, 512, {256}, ++seed, 0, true, v);
      run_case(f, 136, 1024, {45, 0, 30, 12}, ++seed, 0, false, v);
    }
  }
}

// The simulator prices a dense low-bit GEMM by the fit of the kernel the replay's plan picks
// (cost/low_bit_gemm_kernel.hpp): both read one rule, checked here over the shapes the replay
// runs (int4 as group-32, fp8 as 128 x 128 blocks).
TEST(WeightOnlyGemv, PlanPicksTheKernelTheSimulatorPrices) {
  for (F f : {F::int4_g32, F::fp8_block})
    for (int m : {1, 4, 8, 9, 16, 32, 256})
      for (int n : {16, 576, 1536, 2048, 4096, 4608, 7168, 18432})
        for (int k : {128, 512, 1536, 2048, 7168}) {
          Op op;
          op.kind = OpKind::gemm;
          op.m = m, op.n = n, op.k = k;
          op.dtype = f == F::int4_g32 ? DType::int4 : DType::fp8;
          const GroupedGemmPlan p = plan_weight_only_gemm(f, m, n, k, 132);
          EXPECT_EQ(p.gemv, low_bit_gemm_kernel(op) == LowBitGemmKernel::gemv) << to_string(f) << " " << m << "x" << n << "x" << k;
        }
}

// calibrate's single-op chains launch a GEMM without programmatic dependent launch: the same
// tiles, stages and kernel, only the PDL attribute (or the pdl variant's twin) off.
TEST(WeightOnlyGemv, WithoutEarlyLaunchKeepsTheKernel) {
  const GroupedGemmPlan gemv = plan_weight_only_gemm(F::int4_g32, 4, 1536, 7168, 132);
  ASSERT_TRUE(gemv.gemv && gemv.gemv_pdl);
  const GroupedGemmPlan g = without_early_launch(gemv, 132);
  EXPECT_TRUE(g.gemv);
  EXPECT_FALSE(g.gemv_pdl || g.pdl);
  EXPECT_EQ(g.gemv_split, gemv.gemv_split);
  EXPECT_EQ(g.gemv_smem_bytes, gemv.gemv_smem_bytes);
  for (int v = 0; v < grouped_gemm_variant_count(); ++v) {
    GroupedGemmShape s;
    s.format = F::int4_g32;
    s.n = 7168, s.k = 2048, s.max_rows = 16, s.variant = v, s.gemv = 0;
    const GroupedGemmPlan p = plan_grouped_gemm(s, 132);
    const GroupedGemmPlan w = without_early_launch(p, 132);
    SCOPED_TRACE(p.variant);
    EXPECT_FALSE(w.pdl);
    EXPECT_EQ(w.stages, p.stages);
    EXPECT_EQ(w.k_tile, p.k_tile);
    EXPECT_EQ(w.grid, p.grid);
    EXPECT_EQ(w.smem_bytes, p.smem_bytes);
    if (!p.pdl) EXPECT_EQ(w.kernel_variant, p.kernel_variant);
  }
}

}  // namespace
}  // namespace eaglesim::cuda
