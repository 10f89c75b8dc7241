// Runs the grouped MoE / weight-only GEMM kernels' own source (kernels/moe_grouped_gemm.cuh and
// moe_gemm_reference.cuh) on the CPU against a double reference, for machines without a GPU.
// Every CUDA thread is a ucontext coroutine; a block's threads run one at a time up to their next
// barrier, warp collective or unsatisfied mbarrier wait. Collectives follow the PTX ISA:
// mma.sync m16n8k16 bf16 (fp32 accumulate), ldmatrix x4, shfl, syncwarp; mbarriers count arrivals
// and transaction bytes and flip phase; cp.async.bulk checks alignment and bounds, copies, then
// completes its bytes. Shared memory starts as NaN bytes, so a read of anything no copy wrote
// shows in the outputs. Blocks run one after another (the kernel never waits on another block).
// A block in which no thread can move is reported as a deadlock (e.g. a wrong tx count).
//
// A CMake target (ctest runs its --quick cases, label emulator); by hand (about a minute):
//   g++ -std=c++17 -O2 -Isrc -Ikernels -I/usr/local/cuda/include tools/moe_gemm_emulate.cpp \
//       src/cuda/ops/moe_gemm_plan.cpp src/cost/low_bit_gemm_kernel.cpp -lfmt -o /tmp/moe_emulate && /tmp/moe_emulate [--quick]
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

// The host API first: it brings cuda_runtime.h (uint4, float4, make_float4 for host code).
#include "cuda/ops/moe_gemm_plan.hpp"

// ------------------------------------------------------------------ CUDA surface for host C++
#define EAGLESIM_MOE_EMULATE 1
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static  // blocks run one after another, so a static is one block's

#include "emulated_bf16.hpp"
template <class T>
inline T min(T a, T b) {
  return a < b ? a : b;
}

namespace emu {

struct Dim {
  unsigned x = 0, y = 0, z = 0;
};
enum class Op { none, sync, syncwarp, shfl, ldsm, mma, spin };

struct Thread {
  ucontext_t ctx;
  Dim tid;
  bool done = false;
  Op op = Op::none;
  int shfl_val = 0, shfl_src = 0;
  bool shfl_up = false;
  int* shfl_out = nullptr;
  std::uint32_t ldsm_addr = 0;
  std::uint32_t* ldsm_out = nullptr;
  float* mma_d = nullptr;
  std::uint32_t mma_a[4] = {}, mma_b[2] = {};
};

struct Barrier {
  int count = 0, pending = 0;
  std::int64_t tx = 0;
  std::uint64_t completed = 0;
};

inline std::vector<Thread> g_threads;
inline std::vector<std::unique_ptr<char[]>> g_stacks;
inline std::vector<unsigned char> g_smem;
inline std::map<std::uint32_t, Barrier> g_bars;
inline Dim g_bid, g_grid, g_block;
inline Thread* g_cur = nullptr;
inline ucontext_t g_sched;
inline std::function<void()> g_body;
struct Range {
  const unsigned char* p;
  std::size_t n;
};
inline std::vector<Range> g_global;  // what bulk copies may read
inline std::int64_t g_bulk_copies = 0, g_mmas = 0;
constexpr std::size_t kStack = 128 * 1024;

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "emulator: block %u thread %u: %s\n", g_bid.x, g_cur ? g_cur->tid.x : 0u, what.c_str());
  std::exit(2);
}
inline void yield_op(Op op) {
  g_cur->op = op;
  swapcontext(&g_cur->ctx, &g_sched);
}
inline void entry() {
  g_body();
  g_cur->done = true;
  swapcontext(&g_cur->ctx, &g_sched);
}
inline unsigned char* smem_at(std::uint32_t addr, std::size_t bytes) {
  if (addr + bytes > g_smem.size()) die("shared access out of range");
  return g_smem.data() + addr;
}
inline std::uint32_t smem_word(std::uint32_t addr) {
  std::uint32_t v;
  std::memcpy(&v, smem_at(addr, 4), 4);
  return v;
}
inline bool in_global(const void* p, std::size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  for (const Range& r : g_global)
    if (c >= r.p && c + n <= r.p + r.n) return true;
  return false;
}
inline void complete_if_done(Barrier& b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.completed;
    b.pending = b.count;
  }
}
inline Barrier& bar(std::uint32_t addr) {
  auto it = g_bars.find(addr);
  if (it == g_bars.end()) die("mbarrier used before init");
  return it->second;
}

inline float bf(std::uint16_t h) { return __bfloat162float({h}); }
inline std::uint16_t lo16(std::uint32_t v) { return static_cast<std::uint16_t>(v & 0xffff); }
inline std::uint16_t hi16(std::uint32_t v) { return static_cast<std::uint16_t>(v >> 16); }

