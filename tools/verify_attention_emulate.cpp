// Runs the verify-attention kernels' own source (kernels/verify_attention.cuh and
// verify_attention_reference.cuh) on the CPU and checks them against a double-precision
// reference, for machines without a GPU. Each CUDA thread is a ucontext coroutine; the
// scheduler runs a block's threads one at a time up to their next barrier or warp collective
// and then performs it for the whole warp with the PTX semantics of mma.sync m16n8k16 (bf16),
// ldmatrix (.trans too), shfl.xor and cp.async (copies land only at the issuing thread's
// cp.async.wait_group, so a read that the pipeline does not wait for sees stale data; fresh
// shared memory is NaN). A warp whose lanes reach different collectives, or a block whose
// threads reach different barriers, is reported as divergence.
//
// A CMake target (ctest runs its --quick cases, label emulator); by hand:
//   g++ -std=c++17 -O2 -DEAGLESIM_VA_EMULATE -Isrc -Ikernels tools/verify_attention_emulate.cpp \
//       src/cost/verify_attention_plan.cpp src/cuda/ops/verify_attention_launch.cpp -o /tmp/va_emulate && /tmp/va_emulate [--quick]
#include <math.h>
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

// ------------------------------------------------------------------ CUDA surface for host C++
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static  // blocks run one after another, so a static is one block's
#define EAGLESIM_VA_DYNAMIC_SMEM(name) unsigned char* name = ::emu::block_smem()

#include "emulated_bf16.hpp"
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline int min(int a, int b) { return a < b ? a : b; }
template <class T>
T __ldg(const T* p) {
  return *p;
}

namespace emu {
struct Idx {
  unsigned x = 0, y = 0, z = 0;
};
enum class Op { none, sync, shfl, ldsm, ldsm_t, mma };
struct Copy {
  unsigned dst;
  const void* src;
  int bytes;
};
struct Thread {
  ucontext_t ctx;
  Idx tid;
  bool done = false;
  Op op = Op::none;
  float shfl_val = 0;
  int shfl_mask = 0;
  float* shfl_out = nullptr;
  unsigned ldsm_addr = 0;
  unsigned* ldsm_out = nullptr;
  float* mma_c = nullptr;
  const unsigned* mma_a = nullptr;
  unsigned mma_b0 = 0, mma_b1 = 0;
  std::vector<Copy> pending;
  std::deque<std::vector<Copy>> groups;
};
struct Range {
  const unsigned char* p;
  std::size_t n;
};

inline std::vector<Thread> g_threads;
inline std::vector<std::unique_ptr<char[]>> g_stacks;
inline std::vector<unsigned char> g_smem;
inline Idx g_bid;
inline Thread* g_cur = nullptr;
inline ucontext_t g_sched;
inline std::function<void()> g_body;
inline std::vector<Range> g_global;  // what cp.async may read
constexpr std::size_t kStack = 96 * 1024;

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "emulator: %s\n", what.c_str());
  std::exit(2);
}
inline Idx& thread_idx() { return g_cur->tid; }
inline Idx& block_idx() { return g_bid; }
inline unsigned char* block_smem() { return g_smem.data(); }
inline void yield_op(Op op) {
  g_cur->op = op;
  swapcontext(&g_cur->ctx, &g_sched);
}
inline void entry() {
  g_body();
  g_cur->done = true;
  swapcontext(&g_cur->ctx, &g_sched);
}
inline std::uint16_t smem_u16(unsigned byte) {
  if (byte + 2 > g_smem.size()) die("shared read out of range");
  std::uint16_t v;
  std::memcpy(&v, g_smem.data() + byte, 2);
  return v;
}
inline float bf(std::uint16_t u) { return __bfloat162float(__nv_bfloat16{u}); }

