// Verify attention (kernels/verify_attention.cuh, launched through src/cuda/ops/verify_attention.cu)
// against a CPU double-precision reference on the same bf16 inputs, and the plain reference
// kernel against the same. Fresh random inputs for every check (never zeros), outputs poisoned
// with NaN before every launch, the cache's slack between requests NaN too (a read past a
// request's kv_len shows), ||out - ref|| / ||ref|| < 1e-2 over the op and < 5e-2 in its worst
// row. VerifyAttentionPlan.* test the host planner and need no GPU; VerifyAttention.* skip
// cleanly without one. EAGLESIM_TEST_QUICK=1 trims the matrix; VerifyAttention.SmallShapes
// is the one to run under compute-sanitizer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda/ops/verify_attention_launch.hpp"
#include "host_bf16.hpp"
#include "slow_writer.hpp"

namespace eaglesim::cuda {
namespace {

namespace cfg = verify_attention_config;

bool has_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define SKIP_WITHOUT_GPU()                                 \
  do {                                                     \
    if (!has_gpu()) GTEST_SKIP() << "needs a CUDA GPU";    \
  } while (0)

bool quick() { return std::getenv("EAGLESIM_TEST_QUICK") != nullptr; }

using test::from_bf;
using test::to_bf;
constexpr std::uint16_t kBfNaN = 0x7fc0;

VerifyAttentionShape gqa_shape(int batch, int q, int group, int kv_heads, int d) {
  VerifyAttentionShape s;
  s.batch = batch;
  s.q_tokens = q;
  s.kv_heads = kv_heads;
  s.heads = group * kv_heads;
  s.head_dim_qk = s.head_dim_v = d;
  return s;
}
VerifyAttentionShape mla_shape(int batch, int q, int heads) {
  VerifyAttentionShape s;
  s.kind = VerifyAttentionKind::mla;
  s.batch = batch;
  s.q_tokens = q;
  s.heads = heads;
  s.kv_heads = 1;
  s.head_dim_qk = cfg::kMlaDk;
  s.head_dim_v = cfg::kMlaDv;
  return s;
}

struct Case {
  std::string name;
  VerifyAttentionShape shape;
  std::vector<std::int32_t> kv_len;
  AttentionMaskKind mask = AttentionMaskKind::chain;
  bool per_request = false;
  bool interleaved_kv = false;  // GQA: K and V of a token and head side by side in one buffer
  int row_pad = 0;              // extra elements at the end of every Q and output token row
};

std::string shape_text(const Case& c) {
  std::ostringstream os;
  os << c.name << " [B=" << c.shape.batch << " q=" << c.shape.q_tokens << " H=" << c.shape.heads << "/"
     << c.shape.kv_heads << " D=" << c.shape.head_dim_qk << "/" << c.shape.head_dim_v << " kv=";
  for (std::size_t i = 0; i < c.kv_len.size(); ++i) os << (i ? "," : "") << c.kv_len[i];
  os << (c.mask == AttentionMaskKind::tree ? (c.per_request ? " tree/request" : " tree") : " chain") << "]";
  return os.str();
}

struct Dev {
  void* p = nullptr;
  explicit Dev(std::size_t bytes) { EXPECT_EQ(cudaMalloc(&p, std::max<std::size_t>(bytes, 256)), cudaSuccess); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};

void upload(Dev& d, const void* src, std::size_t bytes) {
  ASSERT_EQ(cudaMemcpy(d.p, src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

// One problem on the host and the device, drawn fresh.
struct Problem {
  Case c;
  std::vector<std::int32_t> indptr;
  long long k_token_stride = 0, v_token_stride = 0, k_head_stride = 0, v_head_stride = 0, v_offset = 0;
  long long q_token_stride = 0, out_token_stride = 0;
  std::vector<std::uint16_t> q, kv;  // kv: the K buffer (and V: at v_offset, or interleaved, or MLA's own K rows)
  std::vector<std::uint16_t> v;      // separate V buffer (GQA, not interleaved)
  std::vector<std::uint32_t> mask;
  std::vector<double> ref;           // [B*q, H, Dv] packed

  std::unique_ptr<Dev> dq, dk, dv, dout, dindptr, dlen, dmask;
  std::size_t out_elems = 0;

  double k_at(long long token, int head, int e) const { return from_bf(kv[token * k_token_stride + head * k_head_stride + e]); }
  double v_at(long long token, int head, int e) const {
    const auto& buf = (c.shape.kind == VerifyAttentionKind::gqa && !c.interleaved_kv) ? v : kv;
    return from_bf(buf[v_offset + token * v_token_stride + head * v_head_stride + e]);
  }
};

std::unique_ptr<Problem> make_problem(const Case& c, std::mt19937_64& rng) {
  auto pr = std::make_unique<Problem>();
  Problem& P = *pr;
  P.c = c;
  const auto& s = c.shape;
  const bool mla = s.kind == VerifyAttentionKind::mla;
  const int B = s.batch, T = s.q_tokens, H = s.heads, HK = s.kv_heads, DK = s.head_dim_qk, DV = s.head_dim_v;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_int_distribution<int> slack(0, 19);

  P.indptr.assign(B + 1, 0);
  for (int r = 0; r < B; ++r) P.indptr[r + 1] = P.indptr[r] + c.kv_len[r] + slack(rng);
  const long long total = P.indptr[B];
  if (mla) {
    P.k_token_stride = DK;
    P.k_head_stride = 0;
    P.v_token_stride = DK;
    P.v_head_stride = 0;
  } else if (c.interleaved_kv) {  // [token][head][K | V]
    P.k_token_stride = P.v_token_stride = static_cast<long long>(HK) * (DK + DV);
    P.k_head_stride = P.v_head_stride = DK + DV;
    P.v_offset = DK;
  } else {
    P.k_token_stride = static_cast<long long>(HK) * DK;
    P.k_head_stride = DK;
    P.v_token_stride = static_cast<long long>(HK) * DV;
    P.v_head_stride = DV;
  }
  P.q_token_stride = static_cast<long long>(H) * DK + c.row_pad;
  P.out_token_stride = static_cast<long long>(H) * DV + c.row_pad;

  P.q.assign(static_cast<std::size_t>(B) * T * P.q_token_stride, kBfNaN);
  for (int row = 0; row < B * T; ++row)
    for (long long e = 0; e < static_cast<long long>(H) * DK; ++e) P.q[row * P.q_token_stride + e] = to_bf(2.f * u(rng));
  P.kv.assign(static_cast<std::size_t>(total * P.k_token_stride), kBfNaN);
  if (!mla && !c.interleaved_kv) P.v.assign(static_cast<std::size_t>(total * P.v_token_stride), kBfNaN);
  for (int r = 0; r < B; ++r)
    for (long long t = P.indptr[r]; t < P.indptr[r] + c.kv_len[r]; ++t) {
      for (long long e = 0; e < P.k_token_stride; ++e) P.kv[t * P.k_token_stride + e] = to_bf(u(rng));
      if (!P.v.empty())
        for (long long e = 0; e < P.v_token_stride; ++e) P.v[t * P.v_token_stride + e] = to_bf(u(rng));
    }
  if (c.mask == AttentionMaskKind::tree) {
    for (int r = 0; r < (c.per_request ? B : 1); ++r) {
      std::vector<int> parent(T);
      parent[0] = -1;
      for (int i = 1; i < T; ++i) parent[i] = std::uniform_int_distribution<int>(0, i - 1)(rng);
      const auto m = tree_mask_from_parents(parent);
      P.mask.insert(P.mask.end(), m.begin(), m.end());
    }
  }

  // Reference rows split over the host's cores.
  P.out_elems = static_cast<std::size_t>(B) * T * P.out_token_stride;
  P.ref.assign(static_cast<std::size_t>(B) * T * H * DV, 0.0);
  const int G = H / HK;
  const int rows = B * T * H;
  auto work = [&](int first, int step) {
    std::vector<double> sc, o(DV);
    for (int row = first; row < rows; row += step) {
      const int h = row % H, tr = row / H, r = tr / T, t = tr % T;
      const int L = c.kv_len[r], prefix = L - T, kvh = h / G;
      const std::uint32_t word = c.mask == AttentionMaskKind::tree ? P.mask[(c.per_request ? r * T : 0) + t]
                                 : t >= 31                  ? 0xffffffffu
                                                            : (2u << t) - 1u;
      std::vector<double> qd(DK);
      for (int e = 0; e < DK; ++e) qd[e] = from_bf(P.q[static_cast<long long>(tr) * P.q_token_stride + h * DK + e]);
      sc.assign(L, -INFINITY);
      double mx = -INFINITY;
      const double scale = 1.0 / std::sqrt(static_cast<double>(DK));
      for (int p = 0; p < L; ++p) {
        if (p >= prefix && !((word >> (p - prefix)) & 1u)) continue;
        double d = 0;
        for (int e = 0; e < DK; ++e) d += qd[e] * P.k_at(P.indptr[r] + p, kvh, e);
        sc[p] = d * scale;
        mx = std::max(mx, sc[p]);
      }
      std::fill(o.begin(), o.end(), 0.0);
      double den = 0;
      for (int p = 0; p < L; ++p) {
        if (sc[p] == -INFINITY) continue;
        const double w = std::exp(sc[p] - mx);
        den += w;
        for (int e = 0; e < DV; ++e) o[e] += w * P.v_at(P.indptr[r] + p, kvh, e);
      }
      for (int e = 0; e < DV; ++e) P.ref[static_cast<std::size_t>(row) * DV + e] = o[e] / den;
    }
  };
  const int n = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 32u));
  std::vector<std::thread> pool;
  for (int i = 0; i < n; ++i) pool.emplace_back(work, i, n);
  for (auto& th : pool) th.join();

  P.dq = std::make_unique<Dev>(P.q.size() * 2);
  upload(*P.dq, P.q.data(), P.q.size() * 2);
  P.dk = std::make_unique<Dev>(P.kv.size() * 2);
  upload(*P.dk, P.kv.data(), P.kv.size() * 2);
  if (!P.v.empty()) {
    P.dv = std::make_unique<Dev>(P.v.size() * 2);
    upload(*P.dv, P.v.data(), P.v.size() * 2);
  }
  P.dout = std::make_unique<Dev>(P.out_elems * 2);
  P.dindptr = std::make_unique<Dev>(P.indptr.size() * 4);
  upload(*P.dindptr, P.indptr.data(), P.indptr.size() * 4);
  P.dlen = std::make_unique<Dev>(c.kv_len.size() * 4);
  upload(*P.dlen, c.kv_len.data(), c.kv_len.size() * 4);
  if (!P.mask.empty()) {
    P.dmask = std::make_unique<Dev>(P.mask.size() * 4);
    upload(*P.dmask, P.mask.data(), P.mask.size() * 4);
  }
  return pr;
}

VerifyAttentionParams params_of(const Problem& P) {
  VerifyAttentionParams p;
  p.q = P.dq->p;
  p.k = P.dk->p;
  if (P.c.shape.kind == VerifyAttentionKind::mla)
    p.v = P.dk->p;
  else if (P.c.interleaved_kv)
    p.v = static_cast<const std::uint16_t*>(P.dk->p) + P.v_offset;
  else
    p.v = P.dv->p;
  p.out = P.dout->p;
  p.q_token_stride = P.q_token_stride;
  p.out_token_stride = P.out_token_stride;
  p.k_token_stride = P.k_token_stride;
  p.k_head_stride = P.k_head_stride;
  p.v_token_stride = P.v_token_stride;
  p.v_head_stride = P.v_head_stride;
  p.kv_indptr = static_cast<const std::int32_t*>(P.dindptr->p);
  p.kv_len = static_cast<const std::int32_t*>(P.dlen->p);
  p.mask_kind = P.c.mask;
  p.mask = P.dmask ? static_cast<const std::uint32_t*>(P.dmask->p) : nullptr;
  p.mask_per_request = P.c.per_request;
  return p;
}

struct Error {
  double rel = 0, worst_row = 0;
  long long nan = 0, pad_touched = 0;
};

// Reads the output back and compares it with the reference; padding past each row must keep
// its poison (nothing writes there).
Error compare(const Problem& P) {
  const auto& s = P.c.shape;
  std::vector<std::uint16_t> got(P.out_elems);
  EXPECT_EQ(cudaMemcpy(got.data(), P.dout->p, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  Error e;
  double num = 0, den = 0;
  const int DV = s.head_dim_v;
  for (int tr = 0; tr < s.batch * s.q_tokens; ++tr) {
    for (int h = 0; h < s.heads; ++h) {
      double rn = 0, rd = 0;
      for (int c = 0; c < DV; ++c) {
        const double g = from_bf(got[static_cast<std::size_t>(tr) * P.out_token_stride + h * DV + c]);
        const double r = P.ref[(static_cast<std::size_t>(tr) * s.heads + h) * DV + c];
        if (std::isnan(g)) {
          ++e.nan;
          continue;
        }
        rn += (g - r) * (g - r);
        rd += r * r;
      }
      num += rn;
      den += rd;
      if (rd > 0) e.worst_row = std::max(e.worst_row, std::sqrt(rn / rd));
    }
    for (int c = 0; c < P.c.row_pad; ++c)
      e.pad_touched += got[static_cast<std::size_t>(tr) * P.out_token_stride + s.heads * DV + c] != 0xffff;
  }
  e.rel = den > 0 ? std::sqrt(num / den) : 0;
  return e;
}

void poison_output(const Problem& P) { ASSERT_EQ(cudaMemset(P.dout->p, 0xff, P.out_elems * 2), cudaSuccess); }

void expect_close(const Error& e, const std::string& what) {
  EXPECT_EQ(e.nan, 0) << what << ": NaN or unwritten outputs";
  EXPECT_EQ(e.pad_touched, 0) << what << ": wrote past the end of a row";
  EXPECT_LT(e.rel, 1e-2) << what;
  EXPECT_LT(e.worst_row, 5e-2) << what;
}

// The optimised op with one plan: upload, poison, launch, compare.
void check_optimised(const Problem& P, const VerifyAttentionPlanOptions& opt, const std::string& label) {
  const VerifyAttentionPlan plan = plan_verify_attention(P.c.shape, P.c.kv_len, {}, opt);
  Dev ws(plan.workspace_bytes);
  ASSERT_EQ(verify_attention_upload(plan, ws.p, nullptr), 0);
  poison_output(P);
  const int rc = verify_attention_launch(params_of(P), plan, ws.p, nullptr);
  ASSERT_EQ(rc, 0) << cudaGetErrorString(static_cast<cudaError_t>(rc));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const Error e = compare(P);
  const std::string what = shape_text(P.c) + " " + label + " {" + describe(plan) + "}";
  expect_close(e, what);
}

void check_reference_kernel(const Problem& P) {
  poison_output(P);
  const int rc = verify_attention_reference_launch(params_of(P), P.c.shape, nullptr);
  ASSERT_EQ(rc, 0) << cudaGetErrorString(static_cast<cudaError_t>(rc));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_close(compare(P), shape_text(P.c) + " plain kernel");
}

// Every check of one case: the planner's own split, forced 64- and 32-token splits (the combine,
// split edges inside the draft tokens and inside a tile), and the plain kernel.
void check_case(const Case& c, std::mt19937_64& rng) {
  SCOPED_TRACE(shape_text(c));
  auto P = make_problem(c, rng);
  check_optimised(*P, {}, "planner split");
  VerifyAttentionPlanOptions forced;
  forced.chunk_tokens = cfg::kTileKv;
  check_optimised(*P, forced, "split 64");
  forced.chunk_tokens = cfg::kSplitQuantum;  // splits that end inside a tile
  check_optimised(*P, forced, "split 32");
  if (c.shape.kind == VerifyAttentionKind::mla) {
    // MLA's ring of 32-position slots: an odd number of slots over two steps, and long splits
    // over which the five-slot ring wraps many times.
    forced.chunk_tokens = 3 * cfg::kMlaSlotKv;
    check_optimised(*P, forced, "split 96");
    forced.chunk_tokens = 1024;
    check_optimised(*P, forced, "split 1024");
  }
  check_reference_kernel(*P);
}

std::mt19937_64& test_rng() {
  static std::mt19937_64 rng(std::random_device{}());
  return rng;
}

// Ragged lengths for a batch of B with q draft tokens: for B > 1 a request shorter than one tile,
// one of exactly 8 tiles, and one not a multiple of the tile.
std::vector<std::int32_t> ragged(int B, int q, std::mt19937_64& rng, int scale) {
  std::uniform_int_distribution<int> jitter(0, 63);
  std::vector<std::int32_t> kv;
  if (B == 1) return {scale + 1 + jitter(rng) * 7};
  kv.push_back(q + jitter(rng) % 17);
  kv.push_back(8 * cfg::kTileKv);
  kv.push_back(scale + 1 + jitter(rng) * 11);
  while (static_cast<int>(kv.size()) < B) kv.push_back(q + std::uniform_int_distribution<int>(0, 2 * scale)(rng));
  std::shuffle(kv.begin(), kv.end(), rng);
  return kv;
}

// ------------------------------------------------------------------ GPU checks
// Each shape class (GQA group 1/4/8/16 x head dim 64/128, MLA with 8 and 16 heads) x each mask
// (decode q=1, chain, tree; tree masks per request on the larger batches) x batch 1, 3, 8;
// q_tokens cycle through 4, 7, 16, 32 so every class meets each of them.
TEST(VerifyAttention, MatchesDoubleReferenceOverShapesMasksAndBatches) {
  SKIP_WITHOUT_GPU();
  auto& rng = test_rng();
  struct Class {
    std::string name;
    bool mla;
    int group_or_heads, kv_heads, d;
  };
  const std::vector<Class> classes = {
      {"gqa g1 d64", false, 1, 4, 64},   {"gqa g4 d64", false, 4, 2, 64},   {"gqa g8 d64", false, 8, 2, 64},
      {"gqa g16 d64", false, 16, 2, 64}, {"gqa g1 d128", false, 1, 4, 128}, {"gqa g4 d128", false, 4, 2, 128},
      {"gqa g8 d128", false, 8, 2, 128}, {"gqa g16 d128", false, 16, 2, 128}, {"mla h8", true, 8, 1, 576},
      {"mla h16", true, 16, 1, 576}};
  const int qs[4] = {4, 7, 16, 32};
  const std::vector<int> batches = quick() ? std::vector<int>{1, 3} : std::vector<int>{1, 3, 8};
  const int scale = quick() ? 300 : 900;
  for (std::size_t ci = 0; ci < classes.size(); ++ci) {
    const Class& k = classes[ci];
    for (std::size_t bi = 0; bi < batches.size(); ++bi) {
      for (int mi = 0; mi < 3; ++mi) {
        const int B = batches[bi];
        const int q = mi == 0 ? 1 : qs[(bi * 2 + mi - 1 + ci) % 4];
        Case c;
        c.name = k.name + (mi == 0 ? " decode" : mi == 1 ? " chain" : " tree");
        c.shape = k.mla ? mla_shape(B, q, k.group_or_heads) : gqa_shape(B, q, k.group_or_heads, k.kv_heads, k.d);
        c.kv_len = ragged(B, q, rng, scale);
        c.mask = mi == 2 ? AttentionMaskKind::tree : AttentionMaskKind::chain;
        c.per_request = mi == 2 && B > 1;
        check_case(c, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Strided layouts: Q and output rows with padding (a fused QKV buffer), K and V interleaved.
TEST(VerifyAttention, StridedLayouts) {
  SKIP_WITHOUT_GPU();
  auto& rng = test_rng();
  Case a{"gqa g4 d128 interleaved kv, padded rows", gqa_shape(3, 4, 4, 2, 128), {700, 65, 1200}, AttentionMaskKind::tree, true,
         true, 24};
  Case b{"gqa g8 d64 interleaved kv", gqa_shape(2, 7, 8, 2, 64), {333, 2000}, AttentionMaskKind::chain, false, true, 0};
  Case m{"mla h16 padded rows", mla_shape(2, 4, 16), {1500, 90}, AttentionMaskKind::tree, false, false, 64};
  for (const Case& c : {a, b, m}) check_case(c, rng);
}

// Long requests (many splits, a long combine) at real model head counts.
TEST(VerifyAttention, LongRequests) {
  SKIP_WITHOUT_GPU();
  if (quick()) GTEST_SKIP() << "EAGLESIM_TEST_QUICK";
  auto& rng = test_rng();
  check_case({"llama-8b shape", gqa_shape(2, 4, 4, 8, 128), {12000, 3001}, AttentionMaskKind::tree, true}, rng);
  check_case({"kimi-k2 tp8 shape", mla_shape(1, 4, 8), {9000}, AttentionMaskKind::tree, false}, rng);
  check_case({"deepseek-v3 tp8 decode", mla_shape(2, 1, 16), {5000, 777}, AttentionMaskKind::chain, false}, rng);
}

// Small shapes of every kernel variant, for compute-sanitizer (memcheck, racecheck, synccheck).
TEST(VerifyAttention, SmallShapes) {
  SKIP_WITHOUT_GPU();
  auto& rng = test_rng();
  const std::vector<Case> cases = {
      {"gqa_d64_r16", gqa_shape(2, 4, 4, 1, 64), {150, 9}, AttentionMaskKind::chain, false},
      {"gqa_d64_r32", gqa_shape(2, 4, 8, 1, 64), {130, 70}, AttentionMaskKind::tree, true},
      {"gqa_d64_r64", gqa_shape(1, 7, 16, 1, 64), {147}, AttentionMaskKind::tree, false},
      {"gqa_d128_r16", gqa_shape(2, 1, 4, 2, 128), {200, 1}, AttentionMaskKind::chain, false},
      {"gqa_d128_r32", gqa_shape(1, 32, 1, 1, 128), {160}, AttentionMaskKind::tree, false},
      {"gqa_d128_r64", gqa_shape(1, 16, 8, 1, 128), {129}, AttentionMaskKind::tree, false},
      {"mla_r16", mla_shape(2, 1, 16), {140, 65}, AttentionMaskKind::chain, false},
      {"mla_r32", mla_shape(1, 4, 16), {100}, AttentionMaskKind::tree, false},
  };
  for (const Case& c : cases) check_case(c, rng);
}

// The same inputs twice give the same bits (a moving result means a race), and a CUDA graph of
// the op (the combine launched programmatically dependent) gives the bits of a plain launch.
TEST(VerifyAttention, DeterministicAndGraphCapturable) {
  SKIP_WITHOUT_GPU();
  auto& rng = test_rng();
  for (const Case& c : {Case{"gqa g8 d128", gqa_shape(3, 4, 8, 2, 128), {3000, 100, 1700}, AttentionMaskKind::tree, true},
                        Case{"mla h16", mla_shape(2, 4, 16), {2500, 400}, AttentionMaskKind::chain, false}}) {
    SCOPED_TRACE(shape_text(c));
    auto P = make_problem(c, rng);
    const VerifyAttentionPlan plan = plan_verify_attention(c.shape, c.kv_len);
    ASSERT_FALSE(plan.combine.empty()) << "want a plan with a combine: " << describe(plan);
    Dev ws(plan.workspace_bytes);
    ASSERT_EQ(verify_attention_upload(plan, ws.p, nullptr), 0);
    auto run_plain = [&] {
      poison_output(*P);
      EXPECT_EQ(verify_attention_launch(params_of(*P), plan, ws.p, nullptr), 0);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<std::uint16_t> out(P->out_elems);
      EXPECT_EQ(cudaMemcpy(out.data(), P->dout->p, out.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      return out;
    };
    const auto first = run_plain();
    const auto second = run_plain();
    EXPECT_TRUE(first == second) << "two launches on the same inputs differ";

    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cudaGraph_t g;
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    EXPECT_EQ(verify_attention_launch(params_of(*P), plan, ws.p, s), 0);
    ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
    poison_output(*P);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    std::vector<std::uint16_t> graphed(P->out_elems);
    ASSERT_EQ(cudaMemcpy(graphed.data(), P->dout->p, graphed.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(graphed == first) << "graph replay differs from a plain launch";
    expect_close(compare(*P), shape_text(c) + " graph");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
  }
}

// Early start: the attention kernel, launched with programmatic serialization after a kernel
// that writes Q and the draft tokens' K/V (as the step's projection and cache append do), must
// read those only after its wait. The writer lets it launch at once, then holds its writes back
// for 30 us; until then Q and the draft rows hold NaN, so a read before the wait shows.
TEST(VerifyAttention, EarlyStartReadsThePreviousKernelsOutput) {
  SKIP_WITHOUT_GPU();
  auto& rng = test_rng();
  for (const Case& c : {Case{"gqa g4 d128", gqa_shape(2, 4, 4, 2, 128), {900, 70}, AttentionMaskKind::tree, true},
                        Case{"gqa g8 d64 one tile", gqa_shape(1, 16, 8, 1, 64), {40}, AttentionMaskKind::chain, false},
                        Case{"mla h8", mla_shape(2, 4, 8), {700, 96}, AttentionMaskKind::tree, false},
                        Case{"mla h16 decode", mla_shape(1, 1, 16), {64}, AttentionMaskKind::chain, false}}) {
    SCOPED_TRACE(shape_text(c));
    auto P = make_problem(c, rng);
    const VerifyAttentionPlan plan = plan_verify_attention(c.shape, c.kv_len);
    Dev ws(plan.workspace_bytes);
    ASSERT_EQ(verify_attention_upload(plan, ws.p, nullptr), 0);
    // What the writer puts in place: Q, and each request's draft rows of K (and V).
    struct Region {
      void* at;
      std::size_t bytes;
    };
    std::vector<Region> regions{{P->dq->p, P->q.size() * 2}};
    for (int r = 0; r < c.shape.batch; ++r) {
      const long long first = P->indptr[r] + c.kv_len[r] - c.shape.q_tokens;
      regions.push_back({static_cast<std::uint16_t*>(P->dk->p) + first * P->k_token_stride,
                         static_cast<std::size_t>(c.shape.q_tokens * P->k_token_stride) * 2});
      if (P->dv)
        regions.push_back({static_cast<std::uint16_t*>(P->dv->p) + first * P->v_token_stride,
                           static_cast<std::size_t>(c.shape.q_tokens * P->v_token_stride) * 2});
    }
    std::vector<std::unique_ptr<Dev>> staged;
    std::vector<test::CopySegment> segments;
    for (const Region& g : regions) {
      staged.push_back(std::make_unique<Dev>(g.bytes));
      ASSERT_EQ(cudaMemcpy(staged.back()->p, g.at, g.bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(g.at, 0xff, g.bytes), cudaSuccess);  // bf16 NaN until the writer runs
      segments.push_back({g.at, staged.back()->p, g.bytes});
    }
    poison_output(*P);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(test::launch_slow_writer(segments, 30.0, s), 0);
    VerifyAttentionLaunchOptions early;
    early.early_start = true;
    EXPECT_EQ(verify_attention_launch(params_of(*P), plan, ws.p, s, early), 0);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    expect_close(compare(*P), shape_text(c) + " early start after a writer");
    cudaStreamDestroy(s);
  }
}

TEST(VerifyAttention, RejectsMisalignedPointers) {
  SKIP_WITHOUT_GPU();
  auto& rng = test_rng();
  auto P = make_problem({"gqa", gqa_shape(1, 4, 4, 1, 64), {100}, AttentionMaskKind::chain, false}, rng);
  const VerifyAttentionPlan plan = plan_verify_attention(P->c.shape, P->c.kv_len);
  Dev ws(plan.workspace_bytes);
  ASSERT_EQ(verify_attention_upload(plan, ws.p, nullptr), 0);
  VerifyAttentionParams p = params_of(*P);
  p.q = static_cast<const std::uint16_t*>(p.q) + 1;
  EXPECT_EQ(verify_attention_launch(p, plan, ws.p, nullptr), static_cast<int>(cudaErrorMisalignedAddress));
  p = params_of(*P);
  p.k_token_stride = 68;  // not a multiple of 8 elements
  EXPECT_EQ(verify_attention_launch(p, plan, ws.p, nullptr), static_cast<int>(cudaErrorMisalignedAddress));
  p = params_of(*P);
  p.mask_kind = AttentionMaskKind::tree;  // tree without mask words
  EXPECT_EQ(verify_attention_launch(p, plan, ws.p, nullptr), static_cast<int>(cudaErrorInvalidValue));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ------------------------------------------------------------------ the planner (no GPU)
std::vector<std::int32_t> spread(int B, int lo, int hi) {  // what the benchmark's ragged rows use
  std::vector<std::int32_t> kv(B);
  for (int r = 0; r < B; ++r) kv[r] = lo + static_cast<int>((static_cast<long long>(hi - lo) * (2 * r + 1)) / (2 * B));
  return kv;
}

void expect_consistent(const VerifyAttentionPlan& p, const std::vector<std::int32_t>& kv) {
  const int B = p.shape.batch;
  std::vector<std::vector<std::pair<int, int>>> ranges(B);
  std::set<int> slots;
  for (const auto& w : p.work) {
    ASSERT_GE(w.request, 0);
    ASSERT_LT(w.request, B);
    EXPECT_LT(w.kv_begin, w.kv_end);
    EXPECT_EQ(w.kv_begin % cfg::kSplitQuantum, 0) << "splits start on half a tile";
    EXPECT_LE(w.kv_end - w.kv_begin, p.chunk_tokens);
    ranges[w.request].push_back({w.kv_begin, w.kv_end});
    if (p.splits_per_request[w.request] > 1) {
      EXPECT_GE(w.slot, 0);
      EXPECT_TRUE(slots.insert(w.slot).second) << "slot " << w.slot << " used twice";
    } else {
      EXPECT_EQ(w.slot, -1);
    }
  }
  for (int r = 0; r < B; ++r) {
    auto& v = ranges[r];
    std::sort(v.begin(), v.end());
    ASSERT_EQ(static_cast<int>(v.size()), p.splits_per_request[r]);
    int at = 0;
    for (const auto& [b, e] : v) {
      EXPECT_EQ(b, at) << "request " << r << ": gap or overlap";
      at = e;
    }
    EXPECT_EQ(at, kv[r]) << "request " << r << " not covered to its end";
  }
  EXPECT_EQ(static_cast<int>(slots.size()), p.num_slots);
  int expect_base = 0;
  for (const auto& c : p.combine) {
    EXPECT_GT(c.splits, 1);
    EXPECT_EQ(c.slot_base, expect_base);
    EXPECT_EQ(c.splits, p.splits_per_request[c.request]);
    expect_base += c.splits;
  }
  for (std::size_t i = 1; i < p.work.size(); ++i)
    EXPECT_GE(p.work[i - 1].kv_end - p.work[i - 1].kv_begin, p.work[i].kv_end - p.work[i].kv_begin) << "longest first";
  // Workspace: metadata is the work list then the combine list, the partials fit.
  EXPECT_EQ(p.work_offset, 0u);
  EXPECT_EQ(p.combine_offset % 256, 0u);
  EXPECT_EQ(p.part_o_offset % 256, 0u);
  EXPECT_EQ(p.part_lse_offset % 256, 0u);
  EXPECT_GE(p.combine_offset, p.work.size() * sizeof(VerifyAttentionWorkItem));
  EXPECT_GE(p.part_lse_offset - p.part_o_offset,
            static_cast<std::size_t>(p.num_slots) * p.shape.q_tokens * p.shape.heads * p.shape.head_dim_v * 4);
  EXPECT_GE(p.workspace_bytes - p.part_lse_offset, static_cast<std::size_t>(p.num_slots) * p.shape.q_tokens * p.shape.heads * 4);
  ASSERT_EQ(p.metadata.size(), p.part_o_offset);
  EXPECT_EQ(0, std::memcmp(p.metadata.data(), p.work.data(), p.work.size() * sizeof(VerifyAttentionWorkItem)));
  if (!p.combine.empty()) {
    EXPECT_EQ(0, std::memcmp(p.metadata.data() + p.combine_offset, p.combine.data(),
                             p.combine.size() * sizeof(VerifyAttentionCombineItem)));
  }
}

TEST(VerifyAttentionPlan, CoversEveryPositionOnceInAlignedSplits) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int B = std::uniform_int_distribution<int>(1, 70)(rng);
    const int q = std::uniform_int_distribution<int>(1, 32)(rng);
    const bool mla = trial % 4 == 3;
    const int group = 1 << std::uniform_int_distribution<int>(0, 4)(rng);
    VerifyAttentionShape s = mla ? mla_shape(B, q, trial % 2 ? 8 : 16) : gqa_shape(B, q, group, 1 + trial % 8, trial % 2 ? 64 : 128);
    std::vector<std::int32_t> kv(B);
    for (auto& x : kv) x = std::uniform_int_distribution<int>(q, trial % 3 ? 40000 : 700)(rng);
    VerifyAttentionPlanOptions opt;
    if (trial % 5 == 0) opt.chunk_tokens = std::uniform_int_distribution<int>(1, 3000)(rng);
    const VerifyAttentionPlan p = plan_verify_attention(s, kv, {}, opt);
    SCOPED_TRACE(describe(p));
    expect_consistent(p, kv);
    if (opt.chunk_tokens) {
      EXPECT_EQ(p.chunk_tokens % cfg::kSplitQuantum, 0);
    }
    if (HasFailure()) return;
  }
}

// The grid reaches every SM whenever there is work enough for it.
TEST(VerifyAttentionPlan, FillsTheGpu) {
  const VerifyAttentionDevice dev;  // 132 SMs
  struct S {
    VerifyAttentionShape shape;
    std::vector<std::int32_t> kv;
  };
  const std::vector<S> shapes = {
      {gqa_shape(1, 4, 4, 8, 128), {32768}},   {gqa_shape(1, 1, 4, 8, 128), {8192}},
      {gqa_shape(8, 4, 8, 8, 128), {2048, 2048, 2048, 2048, 2048, 2048, 2048, 2048}},
      {gqa_shape(8, 16, 8, 8, 128), spread(8, 512, 32768)}, {mla_shape(1, 1, 8), {32768}},
      {mla_shape(1, 4, 16), {8192}},           {mla_shape(8, 4, 8), spread(8, 2048, 8192)},
      {gqa_shape(64, 32, 8, 8, 128), spread(64, 512, 32768)}};
  for (const auto& sh : shapes) {
    const VerifyAttentionPlan p = plan_verify_attention(sh.shape, sh.kv, dev);
    SCOPED_TRACE(describe(p));
    expect_consistent(p, sh.kv);
    EXPECT_GE(p.grid_blocks(), 0.95 * dev.sms) << "SMs left without a block";
  }
}

TEST(VerifyAttentionPlan, LongRequestsGetMoreSplits) {
  const auto kv = spread(8, 512, 32768);
  const VerifyAttentionPlan p = plan_verify_attention(gqa_shape(8, 4, 4, 8, 128), kv);
  SCOPED_TRACE(describe(p));
  for (int r = 1; r < 8; ++r) EXPECT_GE(p.splits_per_request[r], p.splits_per_request[r - 1]);
  EXPECT_GT(p.splits_per_request[7], p.splits_per_request[0]);
}

// Tiny ops stay in few blocks and skip the combine when splitting cannot pay for it.
TEST(VerifyAttentionPlan, ManyRequestsNeedNoCombine) {
  std::vector<std::int32_t> kv(64, 2048);
  const VerifyAttentionPlan p = plan_verify_attention(gqa_shape(64, 4, 4, 8, 128), kv);
  SCOPED_TRACE(describe(p));
  EXPECT_TRUE(p.combine.empty());
  EXPECT_EQ(p.num_slots, 0);
}

// The combine's warps per row follow the most splits of any request (first H200 run: one
// warp walking 128 splits serially cost ~30 us), and the model charges rounds, not splits.
TEST(VerifyAttentionPlan, CombineWarpsFollowSplits) {
  VerifyAttentionPlanOptions opt;
  opt.chunk_tokens = 64;
  const VerifyAttentionPlan none = plan_verify_attention(gqa_shape(2, 4, 4, 8, 128), {64, 50}, {}, opt);
  EXPECT_TRUE(none.combine.empty());
  EXPECT_EQ(combine_warps_per_row(none), 1);
  const VerifyAttentionPlan g = plan_verify_attention(gqa_shape(2, 1, 4, 8, 128), {64 * 40, 700}, {}, opt);
  EXPECT_EQ(combine_warps_per_row(g), 4);  // 40 splits, 8 in flight per warp, at most two rounds
  const VerifyAttentionPlan m = plan_verify_attention(mla_shape(1, 1, 16), {8192}, {}, opt);
  EXPECT_EQ(m.splits_per_request[0], 128);
  EXPECT_EQ(combine_warps_per_row(m), 8);
  EXPECT_LT(m.estimated_us, 20.0) << describe(m);
}

TEST(VerifyAttentionPlan, ForcedChunkIsRoundedToTheSplitQuantum) {
  const VerifyAttentionShape s = gqa_shape(2, 4, 4, 8, 128);
  VerifyAttentionPlanOptions opt;
  opt.chunk_tokens = 100;
  const std::vector<std::int32_t> kv = {1000, 50};
  const VerifyAttentionPlan p = plan_verify_attention(s, kv, {}, opt);
  EXPECT_EQ(p.chunk_tokens, 128);
  EXPECT_EQ(p.splits_per_request[0], 8);
  EXPECT_EQ(p.splits_per_request[1], 1);
  expect_consistent(p, kv);
}

TEST(VerifyAttentionPlan, KernelChoiceAndResources) {
  using V = VerifyAttentionVariant;
  EXPECT_EQ(choose_verify_attention_kernel(gqa_shape(1, 4, 4, 8, 128)).variant, V::gqa_d128_r16);
  EXPECT_EQ(choose_verify_attention_kernel(gqa_shape(1, 4, 8, 8, 128)).variant, V::gqa_d128_r32);
  EXPECT_EQ(choose_verify_attention_kernel(gqa_shape(1, 1, 8, 8, 64)).variant, V::gqa_d64_r16);
  const auto k70 = choose_verify_attention_kernel(gqa_shape(1, 32, 8, 8, 128));
  EXPECT_EQ(k70.variant, V::gqa_d128_r64);
  EXPECT_EQ(k70.row_chunks, 4);
  const auto mla = choose_verify_attention_kernel(mla_shape(1, 4, 16));
  EXPECT_EQ(mla.variant, V::mla_r32);
  EXPECT_EQ(mla.row_chunks, 2);
  EXPECT_EQ(mla.smem_bytes, cfg::mla_smem_bytes(32));
  EXPECT_EQ(choose_verify_attention_kernel(mla_shape(1, 1, 8)).variant, V::mla_r16);
  // What the launch bounds promise must fit an H100/H200 SM: 228 KB shared, 1 KB reserved per block.
  for (const auto& s : {gqa_shape(1, 1, 4, 8, 64), gqa_shape(1, 1, 4, 8, 128), mla_shape(1, 1, 8), mla_shape(1, 4, 8)}) {
    const auto k = choose_verify_attention_kernel(s);
    EXPECT_LE(k.smem_bytes, 227u * 1024);
    EXPECT_LE(k.blocks_per_sm * (k.smem_bytes + 1024), 228u * 1024) << variant_name(k.variant);
  }
}

TEST(VerifyAttentionPlan, RejectsUnsupportedShapes) {
  const std::vector<std::int32_t> kv1 = {100};
  EXPECT_THROW(plan_verify_attention(gqa_shape(1, 33, 4, 1, 128), kv1), std::invalid_argument);
  EXPECT_THROW(plan_verify_attention(gqa_shape(1, 4, 4, 1, 96), kv1), std::invalid_argument);
  VerifyAttentionShape odd = gqa_shape(1, 4, 4, 2, 128);
  odd.heads = 7;
  EXPECT_THROW(plan_verify_attention(odd, kv1), std::invalid_argument);
  VerifyAttentionShape mla2 = mla_shape(1, 4, 8);
  mla2.kv_heads = 2;
  EXPECT_THROW(plan_verify_attention(mla2, kv1), std::invalid_argument);
  EXPECT_THROW(plan_verify_attention(gqa_shape(1, 8, 4, 1, 128), {7}), std::invalid_argument);  // kv < q
  EXPECT_THROW(plan_verify_attention(gqa_shape(2, 4, 4, 1, 128), kv1), std::invalid_argument);  // batch mismatch
}

TEST(VerifyAttentionPlan, MaskWords) {
  EXPECT_EQ(tree_mask_from_parents({-1, 0, 0, 1}), (std::vector<std::uint32_t>{0b1, 0b11, 0b101, 0b1011}));
  EXPECT_THROW(tree_mask_from_parents({0, 0}), std::invalid_argument);
  EXPECT_THROW(tree_mask_from_parents({-1, 1}), std::invalid_argument);
  const auto chain = chain_mask_words(32);
  EXPECT_EQ(chain[0], 1u);
  EXPECT_EQ(chain[5], 0x3fu);
  EXPECT_EQ(chain[31], 0xffffffffu);
  std::vector<int> line(32);
  for (int i = 0; i < 32; ++i) line[i] = i - 1;
  EXPECT_EQ(tree_mask_from_parents(line), chain);
}

TEST(VerifyAttentionPlan, FloorArithmetic) {
  // Llama-3.1-8B TP1, 4 tokens, one request of 2048: K and V of 8 heads x 128 x bf16, Q and O.
  const VerifyAttentionShape s = gqa_shape(1, 4, 4, 8, 128);
  EXPECT_DOUBLE_EQ(verify_attention_min_bytes(s, {2048}), 2048.0 * 8 * 256 * 2 + 2.0 * 4 * 32 * 128 * 2);
  EXPECT_DOUBLE_EQ(verify_attention_flops(s, {2048}), 2.0 * 2048 * 4 * 32 * 256);
  // MLA reads the 576-column latent row once per token.
  EXPECT_DOUBLE_EQ(verify_attention_min_bytes(mla_shape(1, 1, 8), {1000}), 1000.0 * 576 * 2 + 8.0 * (576 + 512) * 2);
}

}  // namespace
}  // namespace eaglesim::cuda