// Warp collectives, once every lane of the warp is at the same one.
inline void perform_warp(std::vector<Thread*>& lanes) {
  const Op op = lanes[0]->op;
  for (Thread* t : lanes)
    if (t->op != op) die("warp divergence at a collective");
  if (op == Op::shfl) {
    int vals[32];
    for (int l = 0; l < 32; ++l) vals[l] = lanes[l]->shfl_val;
    for (int l = 0; l < 32; ++l) {
      Thread* t = lanes[l];
      const int src = t->shfl_up ? (l >= t->shfl_src ? l - t->shfl_src : l) : (t->shfl_src & 31);
      *t->shfl_out = vals[src];
    }
  } else if (op == Op::ldsm) {
    // matrix m's 8 rows come from lanes 8m..8m+7; lane l gets row l/4, elements 2(l%4), 2(l%4)+1
    for (int l = 0; l < 32; ++l)
      for (int m = 0; m < 4; ++m) {
        const std::uint32_t row_addr = lanes[8 * m + l / 4]->ldsm_addr;
        if (row_addr % 16) die("ldmatrix row address not 16-byte aligned");
        lanes[l]->ldsm_out[m] = smem_word(row_addr + 4 * (l % 4));
      }
  } else if (op == Op::mma) {
    // m16n8k16 .row.col bf16 -> f32 (PTX ISA fragment layouts)
    float A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      for (int r = 0; r < 4; ++r)
        for (int e = 0; e < 2; ++e) {
          const std::uint32_t w = lanes[l]->mma_a[r];
          A[g + 8 * (r & 1)][2 * t + 8 * (r >> 1) + e] = bf(e ? hi16(w) : lo16(w));
        }
      for (int r = 0; r < 2; ++r)
        for (int e = 0; e < 2; ++e) {
          const std::uint32_t w = lanes[l]->mma_b[r];
          B[2 * t + e + 8 * r][g] = bf(e ? hi16(w) : lo16(w));
        }
      for (int j = 0; j < 4; ++j) C[g + 8 * (j >> 1)][2 * t + (j & 1)] = lanes[l]->mma_d[j];
    }
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      for (int j = 0; j < 4; ++j) {
        const int row = g + 8 * (j >> 1), col = 2 * t + (j & 1);
        double acc = C[row][col];
        for (int kk = 0; kk < 16; ++kk) acc += static_cast<double>(A[row][kk]) * B[kk][col];
        lanes[l]->mma_d[j] = static_cast<float>(acc);
      }
    }
    ++g_mmas;
  }
  for (Thread* t : lanes) t->op = Op::none;
}

// Runs one block to completion; dies on deadlock or divergence.
inline void run_block(const std::function<void()>& body, std::size_t smem_bytes) {
  const int n = static_cast<int>(g_block.x);
  g_threads.assign(n, Thread{});
  if (g_stacks.size() < static_cast<std::size_t>(n))
    for (std::size_t i = g_stacks.size(); i < static_cast<std::size_t>(n); ++i)
      g_stacks.emplace_back(new char[kStack]);
  g_smem.assign(smem_bytes, 0xff);  // NaN in bf16 and fp32
  g_bars.clear();
  g_body = body;
  for (int i = 0; i < n; ++i) {
    Thread& t = g_threads[i];
    t.tid.x = i;
    getcontext(&t.ctx);
    t.ctx.uc_stack.ss_sp = g_stacks[i].get();
    t.ctx.uc_stack.ss_size = kStack;
    t.ctx.uc_link = nullptr;
    makecontext(&t.ctx, entry, 0);
  }
  for (;;) {
    bool progress = false, all_done = true;
    for (int i = 0; i < n; ++i) {
      Thread& t = g_threads[i];
      if (t.done) continue;
      all_done = false;
      if (t.op != Op::none && t.op != Op::spin) continue;  // parked at a collective
      const bool was_spin = t.op == Op::spin;
      t.op = Op::none;
      g_cur = &t;
      swapcontext(&g_sched, &t.ctx);
      g_cur = nullptr;
      if (!(was_spin && t.op == Op::spin)) progress = true;
    }
    if (all_done) return;
    // warps whose live lanes are all at a collective
    for (int w = 0; w * 32 < n; ++w) {
      std::vector<Thread*> lanes;
      bool ready = true, any = false;
      for (int l = 0; l < 32; ++l) {
        Thread& t = g_threads[w * 32 + l];
        if (t.done) continue;
        any = true;
        if (t.op == Op::none || t.op == Op::spin || t.op == Op::sync) ready = false;
        lanes.push_back(&t);
      }
      if (!any || !ready) continue;
      if (lanes.size() != 32) die("warp collective with exited lanes");
      if (lanes[0]->op == Op::syncwarp) {
        for (Thread* t : lanes)
          if (t->op != Op::syncwarp) die("warp divergence at __syncwarp");
        for (Thread* t : lanes) t->op = Op::none;
      } else {
        perform_warp(lanes);
      }
      progress = true;
    }
    // block barrier
    bool all_sync = true, any_live = false;
    for (Thread& t : g_threads) {
      if (t.done) continue;
      any_live = true;
      if (t.op != Op::sync) all_sync = false;
    }
    if (any_live && all_sync) {
      for (Thread& t : g_threads) t.op = Op::none;
      progress = true;
    }
    if (!progress) die("deadlock: no thread can move (mbarrier never completes?)");
  }
}

}  // namespace emu

// The names the kernels use.
#define threadIdx (::emu::g_cur->tid)
#define blockIdx (::emu::g_bid)
#define gridDim (::emu::g_grid)
#define blockDim (::emu::g_block)
#define EAGLESIM_MOE_DYNAMIC_SMEM(name) unsigned char* name = ::emu::g_smem.data()