inline void execute_warp(Thread* lanes) {
  const Op op = lanes[0].op;
  for (int l = 1; l < 32; ++l)
    if (lanes[l].op != op) die("warp divergence: lanes at different collectives");
  if (op == Op::shfl) {
    float v[32];
    for (int l = 0; l < 32; ++l) v[l] = lanes[l].shfl_val;
    for (int l = 0; l < 32; ++l) *lanes[l].shfl_out = v[l ^ lanes[l].shfl_mask];
  } else if (op == Op::ldsm || op == Op::ldsm_t) {
    unsigned addr[32];
    for (int l = 0; l < 32; ++l) {
      addr[l] = lanes[l].ldsm_addr;
      if (addr[l] % 16 || addr[l] + 16 > g_smem.size()) die("ldmatrix address misaligned or out of range");
    }
    for (int t = 0; t < 32; ++t)
      for (int i = 0; i < 4; ++i) {
        std::uint16_t lo, hi;
        if (op == Op::ldsm) {  // lane t: row t/4, columns 2(t%4), +1 of matrix i
          lo = smem_u16(addr[8 * i + t / 4] + 2 * (2 * (t % 4)));
          hi = smem_u16(addr[8 * i + t / 4] + 2 * (2 * (t % 4) + 1));
        } else {  // transposed: rows 2(t%4), +1 of column t/4
          lo = smem_u16(addr[8 * i + 2 * (t % 4)] + 2 * (t / 4));
          hi = smem_u16(addr[8 * i + 2 * (t % 4) + 1] + 2 * (t / 4));
        }
        lanes[t].ldsm_out[i] = static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);
      }
  } else if (op == Op::mma) {
    float A[16][16], B[16][8], C[16][8];
    for (int t = 0; t < 32; ++t) {
      const int g = t / 4, c = t % 4;
      const unsigned* a = lanes[t].mma_a;
      auto lo = [](unsigned r) { return bf(static_cast<std::uint16_t>(r & 0xffffu)); };
      auto hi = [](unsigned r) { return bf(static_cast<std::uint16_t>(r >> 16)); };
      A[g][2 * c] = lo(a[0]);
      A[g][2 * c + 1] = hi(a[0]);
      A[g + 8][2 * c] = lo(a[1]);
      A[g + 8][2 * c + 1] = hi(a[1]);
      A[g][2 * c + 8] = lo(a[2]);
      A[g][2 * c + 9] = hi(a[2]);
      A[g + 8][2 * c + 8] = lo(a[3]);
      A[g + 8][2 * c + 9] = hi(a[3]);
      B[2 * c][g] = lo(lanes[t].mma_b0);
      B[2 * c + 1][g] = hi(lanes[t].mma_b0);
      B[2 * c + 8][g] = lo(lanes[t].mma_b1);
      B[2 * c + 9][g] = hi(lanes[t].mma_b1);
      const float* cc = lanes[t].mma_c;
      C[g][2 * c] = cc[0];
      C[g][2 * c + 1] = cc[1];
      C[g + 8][2 * c] = cc[2];
      C[g + 8][2 * c + 1] = cc[3];
    }
    float D[16][8];
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        float acc = C[m][n];
        for (int k = 0; k < 16; ++k) acc += A[m][k] * B[k][n];
        D[m][n] = acc;
      }
    for (int t = 0; t < 32; ++t) {
      const int g = t / 4, c = t % 4;
      float* cc = lanes[t].mma_c;
      cc[0] = D[g][2 * c];
      cc[1] = D[g][2 * c + 1];
      cc[2] = D[g + 8][2 * c];
      cc[3] = D[g + 8][2 * c + 1];
    }
  } else {
    die("unknown warp op");
  }
  for (int l = 0; l < 32; ++l) lanes[l].op = Op::none;
}