inline void __syncthreads() { emu::yield_op(emu::Op::sync); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::yield_op(emu::Op::syncwarp); }
inline int __shfl_up_sync(unsigned, int v, int d) {
  int out = 0;
  emu::g_cur->shfl_val = v;
  emu::g_cur->shfl_src = d;
  emu::g_cur->shfl_up = true;
  emu::g_cur->shfl_out = &out;
  emu::yield_op(emu::Op::shfl);
  return out;
}
inline int __shfl_sync(unsigned, int v, int src) {
  int out = 0;
  emu::g_cur->shfl_val = v;
  emu::g_cur->shfl_src = src;
  emu::g_cur->shfl_up = false;
  emu::g_cur->shfl_out = &out;
  emu::yield_op(emu::Op::shfl);
  return out;
}
inline void __threadfence() {}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
template <class T>
inline T __ldcg(const T* p) {
  return *p;
}
[[noreturn]] inline void __trap() { emu::die("__trap()"); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const std::uint64_t v = (static_cast<std::uint64_t>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}

namespace eaglesim::kernels::moe::detail {
inline std::uint32_t smem_u32(const void* p) {
  const auto* c = static_cast<const unsigned char*>(p);
  if (c < emu::g_smem.data() || c > emu::g_smem.data() + emu::g_smem.size()) emu::die("smem_u32 of a non-shared pointer");
  return static_cast<std::uint32_t>(c - emu::g_smem.data());
}
inline void fence_mbarrier_init() {}
inline void mbar_init(std::uint32_t b, std::uint32_t count) {
  if (b % 8) emu::die("mbarrier not 8-byte aligned");
  emu::smem_at(b, 8);
  emu::Barrier& x = emu::g_bars[b];
  x.count = x.pending = static_cast<int>(count);
  x.tx = 0;
  x.completed = 0;
}
inline void mbar_arrive_expect_tx(std::uint32_t b, std::uint32_t bytes) {
  emu::Barrier& x = emu::bar(b);
  x.tx += bytes;
  if (--x.pending < 0) emu::die("mbarrier over-arrived");
  emu::complete_if_done(x);
}
inline void mbar_arrive(std::uint32_t b) {
  emu::Barrier& x = emu::bar(b);
  if (--x.pending < 0) emu::die("mbarrier over-arrived");
  emu::complete_if_done(x);
}
// try_wait.parity(P) succeeds once the phase of parity P has completed: (completed & 1) != P.
inline void mbar_wait(std::uint32_t b, std::uint32_t parity) {
  for (;;) {
    emu::Barrier& x = emu::bar(b);
    if ((x.completed & 1u) != parity) return;
    emu::yield_op(emu::Op::spin);
  }
}
inline std::uint64_t l2_evict_first_policy() { return 0x1234; }
inline void bulk_load(std::uint32_t dst, const void* src, std::uint32_t bytes, std::uint32_t b) {
  if (dst % 16 || reinterpret_cast<std::uintptr_t>(src) % 16 || bytes % 16 || bytes == 0)
    emu::die("cp.async.bulk: address or size not a multiple of 16");
  if (!emu::in_global(src, bytes)) {
    std::string where;
    for (const emu::Range& r : emu::g_global)
      where += " [" + std::to_string(static_cast<const unsigned char*>(src) - r.p) + " of " + std::to_string(r.n) + "]";
    emu::die("cp.async.bulk of " + std::to_string(bytes) + " B reads outside every allocation:" + where);
  }
  std::memcpy(emu::smem_at(dst, bytes), src, bytes);
  emu::Barrier& x = emu::bar(b);
  x.tx -= bytes;
  if (x.tx < 0) emu::die("cp.async.bulk completed more bytes than expected");
  emu::complete_if_done(x);
  ++emu::g_bulk_copies;
}
inline void bulk_load_evict_first(std::uint32_t dst, const void* src, std::uint32_t bytes, std::uint32_t b,
                                  std::uint64_t) {
  bulk_load(dst, src, bytes, b);
}
inline void ldsm_x4(std::uint32_t addr, std::uint32_t (&r)[4]) {
  emu::g_cur->ldsm_addr = addr;
  emu::g_cur->ldsm_out = r;
  emu::yield_op(emu::Op::ldsm);
}
inline void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  for (int i = 0; i < 4; ++i) emu::g_cur->mma_a[i] = a[i];
  emu::g_cur->mma_b[0] = b0;
  emu::g_cur->mma_b[1] = b1;
  emu::g_cur->mma_d = d;
  emu::yield_op(emu::Op::mma);
}
template <int LUT>
inline std::uint32_t lop3(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t r = 0;
  for (int i = 0; i < 8; ++i)
    if ((LUT >> i) & 1) r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  return r;
}
inline std::uint32_t bf2_op(std::uint32_t a, std::uint32_t b, bool mul) {
  auto one = [&](std::uint16_t x, std::uint16_t y) {
    const float fx = emu::bf(x), fy = emu::bf(y);
    return __float2bfloat16(mul ? fx * fy : fx - fy).x;
  };
  return static_cast<std::uint32_t>(one(emu::lo16(a), emu::lo16(b))) |
         (static_cast<std::uint32_t>(one(emu::hi16(a), emu::hi16(b))) << 16);
}
inline std::uint32_t mul_hi_u32(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(a) * b) >> 32);
}
inline std::uint32_t bf2_lo2(std::uint32_t v) { return (v & 0xffffu) * 0x10001u; }
inline std::uint32_t bf2_hi2(std::uint32_t v) { return (v >> 16) * 0x10001u; }
inline std::uint32_t bf2_sub(std::uint32_t a, std::uint32_t b) { return bf2_op(a, b, false); }
inline std::uint32_t bf2_mul(std::uint32_t a, std::uint32_t b) { return bf2_op(a, b, true); }
// fma.rn.bf16x2 per the PTX ISA: a * b + c with one round-to-nearest-even to bf16, subnormal
// inputs and results kept (bf16 fma has no .ftz). The product of two bf16 values is exact in
// double; the sum is rounded once by double arithmetic, and its exact error (two-sum) breaks a
// tie the double sum may have landed on, so the final rounding is the one of the exact value.
inline std::uint16_t bf16_fma_rn(std::uint16_t a, std::uint16_t b, std::uint16_t c) {
  const double p = static_cast<double>(emu::bf(a)) * static_cast<double>(emu::bf(b));
  const double cc = emu::bf(c);
  if (!std::isfinite(p) || !std::isfinite(cc)) return __float2bfloat16(static_cast<float>(p + cc)).x;
  const double s = p + cc;
  const double bb = s - p, err = (p - (s - bb)) + (cc - bb);  // p + cc == s + err exactly
  if (s == 0.0) return __float2bfloat16(static_cast<float>(s)).x;
  const double mag = std::fabs(s);
  const int e = std::max(std::ilogb(mag), -126);  // bf16 binade (subnormals share -126's quantum)
  const double quantum = std::ldexp(1.0, e - 7);
  const double n = mag / quantum;  // exact: a power-of-two scaling
  double r = std::floor(n);
  const double frac = n - r;
  const double err_dir = s > 0 ? err : -err;  // the exact magnitude is mag + err_dir
  // |err| is at most half a double ulp of s, so it only decides where the double sum is a tie
  if (frac > 0.5 || (frac == 0.5 && (err_dir > 0 || (err_dir == 0 && std::fmod(r, 2.0) != 0)))) r += 1;
  const double v = r * quantum;
  if (v >= 0x1p128) return s > 0 ? 0x7f80 : 0xff80;
  const float f = static_cast<float>(s > 0 ? v : -v);  // exact: v is on the bf16 grid
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);
}
inline std::uint32_t bf2_fma(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  return static_cast<std::uint32_t>(bf16_fma_rn(emu::lo16(a), emu::lo16(b), emu::lo16(c))) |
         (static_cast<std::uint32_t>(bf16_fma_rn(emu::hi16(a), emu::hi16(b), emu::hi16(c))) << 16);
}
// One launch at a time: no previous kernel to wait for, none to let start.
inline void grid_dependency_wait() {}
inline void launch_dependents() {}
}  // namespace eaglesim::kernels::moe::detail

#include "moe_gemm_reference.cuh"
#include "moe_grouped_gemm.cuh"

// ------------------------------------------------------------------ cases

namespace {

namespace km = eaglesim::kernels::moe;
using eaglesim::cuda::GemmWeightFormat;
using eaglesim::cuda::GroupedGemmPlan;
using F = GemmWeightFormat;

std::uint16_t to_bf16(float f) { return __float2bfloat16(f).x; }

template <km::WFormat KF, int R, int V>
void launch_fast(const km::GemmParams& p, int grid, std::size_t smem) {
  emu::g_grid = {static_cast<unsigned>(grid), 1, 1};
  emu::g_block = {static_cast<unsigned>(km::kThreads), 1, 1};
  for (int b = 0; b < grid; ++b) {
    emu::g_bid = {static_cast<unsigned>(b), 0, 0};
    emu::run_block([&] { km::moe_grouped_gemm_kernel<KF, R, V>(p); }, smem);
  }
}

template <km::WFormat KF, int R, int V>
void launch_if(int v, const km::GemmParams& p, int grid, std::size_t smem, bool& found) {
  if constexpr (km::variant_applies(KF, R, V)) {
    if (v == V) {
      launch_fast<KF, R, V>(p, grid, smem);
      found = true;
    }
  }
}

template <km::WFormat KF, int R, int... Vs>
void launch_variant(int v, const km::GemmParams& p, int grid, std::size_t smem, std::integer_sequence<int, Vs...>) {
  bool found = false;
  (launch_if<KF, R, Vs>(v, p, grid, smem, found), ...);
  if (!found) emu::die("no such kernel variant for this row tile");
}

template <km::WFormat KF>
void launch_fast_rows(int row_tile, int v, const km::GemmParams& p, int grid, std::size_t smem) {
  constexpr auto vs = std::make_integer_sequence<int, km::kVariantCount>{};
  switch (row_tile) {
    case 8: launch_variant<KF, 1>(v, p, grid, smem, vs); break;
    case 16: launch_variant<KF, 2>(v, p, grid, smem, vs); break;
    case 32: launch_variant<KF, 4>(v, p, grid, smem, vs); break;
    default: launch_variant<KF, 8>(v, p, grid, smem, vs); break;
  }
}

void launch_any(F f, int row_tile, int v, const km::GemmParams& p, int grid, std::size_t smem) {
  switch (f) {
    case F::bf16: launch_fast_rows<km::WFormat::bf16>(row_tile, v, p, grid, smem); break;
    case F::fp8_channel: launch_fast_rows<km::WFormat::fp8_channel>(row_tile, v, p, grid, smem); break;
    case F::fp8_block: launch_fast_rows<km::WFormat::fp8_block>(row_tile, v, p, grid, smem); break;
    case F::int4_g32: launch_fast_rows<km::WFormat::int4_g32>(row_tile, v, p, grid, smem); break;
    case F::int4_g128: launch_fast_rows<km::WFormat::int4_g128>(row_tile, v, p, grid, smem); break;
  }
}

template <km::WFormat KF>
void launch_ref_t(const km::GemmParams& p, int rows) {
  emu::g_grid = {static_cast<unsigned>((p.n + 127) / 128), static_cast<unsigned>(rows), 1};
  emu::g_block = {128, 1, 1};
  for (int y = 0; y < rows; ++y)
    for (unsigned x = 0; x < emu::g_grid.x; ++x) {
      emu::g_bid = {x, static_cast<unsigned>(y), 0};
      emu::run_block([&] { km::moe_gemm_reference_kernel<KF>(p); }, 16);
    }
}
void launch_ref(F f, const km::GemmParams& p, int rows) {
  switch (f) {
    case F::bf16: launch_ref_t<km::WFormat::bf16>(p, rows); break;
    case F::fp8_channel: launch_ref_t<km::WFormat::fp8_channel>(p, rows); break;
    case F::fp8_block: launch_ref_t<km::WFormat::fp8_block>(p, rows); break;
    case F::int4_g32: launch_ref_t<km::WFormat::int4_g32>(p, rows); break;
    case F::int4_g128: launch_ref_t<km::WFormat::int4_g128>(p, rows); break;
  }
}

struct Outcome {
  double rel = 0;
  long nan = 0;
};
Outcome compare(const std::vector<__nv_bfloat16>& y, const std::vector<double>& ref) {
  Outcome o;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = __bfloat162float(y[i]);
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

int g_failures = 0;

// One case's GEMM: format, shape, routing (expert e's rows are off[e] .. off[e + 1]; dense: one
// expert, no offsets), the emulated grid and whether the weights take only extreme values.
struct CaseShape {
  F f;
  int n, k;
  int E;
  std::vector<int> off;
  int rows;
  int grid;
  bool dense, extremes;
};

// The kernel's plan for the case, with the emulated grid.
GroupedGemmPlan case_plan(const CaseShape& cs, const std::vector<int>& counts, int rows_hint, int variant) {
  const int busiest = *std::max_element(counts.begin(), counts.end());
  eaglesim::cuda::GroupedGemmShape shape;
  shape.format = cs.f;
  shape.experts = cs.E;
  shape.n = cs.n;
  shape.k = cs.k;
  shape.max_rows = std::max(cs.rows, 1);
  shape.rows_per_expert = rows_hint > 0 ? rows_hint : std::max(busiest, 1);
  shape.variant = variant;
  shape.wgmma = 0;  // the stream-K kernel is what this emulates
  GroupedGemmPlan plan = eaglesim::cuda::plan_grouped_gemm(shape, (cs.grid + 1) / 2);  // partials for >= grid CTAs
  if (plan.grid < cs.grid) emu::die("plan grid below the emulated grid");
  plan.grid = cs.grid;
  return plan;
}

// Logical weights (what the host packer takes: weights, scales) and their exact values.
struct LogicalWeights {
  std::vector<std::uint8_t> lw, ls;
  std::vector<double> wv;
};

void random_bf16_weights(std::int64_t count, std::mt19937_64& rng, std::uniform_real_distribution<float>& u,
                         LogicalWeights& w) {
  auto& lw = w.lw;
  auto& wv = w.wv;
  lw.resize(count * 2);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint16_t h = to_bf16(0.05f * u(rng));
    std::memcpy(lw.data() + 2 * i, &h, 2);
    wv[i] = emu::bf(h);
  }
}

void random_fp8_weights(const CaseShape& cs, std::int64_t count, std::mt19937_64& rng,
                        std::uniform_real_distribution<float>& pos, LogicalWeights& w) {
  const F f = cs.f;
  const int E = cs.E, n = cs.n, k = cs.k;
  const bool extremes = cs.extremes;
  auto& lw = w.lw;
  auto& ls = w.ls;
  auto& wv = w.wv;
  const std::int64_t nb = (n + 127) / 128, kb = (k + 127) / 128;
  lw.resize(count);
  for (auto& b : lw) {
    if (extremes) {
      const std::uint8_t ends[] = {0x00, 0x80, 0x01, 0x07, 0x85, 0x7e, 0xfe};
      b = ends[rng() % 7];
    } else {
      do b = static_cast<std::uint8_t>(rng() >> 56);
      while ((b & 0x7f) == 0x7f);
    }
  }
  std::vector<float> sc(f == F::fp8_channel ? E * n : E * nb * kb);
  for (auto& c : sc) c = 1e-3f * pos(rng);
  ls.resize(sc.size() * 4);
  std::memcpy(ls.data(), sc.data(), ls.size());
  for (int e = 0; e < E; ++e)
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < k; ++c) {
        const std::int64_t i = (static_cast<std::int64_t>(e) * n + r) * k + c;
        const float s = f == F::fp8_channel ? sc[e * n + r] : sc[(e * nb + r / 128) * kb + c / 128];
        wv[i] = static_cast<double>(km::e4m3_to_float(lw[i])) * s;
      }
}