// Runs one block to completion.
inline void run_block(int threads, std::size_t smem_bytes, unsigned bid, const std::function<void()>& body,
                      unsigned bid_y = 0) {
  if (threads % 32) die("threads must be a multiple of 32");
  g_smem.assign(smem_bytes, 0xff);  // NaN as bf16 and as fp32: reads of unwritten shared memory show
  g_bid.x = bid;
  g_bid.y = bid_y;
  g_body = body;
  g_threads.clear();
  g_threads.resize(threads);
  while (g_stacks.size() < static_cast<std::size_t>(threads)) g_stacks.emplace_back(new char[kStack]);
  for (int i = 0; i < threads; ++i) {
    Thread& t = g_threads[i];
    t.tid.x = i;
    getcontext(&t.ctx);
    t.ctx.uc_stack.ss_sp = g_stacks[i].get();
    t.ctx.uc_stack.ss_size = kStack;
    t.ctx.uc_link = nullptr;
    makecontext(&t.ctx, entry, 0);
  }
  for (;;) {
    for (auto& t : g_threads)
      if (!t.done && t.op == Op::none) {
        g_cur = &t;
        swapcontext(&g_sched, &t.ctx);
      }
    bool released = false;
    for (int w = 0; w < threads / 32; ++w) {
      Thread* lanes = &g_threads[w * 32];
      int at_warp_op = 0;
      for (int l = 0; l < 32; ++l) at_warp_op += lanes[l].op != Op::none && lanes[l].op != Op::sync && !lanes[l].done;
      if (at_warp_op == 32) {
        execute_warp(lanes);
        released = true;
      } else if (at_warp_op > 0) {
        die("warp divergence: " + std::to_string(at_warp_op) + " lanes at a collective, the others elsewhere");
      }
    }
    if (released) continue;
    int alive = 0, at_sync = 0;
    for (auto& t : g_threads) {
      alive += !t.done;
      at_sync += !t.done && t.op == Op::sync;
    }
    if (alive == 0) break;
    if (at_sync != alive) die("deadlock");
    for (auto& t : g_threads)
      if (!t.done) t.op = Op::none;
  }
}
}  // namespace emu

#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::block_idx())
inline void __syncthreads() { ::emu::yield_op(::emu::Op::sync); }
inline float __shfl_xor_sync(unsigned, float v, int mask) {
  float out;
  emu::g_cur->shfl_val = v;
  emu::g_cur->shfl_mask = mask;
  emu::g_cur->shfl_out = &out;
  emu::yield_op(emu::Op::shfl);
  return out;
}

// ------------------------------------------------------------------ the PTX helpers, emulated
namespace eaglesim::kernels::verify {
inline unsigned smem_addr(const void* p) {
  const std::ptrdiff_t off = static_cast<const unsigned char*>(p) - emu::g_smem.data();
  if (off < 0 || static_cast<std::size_t>(off) > emu::g_smem.size()) emu::die("smem_addr of a non-shared pointer");
  return static_cast<unsigned>(off);
}
inline void cp_async_16(unsigned dst, const void* src, bool full) {
  if (dst % 16 || dst + 16 > emu::g_smem.size()) emu::die("cp.async destination misaligned or out of range");
  if (full) {
    const auto* s = static_cast<const unsigned char*>(src);
    if (reinterpret_cast<std::uintptr_t>(s) % 16) emu::die("cp.async source misaligned");
    bool ok = false;
    for (const auto& r : emu::g_global) ok = ok || (s >= r.p && s + 16 <= r.p + r.n);
    if (!ok) emu::die("cp.async reads outside every input buffer");
  }
  emu::g_cur->pending.push_back({dst, src, full ? 16 : 0});
}
inline void cp_async_commit() {
  emu::g_cur->groups.push_back(std::move(emu::g_cur->pending));
  emu::g_cur->pending.clear();
}
template <int N>
inline void cp_async_wait() {
  auto& q = emu::g_cur->groups;
  while (q.size() > static_cast<std::size_t>(N)) {
    for (const auto& c : q.front()) {
      if (c.bytes)
        std::memcpy(emu::g_smem.data() + c.dst, c.src, 16);
      else
        std::memset(emu::g_smem.data() + c.dst, 0, 16);
    }
    q.pop_front();
  }
}
inline void ldsm_x4(unsigned (&r)[4], unsigned addr) {
  emu::g_cur->ldsm_addr = addr;
  emu::g_cur->ldsm_out = r;
  emu::yield_op(emu::Op::ldsm);
}
inline void ldsm_x4_trans(unsigned (&r)[4], unsigned addr) {
  emu::g_cur->ldsm_addr = addr;
  emu::g_cur->ldsm_out = r;
  emu::yield_op(emu::Op::ldsm_t);
}
inline void mma_bf16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  emu::g_cur->mma_c = c;
  emu::g_cur->mma_a = a;
  emu::g_cur->mma_b0 = b0;
  emu::g_cur->mma_b1 = b1;
  emu::yield_op(emu::Op::mma);
}
inline float exp2_fast(float x) { return std::exp2(x); }
inline void allow_dependent_launch() {}
inline void wait_for_primary_grid() {}
}  // namespace eaglesim::kernels::verify