void random_int4_weights(const CaseShape& cs, std::int64_t count, std::mt19937_64& rng,
                         std::uniform_real_distribution<float>& pos, LogicalWeights& w) {
  const bool extremes = cs.extremes;
  auto& lw = w.lw;
  auto& ls = w.ls;
  auto& wv = w.wv;
  const int g = cs.f == F::int4_g32 ? 32 : 128;
  lw.resize(count / 2);
  for (auto& b : lw) {
    b = static_cast<std::uint8_t>(rng() >> 56);
    if (extremes) b = static_cast<std::uint8_t>(((b & 1) ? 0x0f : 0x00) | ((b & 2) ? 0xf0 : 0x00));
  }
  std::vector<std::uint16_t> sc(count / g);
  for (auto& c : sc) c = to_bf16(0.01f * pos(rng) * (extremes && (rng() & 1) ? -1.f : 1.f));
  ls.resize(sc.size() * 2);
  std::memcpy(ls.data(), sc.data(), ls.size());
  for (std::int64_t i = 0; i < count; ++i) {
    const int nib = (i % 2) ? (lw[i / 2] >> 4) : (lw[i / 2] & 15);
    wv[i] = (nib - 8) * static_cast<double>(emu::bf(sc[i / g]));
  }
}

// extremes: int4 nibbles only 0 and 15 (the decode's ends: -8 and +7) and scales of both signs;
// fp8 bytes only zero, subnormals and +-448.
LogicalWeights random_logical_weights(const CaseShape& cs, std::mt19937_64& rng,
                                      std::uniform_real_distribution<float>& u,
                                      std::uniform_real_distribution<float>& pos) {
  const F f = cs.f;
  const std::int64_t count = static_cast<std::int64_t>(cs.E) * cs.n * cs.k;
  LogicalWeights w;
  w.wv.resize(count);
  if (f == F::bf16) {
    random_bf16_weights(count, rng, u, w);
  } else if (f == F::fp8_channel || f == F::fp8_block) {
    random_fp8_weights(cs, count, rng, pos, w);
  } else {
    random_int4_weights(cs, count, rng, pos, w);
  }
  return w;
}