#include "verify_attention.cuh"
#include "verify_attention_reference.cuh"

// ------------------------------------------------------------------ launches on the emulator
// The same entry points as the CUDA build (upload/launch/reference), for the fake runtime of
// tools/verify_attention_fake_cudart.cpp; results are VerifyAttentionCheck codes.
namespace eaglesim::va_emulator {
using namespace eaglesim::cuda;
namespace kv = eaglesim::kernels::verify;

void add_global(const void* p, std::size_t n) { emu::g_global.push_back({static_cast<const unsigned char*>(p), n}); }
void remove_global(const void* p) {
  auto& g = emu::g_global;
  g.erase(std::remove_if(g.begin(), g.end(), [&](const emu::Range& r) { return r.p == p; }), g.end());
}

int launch(const VerifyAttentionParams& params, const VerifyAttentionPlan& plan, void* ws) {
  VerifyAttentionParams p = params;
  const auto check = resolve_verify_attention_params(plan.shape, p);
  if (check != VerifyAttentionCheck::ok) return static_cast<int>(check);
  if (ws == nullptr || plan.work.empty()) return static_cast<int>(VerifyAttentionCheck::invalid_value);
  const kv::DeviceArgs a = kv::make_device_args(p, plan, ws);
  std::function<void(const kv::DeviceArgs&)> k;
  using V = VerifyAttentionVariant;
  switch (plan.kernel.variant) {
    case V::gqa_d64_r16: k = kv::gqa_verify_kernel<64, 1>; break;
    case V::gqa_d64_r32: k = kv::gqa_verify_kernel<64, 2>; break;
    case V::gqa_d64_r64: k = kv::gqa_verify_kernel<64, 4>; break;
    case V::gqa_d128_r16: k = kv::gqa_verify_kernel<128, 1>; break;
    case V::gqa_d128_r32: k = kv::gqa_verify_kernel<128, 2>; break;
    case V::gqa_d128_r64: k = kv::gqa_verify_kernel<128, 4>; break;
    case V::mla_r16: k = kv::mla_verify_kernel<1>; break;
    case V::mla_r32: k = kv::mla_verify_kernel<2>; break;
  }
  // Blocks in reverse order: an order the kernels must not depend on.
  for (long long b = plan.grid_blocks() - 1; b >= 0; --b)
    emu::run_block(plan.kernel.threads, plan.kernel.smem_bytes, static_cast<unsigned>(b), [&] { k(a); });
  if (plan.combine.empty()) return 0;
  const kv::CombineArgs c = kv::make_combine_args(a, plan, ws);
  const int blocks = (c.rows + 8 / c.warps_per_row - 1) / (8 / c.warps_per_row);
  const int dv = plan.shape.head_dim_v;
  const int slices = kv::vcfg::combine_column_slices(dv);
  for (int y = slices - 1; y >= 0; --y)
    for (int b = 0; b < blocks; ++b) {
      emu::run_block(
          256, 0, b,
          [&] {
            if (dv == 64) kv::verify_combine_kernel<64>(c);
            else if (dv == 128) kv::verify_combine_kernel<128>(c);
            else kv::verify_combine_kernel<512>(c);
          },
          static_cast<unsigned>(y));
    }
  return 0;
}

int reference(const VerifyAttentionParams& params, const VerifyAttentionShape& s) {
  VerifyAttentionParams p = params;
  const auto check = resolve_verify_attention_params(s, p);
  if (check != VerifyAttentionCheck::ok) return static_cast<int>(check);
  const kv::ReferenceArgs a = kv::make_reference_args(p, s);
  const int blocks = s.batch * s.q_tokens * s.heads;
  for (int b = 0; b < blocks; ++b) emu::run_block(kv::kRefThreads, 0, b, [&] { kv::verify_attention_reference_kernel(a); });
  return 0;
}
}  // namespace eaglesim::va_emulator

#if !defined(EAGLESIM_VA_EMULATE_NO_MAIN)
namespace {
using namespace eaglesim::cuda;
using bf16 = __nv_bfloat16;

// ------------------------------------------------------------------ one check
std::uint16_t to_bf(float f) { return __float2bfloat16(f).x; }
double from_bf(std::uint16_t u) { return __bfloat162float(__nv_bfloat16{u}); }

struct Case {
  std::string name;
  VerifyAttentionShape shape;
  std::vector<std::int32_t> kv_len;
  AttentionMaskKind mask = AttentionMaskKind::chain;
  bool per_request = false;
  int chunk = 0;
};

bool run_case(const Case& cs, std::mt19937_64& rng) {
  const auto& s = cs.shape;
  const bool mla = s.kind == VerifyAttentionKind::mla;
  const int B = s.batch, T = s.q_tokens, H = s.heads, HK = s.kv_heads, DK = s.head_dim_qk, DV = s.head_dim_v;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_int_distribution<int> slack_d(0, 9);
  std::vector<std::int32_t> indptr(B + 1, 0);
  for (int r = 0; r < B; ++r) indptr[r + 1] = indptr[r] + cs.kv_len[r] + slack_d(rng);
  const long long total = indptr[B];
  const long long kstride = mla ? DK : static_cast<long long>(HK) * DK;
  const long long vstride = static_cast<long long>(HK) * DV;
  std::vector<std::uint16_t> q(static_cast<std::size_t>(B) * T * H * DK), k(total * kstride + 8),
      v(mla ? 8 : total * vstride + 8);
  for (auto& x : q) x = to_bf(2.f * u(rng));
  for (auto& x : k) x = 0x7fc0;  // slack between requests: NaN, never to be read
  for (auto& x : v) x = 0x7fc0;
  for (int r = 0; r < B; ++r)
    for (long long t = indptr[r]; t < indptr[r] + cs.kv_len[r]; ++t) {
      for (long long e = 0; e < kstride; ++e) k[t * kstride + e] = to_bf(u(rng));
      if (!mla)
        for (long long e = 0; e < vstride; ++e) v[t * vstride + e] = to_bf(u(rng));
    }
  std::vector<std::uint32_t> mask;
  if (cs.mask == AttentionMaskKind::tree) {
    for (int r = 0; r < (cs.per_request ? B : 1); ++r) {
      std::vector<int> parent(T);
      parent[0] = -1;
      for (int i = 1; i < T; ++i) parent[i] = std::uniform_int_distribution<int>(0, i - 1)(rng);
      const auto m = tree_mask_from_parents(parent);
      mask.insert(mask.end(), m.begin(), m.end());
    }
  }
  std::vector<std::uint16_t> out(static_cast<std::size_t>(B) * T * H * DV, 0x7fc0), out_ref(out.size(), 0x7fc0);

  // The double-precision reference on the bf16 inputs.
  std::vector<double> ref(out.size());
  const int G = H / HK;
  for (int r = 0; r < B; ++r)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h) {
        const int L = cs.kv_len[r], prefix = L - T, kvh = mla ? 0 : h / G;
        const std::uint32_t word = cs.mask == AttentionMaskKind::tree ? mask[(cs.per_request ? r * T : 0) + t]
                                   : t >= 31                   ? 0xffffffffu
                                                               : (2u << t) - 1u;
        const std::uint16_t* qr = &q[((static_cast<std::size_t>(r) * T + t) * H + h) * DK];
        std::vector<double> sc(L, -INFINITY);
        double mx = -INFINITY;
        for (int p = 0; p < L; ++p) {
          if (p >= prefix && !((word >> (p - prefix)) & 1u)) continue;
          const std::uint16_t* kr = &k[(indptr[r] + p) * kstride + (mla ? 0 : kvh * DK)];
          double d = 0;
          for (int e = 0; e < DK; ++e) d += from_bf(qr[e]) * from_bf(kr[e]);
          sc[p] = d / std::sqrt(static_cast<double>(DK));
          mx = std::max(mx, sc[p]);
        }
        double den = 0;
        std::vector<double> o(DV, 0.0);
        for (int p = 0; p < L; ++p) {
          if (sc[p] == -INFINITY) continue;
          const double e = std::exp(sc[p] - mx);
          den += e;
          for (int c = 0; c < DV; ++c)
            o[c] += e * (mla ? from_bf(k[(indptr[r] + p) * kstride + c]) : from_bf(v[(indptr[r] + p) * vstride + kvh * DV + c]));
        }
        for (int c = 0; c < DV; ++c) ref[((static_cast<std::size_t>(r) * T + t) * H + h) * DV + c] = o[c] / den;
      }