// The double reference of y: each row against its expert's exact weights.
std::vector<double> reference_output(const CaseShape& cs, const std::vector<__nv_bfloat16>& x,
                                     const std::vector<double>& wv) {
  const F f = cs.f;
  const int E = cs.E, n = cs.n, k = cs.k;
  const std::vector<int>& off = cs.off;
  std::vector<double> ref(static_cast<std::size_t>(cs.rows) * n);
  for (int e = 0; e < E; ++e)
    for (int r = off[e]; r < off[e + 1]; ++r)
      for (int c = 0; c < n; ++c) {
        double acc = 0;
        for (int kk = 0; kk < k; ++kk)
          acc += static_cast<double>(__bfloat162float(x[static_cast<std::size_t>(r) * k + kk])) *
                 wv[(static_cast<std::int64_t>(e) * n + c) * k + kk];
        if (f == F::fp8_channel) {
        }  // the channel scale is in wv already
        ref[static_cast<std::size_t>(r) * n + c] = acc;
      }
  return ref;
}

// The kernel's arguments over the case's host buffers.
km::GemmParams kernel_params(const CaseShape& cs, const GroupedGemmPlan& plan, const std::vector<__nv_bfloat16>& x,
                             std::vector<__nv_bfloat16>& y, const eaglesim::cuda::PackedGemmWeights& packed,
                             const std::vector<unsigned char>& scales, std::vector<unsigned char>& ws) {
  // 16-byte alignment of the vectors' storage is what the kernel needs for its bulk copies
  km::GemmParams p;
  p.x = x.data();
  p.expert_offsets = cs.dense ? nullptr : cs.off.data();
  p.dense_rows = cs.rows;
  p.w = packed.weights.data();
  p.scales = cs.f == F::bf16 ? nullptr : scales.data();
  p.y = y.data();
  p.experts = cs.E;
  p.n = cs.n;
  p.k = cs.k;
  p.w_expert_bytes = plan.weight_bytes_per_expert;
  p.s_expert_bytes = plan.scale_bytes_per_expert;
  p.counters = reinterpret_cast<int*>(ws.data());
  p.partials = reinterpret_cast<float*>(ws.data() + plan.counter_bytes);
  p.max_items = plan.max_items;
  return p;
}