  VerifyAttentionParams p;
  p.q = q.data();
  p.k = k.data();
  p.v = mla ? nullptr : v.data();
  p.kv_indptr = indptr.data();
  p.kv_len = cs.kv_len.data();
  p.mask_kind = cs.mask;
  p.mask = mask.empty() ? nullptr : mask.data();
  p.mask_per_request = cs.per_request;
  emu::g_global.clear();
  eaglesim::va_emulator::add_global(k.data(), k.size() * 2);
  eaglesim::va_emulator::add_global(v.data(), v.size() * 2);
  eaglesim::va_emulator::add_global(q.data(), q.size() * 2);  // the MLA kernel copies Q by cp.async

  VerifyAttentionPlanOptions opt;
  opt.chunk_tokens = cs.chunk;
  const VerifyAttentionPlan plan = plan_verify_attention(s, cs.kv_len, {}, opt);
  std::vector<unsigned char> ws(plan.workspace_bytes, 0xff);
  std::memcpy(ws.data(), plan.metadata.data(), plan.metadata.size());
  p.out = out.data();
  if (eaglesim::va_emulator::launch(p, plan, ws.data()) != 0) emu::die("launch refused the params");
  p.out = out_ref.data();
  if (eaglesim::va_emulator::reference(p, s) != 0) emu::die("reference refused the params");