// The kernel twice into a NaN-poisoned y: both outputs near the reference and bit-identical.
// Prints the case's line (after the second run, or the first that fails).
bool fast_kernel_ok(const CaseShape& cs, const GroupedGemmPlan& plan, const km::GemmParams& p,
                    std::vector<__nv_bfloat16>& y, const std::vector<double>& ref) {
  const F f = cs.f;
  std::vector<__nv_bfloat16> first;
  bool ok = true;
  for (int rep = 0; rep < 2; ++rep) {
    for (auto& v : y) v.x = 0xffff;
    launch_any(f, plan.row_tile, plan.kernel_variant, p, cs.grid, plan.smem_bytes);
    const Outcome o = compare(y, ref);
    if (o.nan || !(o.rel < 1e-2)) ok = false;
    if (rep == 0) first = y;
    else if (std::memcmp(first.data(), y.data(), y.size() * 2) != 0) ok = false;
    if (rep == 1 || !ok)
      std::printf("%-4s %-12s %-7s n=%5d k=%5d E=%2d rows=%4d grid=%3d %-22s rel=%.2e nan=%ld%s\n", ok ? "ok" : "FAIL",
                  eaglesim::cuda::to_string(f), cs.dense ? "dense" : "grouped", cs.n, cs.k, cs.E, cs.rows, cs.grid,
                  plan.variant.c_str(), o.rel, o.nan, cs.extremes ? " (extremes)" : "");
  }
  return ok;
}

// The kernel leaves its work-item counters at zero for the next launch.
bool counters_left_zero(const GroupedGemmPlan& plan, const std::vector<unsigned char>& ws) {
  for (std::size_t i = 0; i < plan.counter_bytes; ++i)
    if (ws[i]) {
      std::printf("FAIL counters not left zero\n");
      return false;
    }
  return true;
}

// The plain reference kernel into a NaN-poisoned y, against the double reference.
bool reference_kernel_ok(const CaseShape& cs, const km::GemmParams& p, std::vector<__nv_bfloat16>& y,
                         const std::vector<double>& ref) {
  for (auto& v : y) v.x = 0xffff;
  launch_ref(cs.f, p, cs.rows);
  const Outcome o = compare(y, ref);
  const bool rok = o.nan == 0 && o.rel < 1e-2;
  std::printf("%-4s   reference kernel rel=%.2e nan=%ld\n", rok ? "ok" : "FAIL", o.rel, o.nan);
  return rok;
}

// One case: random logical weights, host packer, the kernel through the emulator with `grid`
// CTAs (small, so items split across CTAs), the double reference.
// extremes: see random_logical_weights.
void run_case(F f, int n, int k, const std::vector<int>& counts, std::uint64_t seed, int grid, int rows_hint = 0,
              bool dense = false, bool with_reference = false, int variant = 0, bool extremes = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f), pos(0.5f, 1.5f);
  const int E = static_cast<int>(counts.size());
  std::vector<int> off(E + 1, 0);
  for (int e = 0; e < E; ++e) off[e + 1] = off[e] + counts[e];
  const int rows = off[E];
  const CaseShape cs{f, n, k, E, off, rows, grid, dense, extremes};
  const GroupedGemmPlan plan = case_plan(cs, counts, rows_hint, variant);

  const LogicalWeights w = random_logical_weights(cs, rng, u, pos);
  const auto packed =
      eaglesim::cuda::pack_grouped_weights(f, E, n, k, w.lw.data(), w.ls.empty() ? nullptr : w.ls.data());
  std::vector<__nv_bfloat16> x(static_cast<std::size_t>(rows) * k), y(static_cast<std::size_t>(rows) * n);
  for (auto& v : x) v = __float2bfloat16(u(rng));
  const std::vector<double> ref = reference_output(cs, x, w.wv);
  std::vector<unsigned char> ws(plan.workspace_bytes, 0);
  std::vector<unsigned char> scales = packed.scales;
  scales.resize(std::max<std::size_t>(scales.size(), 16));
  emu::g_global = {{reinterpret_cast<const unsigned char*>(x.data()), x.size() * 2},
                   {packed.weights.data(), packed.weights.size()},
                   {scales.data(), scales.size()}};
  const km::GemmParams p = kernel_params(cs, plan, x, y, packed, scales, ws);

  bool ok = fast_kernel_ok(cs, plan, p, y, ref);
  if (!counters_left_zero(plan, ws)) ok = false;
  if (with_reference) {
    const bool rok = reference_kernel_ok(cs, p, y, ref);
    ok = ok && rok;
  }
  if (!ok) ++g_failures;
  std::fflush(stdout);
}