  auto err = [&](const std::vector<std::uint16_t>& got, int& nan) {
    double num = 0, den = 0;
    nan = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double g = from_bf(got[i]);
      if (std::isnan(g)) {
        ++nan;
        continue;
      }
      num += (g - ref[i]) * (g - ref[i]);
      den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
  };
  int nan_opt = 0, nan_ref = 0;
  const double e_opt = err(out, nan_opt), e_ref = err(out_ref, nan_ref);
  const bool ok = nan_opt == 0 && nan_ref == 0 && e_opt < 1e-2 && e_ref < 1e-2;
  std::printf("%-4s %-58s %-70s opt %.2e (nan %d) plain %.2e (nan %d)\n", ok ? "ok" : "FAIL", cs.name.c_str(),
              describe(plan).c_str(), e_opt, nan_opt, e_ref, nan_ref);
  return ok;
}
}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::mt19937_64 rng(20261130);
  std::vector<Case> cases;
  auto gqa = [](int batch, int q, int group, int kv_heads, int d) {
    VerifyAttentionShape s;
    s.batch = batch;
    s.q_tokens = q;
    s.kv_heads = kv_heads;
    s.heads = group * kv_heads;
    s.head_dim_qk = s.head_dim_v = d;
    return s;
  };
  auto mla = [](int batch, int q, int heads) {
    VerifyAttentionShape s;
    s.kind = VerifyAttentionKind::mla;
    s.batch = batch;
    s.q_tokens = q;
    s.heads = heads;
    s.kv_heads = 1;
    s.head_dim_qk = 576;
    s.head_dim_v = 512;
    return s;
  };
  auto add = [&](std::string name, VerifyAttentionShape s, std::vector<std::int32_t> kv, AttentionMaskKind m, bool per_req, int chunk) {
    cases.push_back({std::move(name), s, std::move(kv), m, per_req, chunk});
  };
  // GQA: every variant (rows 16/32/64 per block, D 64/128), forced splits so the combine runs and
  // split edges fall inside the draft tokens, kv not a multiple of the tile, kv below one tile.
  add("gqa g4 d128 q4 chain B2 split64", gqa(2, 4, 4, 2, 128), {200, 37}, AttentionMaskKind::chain, false, 64);
  add("gqa g8 d128 q4 tree B2 split64", gqa(2, 4, 8, 1, 128), {150, 70}, AttentionMaskKind::tree, true, 64);
  add("gqa g16 d64 q7 tree B1 split64 (2 row chunks)", gqa(1, 7, 16, 1, 64), {147}, AttentionMaskKind::tree, false, 64);
  add("gqa g1 d64 q1 decode B3", gqa(3, 1, 1, 2, 64), {90, 1, 64}, AttentionMaskKind::chain, false, 0);
  add("gqa g4 d64 q16 chain B1 (64 rows)", gqa(1, 16, 4, 1, 64), {99}, AttentionMaskKind::chain, false, 64);
  add("gqa g8 d128 q32 tree B1 (4 row chunks) split64", gqa(1, 32, 8, 1, 128), {130}, AttentionMaskKind::tree, false, 64);
  add("gqa g1 d128 q32 chain B2 (32 rows)", gqa(2, 32, 1, 2, 128), {33, 100}, AttentionMaskKind::chain, false, 0);
  // MLA: 16 and 32 rows per block, two row chunks, splits.
  add("mla h8 q1 decode B2 split64", mla(2, 1, 8), {140, 65}, AttentionMaskKind::chain, false, 64);
  add("mla h16 q4 tree B1 split64 (2 chunks)", mla(1, 4, 16), {100}, AttentionMaskKind::tree, false, 64);
  add("mla h8 q4 chain B2", mla(2, 4, 8), {70, 5}, AttentionMaskKind::chain, false, 0);
  // Many splits: the combine's warps per row (4 here) and its loads past the last split.
  add("gqa g4 d128 q1 decode B2 40 splits", gqa(2, 1, 4, 2, 128), {2530, 700}, AttentionMaskKind::chain, false, 64);
  add("gqa g4 d64 q4 tree B1 19 splits (2 warps/row)", gqa(1, 4, 4, 1, 64), {1200}, AttentionMaskKind::tree, false, 64);
  add("mla h8 q1 decode B1 21 splits", mla(1, 1, 8), {1300}, AttentionMaskKind::chain, false, 64);
  // Splits of 32 positions: every split ends inside a tile, and the draft tokens straddle one.
  add("gqa g4 d128 q4 tree B2 split32", gqa(2, 4, 4, 2, 128), {170, 45}, AttentionMaskKind::tree, true, 32);
  add("gqa g8 d64 q16 chain B1 split32 (2 row chunks)", gqa(1, 16, 8, 1, 64), {111}, AttentionMaskKind::chain, false, 32);
  add("mla h8 q4 tree B2 split32", mla(2, 4, 8), {150, 34}, AttentionMaskKind::tree, false, 32);
  // MLA's ring of 32-position slots: splits of an odd number of slots over several steps (the
  // ring wraps), a long unsplit request in two row chunks.
  add("mla h8 q4 tree B1 split352 (11 slots, ring wraps)", mla(1, 4, 8), {1000}, AttentionMaskKind::tree, false, 352);
  add("mla h16 q4 tree B2 unsplit (17 slots, 2 chunks)", mla(2, 4, 16), {530, 77}, AttentionMaskKind::tree, true, 1024);
  if (!quick) {
    add("mla h16 q7 tree B2 per-request split64", mla(2, 7, 16), {129, 40}, AttentionMaskKind::tree, true, 64);
    add("gqa g16 d128 q7 tree B3 per-request split64", gqa(3, 7, 16, 1, 128), {260, 9, 77}, AttentionMaskKind::tree, true, 64);
    add("gqa g4 d128 q16 tree B2 (64 rows) split128", gqa(2, 16, 4, 2, 128), {300, 140}, AttentionMaskKind::tree, false, 128);
  }
  int failed = 0;
  for (const auto& c : cases) failed += !run_case(c, rng);
  std::printf("%zu passed, %d failed\n", cases.size() - failed, failed);
  return failed ? 1 : 0;
}
#endif  // !EAGLESIM_VA_EMULATE_NO_MAIN