// The int4 decode on its own, every nibble value at every position of a word, garbage in the
// other nibbles: register r, half e must be (u - 8) * 2^-56 exactly, and with a folded group
// scale (a negative one for the low row, a positive one for the high row) the bf16 rounding of
// (u - 8) * s * 2^-56. Also the fma emulation on the subnormal inputs the decode feeds it.
void check_int4_decode() {
  namespace d = km::detail;
  int bad = 0;
  if (d::bf2_fma(0x00010001u, d::kInt4Mul0, 0u) != 0x23802380u) ++bad;  // 2^-133 * 2^77 = 2^-56
  if (d::bf2_fma(0x00800080u, d::kInt4Mul4, 0u) != 0x25002500u) ++bad;  // 2^-126 * 2^73 = 2^-53
  if (bad) std::printf("FAIL bf16 fma on subnormal inputs\n");
  const std::uint16_t s_lo = 0xBC23, s_hi = 0x3F81;  // -0.00995..., 1.0078125
  const d::Int4Scale folded = d::int4_scale(static_cast<std::uint32_t>(s_hi) << 16 | s_lo);
  for (int pos = 0; pos < 8; ++pos)
    for (std::uint32_t u = 0; u < 16; ++u)
      for (std::uint32_t fill : {0x00000000u, 0xffffffffu, 0x5a5a5a5au}) {
        const int shift = 4 * pos;
        const std::uint32_t q = (fill & ~(0xfu << shift)) | (u << shift);
        std::uint32_t a[4], as[4];
        d::int4_step<false>(q, d::kInt4Unscaled, a);
        d::int4_step<false>(q, folded, as);
        const int r = pos % 4, e = pos / 4;
        const std::uint16_t got = e ? emu::hi16(a[r]) : emu::lo16(a[r]);
        const std::uint16_t got_s = e ? emu::hi16(as[r]) : emu::lo16(as[r]);
        const float want = (static_cast<int>(u) - 8) * 0x1p-56f;
        const float want_s = __bfloat162float(__float2bfloat16(want * emu::bf((r & 1) ? s_hi : s_lo)));
        if (emu::bf(got) != want || emu::bf(got_s) != want_s) {
          if (++bad <= 4)
            std::printf("FAIL int4 decode: word %08x nibble %d (=%u): %g, scaled %g\n", q, pos, u,
                        static_cast<double>(emu::bf(got)), static_cast<double>(emu::bf(got_s)));
        }
      }
  std::printf("%-4s int4 decode: 16 values x 8 nibble positions x 3 fills, unscaled and folded\n", bad ? "FAIL" : "ok");
  if (bad) ++g_failures;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const F all[] = {F::bf16, F::fp8_channel, F::fp8_block, F::int4_g32, F::int4_g128};
  std::uint64_t seed = 1;
  check_int4_decode();
  for (F f : {F::int4_g32, F::int4_g128, F::fp8_channel, F::fp8_block}) {
    // the decode's extreme values: every row tile (8 / 16 / 32 / 64 rows) and dense split-K
    run_case(f, 136, 512, {3, 0, 9, 1}, ++seed, 5, 0, false, false, 0, true);
    if (quick) continue;
    run_case(f, 136, 512, {0, 37, 2, 0, 70, 1}, ++seed, 7, 16, false, false, 0, true);
    run_case(f, 152, 256, {30, 17, 0, 25}, ++seed, 6, 0, false, false, 0, true);
    run_case(f, 40, 256, {64}, ++seed, 4, 0, true, false, 0, true);
    run_case(f, 256, 768, {1}, ++seed, 9, 0, true, false, 0, true);
  }
  for (F f : all) {
    // uneven rows with an empty expert, n not a multiple of 16 or of the tile; few CTAs: items split
    run_case(f, 200, 512, {3, 0, 9, 1}, ++seed, 5, 0, false, true);
    if (quick) continue;
    run_case(f, 136, 384, {0, 37, 2, 0, 70, 1}, ++seed, 7, 16);  // several row blocks per expert
    run_case(f, 64, 1024, {16, 8}, ++seed, 3);
    run_case(f, 40, 256, {64}, ++seed, 4, 0, true);  // dense (bf16 r64; int4 / fp8 several smaller items)
    run_case(f, 48, 256, {200}, ++seed, 6, 0, true);  // dense, 200 rows: many row items per channel tile
    run_case(f, 256, 768, {1}, ++seed, 9, 0, true);   // dense m=1, split-K over 9 CTAs
    run_case(f, 24, 128, {0, 0, 5}, ++seed, 1);       // one CTA does everything
    run_case(f, 152, 256, {30, 17, 0, 25}, ++seed, 6);  // r32
    run_case(f, 16, 128, {2, 1}, ++seed, 40);         // more CTAs than chunks
    std::vector<int> many(600);                       // more experts than threads: the block scan
    for (std::size_t e = 0; e < many.size(); ++e) many[e] = (e * 7919) % 5 == 0 ? 1 + e % 3 : 0;
    run_case(f, 32, 128, many, ++seed, 12);
  }
  // Every kernel variant at the row tiles it exists for (8 and 16): items split across CTAs,
  // partial last stages (k not a multiple of the stage), an empty expert, dense split-K.
  for (int v = 1; v < eaglesim::cuda::grouped_gemm_variant_count(); ++v) {
    std::printf("variant %s\n", eaglesim::cuda::grouped_gemm_variant_name(v));
    for (F f : all) {
      run_case(f, 200, 576 + (f == F::int4_g128 ? 64 : 0), {3, 0, 9, 1}, ++seed, 5, 0, false, false, v);
      if (quick) continue;
      run_case(f, 136, 384, {0, 7, 2, 0, 13, 1}, ++seed, 7, 16, false, false, v);  // r16, one row tile of two
      run_case(f, 256, 768, {1}, ++seed, 9, 0, true, false, v);                    // dense m=1, split-K
      run_case(f, 40, 1024, {16}, ++seed, 4, 0, true, false, v);                   // dense m=16
      run_case(f, 56, 576 + (f == F::int4_g128 ? 64 : 0), {64}, ++seed, 5, 0, true, false, v);  // r64, partial stage
      run_case(f, 40, 256, {45, 0, 20}, ++seed, 3, 0, false, false, v);            // r64 grouped
    }
  }
  std::printf("emulated: %lld bulk copies, %lld warp mma; %d failing case(s)\n",
              static_cast<long long>(emu::g_bulk_copies), static_cast<long long>(emu::g_mmas), g_failures);
  return g_failures ? 1 : 0;
}
