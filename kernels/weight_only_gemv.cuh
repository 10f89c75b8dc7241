#pragma once
// Dense weight-only GEMM for the few rows of a verify or decode step (m <= 16):
//   y[m, n] = x[m, k] . dequant(W)^T, W packed as in moe_gemm_layout.cuh (bf16, fp8, int4).
//
// Why a second dense kernel. At m <= 16 a dense projection of a TP-sharded model reads 0.3-6 MB
// of weights: its floor is 0.1-1.5 µs, so what it costs is latency, not bandwidth. The stream-K
// kernel (weight_only_gemm.cuh) pays a chain of latencies before its first multiply (barrier
// setup, a work-list scan, bulk copies issued by one producer warp, a stage's arrival) and one
// after it (fp32 partials through global memory, a counter, the last CTA's re-read), 6-16 µs per
// launch on an H200. This kernel is shaped like the batched GEMV kernels engines use for these
// row counts (TensorRT-LLM's weight-only batched GEMV, Marlin at few rows):
//  * every lane loads its A fragments straight from global memory (one 16-byte load per 512-byte
//    atom, perfectly coalesced: the packed atom is the fragment); a task is 64 B per lane (one
//    16-channel block over 256 k of int4, 128 k of fp8, 64 k of bf16) and a warp holds two, the
//    next one loading while it multiplies the current one;
//  * the first two tasks' loads are issued before anything else, so the DRAM latency overlaps
//    the activation copy: a CTA copies its k-slice of the activations to shared memory once
//    (cp.async, 16 B), for all of its channel blocks, and reads them with ldmatrix;
//  * tasks leave fp32 sums in shared memory; the parts of a block are summed in order, and the
//    k-slices of one block are the CTAs of one thread-block cluster (at most 8), summed through
//    distributed shared memory by cluster rank 0 in rank order: deterministic, no workspace, no
//    global round trip;
//  * with programmatic dependent launch the weights stream while the previous kernel finishes
//    (they do not depend on it); the activations are read after griddepcontrol.wait.
// Rows past m read a zero row, so one kernel serves every m <= 8R.
#include <cstdint>

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include "moe_grouped_gemm.cuh"

namespace eaglesim::kernels::moe {

struct GemvParams {
  const __nv_bfloat16* x = nullptr;  // [m][k]
  int m = 0;
  const std::uint8_t* w = nullptr;       // packed, one expert
  const std::uint8_t* scales = nullptr;  // packed (none for bf16)
  __nv_bfloat16* y = nullptr;            // [m][n]
  int n = 0, k = 0;
  int units_per_cta = 0;   // k-slice of one CTA, in units (the gridDim.x CTAs of a cluster cover k)
  int units_per_task = 0;  // a task: one 16-channel block over one part of the slice
  int parts = 0;           // tasks per block and slice
  int blocks_per_cta = 0;  // 16-channel blocks of one CTA: blockIdx.y * blocks_per_cta + j
};

namespace detail {

__device__ __forceinline__ uint4 ld_weights(const std::uint8_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ std::uint32_t ld_nc_u32(const void* p) {
  std::uint32_t v;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// The weights and scale words of one unit, as a lane holds them.
template <WFormat F>
struct GemvUnit {
  static constexpr int kLoads = kGemvUnitK / atom_k(F);  // 16-byte loads per lane
  uint4 w[kLoads];
  std::uint32_t s[2];  // int4: scale words (g32: groups 2u, 2u+1; g128: group u/2); fp8_block: the fp32 bits
};

template <WFormat F>
__device__ __forceinline__ void gemv_load_unit(const GemvParams& p, int block, int u, int lane, GemvUnit<F>& g) {
  constexpr int AK = atom_k(F);
  const std::uint8_t* base =
      p.w + (static_cast<std::int64_t>(block) * (p.k / AK) + static_cast<std::int64_t>(u) * (kGemvUnitK / AK)) *
                kAtomBytes +
      lane * 16;
#pragma unroll
  for (int j = 0; j < GemvUnit<F>::kLoads; ++j) g.w[j] = ld_weights(base + j * kAtomBytes);
  if constexpr (is_int4(F)) {
    constexpr int Gs = int4_group(F);
    const std::uint8_t* sb = p.scales + static_cast<std::int64_t>(block) * (p.k / Gs) * 32 + (lane >> 2) * 4;
    if constexpr (Gs == 32) {
      g.s[0] = ld_nc_u32(sb + (2 * u) * 32);
      g.s[1] = ld_nc_u32(sb + (2 * u + 1) * 32);
    } else {
      g.s[0] = ld_nc_u32(sb + (u / 2) * 32);
    }
  } else if constexpr (F == WFormat::fp8_block) {
    const std::int64_t idx = static_cast<std::int64_t>(block / 8) * ((p.k + 127) / 128) + u / 2;
    g.s[0] = ld_nc_u32(p.scales + idx * 4);
  }
}

// One unit's multiplies: 64 k, four k16 steps, R row tiles. xaddr[r]: this lane's ldmatrix
// address for row tile r at the unit (0-stride rows past m point at zeros).
template <WFormat F, int R>
__device__ __forceinline__ void gemv_unit(const GemvUnit<F>& g, const std::uint32_t (&xaddr)[R],
                                          const std::uint32_t (&xstep)[R], int ul, float (&acc)[R][4]) {
  std::uint32_t a[4][4];  // A fragments of the four steps
  if constexpr (F == WFormat::bf16) {
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      a[s][0] = g.w[s].x;
      a[s][1] = g.w[s].y;
      a[s][2] = g.w[s].z;
      a[s][3] = g.w[s].w;
    }
  } else if constexpr (is_fp8(F)) {
    std::uint32_t bias = 0x7B807B80u;  // 2^120
    if constexpr (F == WFormat::fp8_block) bias = bf16x2_bits(__uint_as_float(g.s[0]) * 0x1p120f);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      fp8_word(g.w[j].x, bias, a[2 * j][0], a[2 * j][1]);
      fp8_word(g.w[j].y, bias, a[2 * j][2], a[2 * j][3]);
      fp8_word(g.w[j].z, bias, a[2 * j + 1][0], a[2 * j + 1][1]);
      fp8_word(g.w[j].w, bias, a[2 * j + 1][2], a[2 * j + 1][3]);
    }
  } else {
    const Int4Scale s0 = int4_scale(g.s[0]);
    const Int4Scale s1 = int4_group(F) == 32 ? int4_scale(g.s[1]) : s0;
    int4_step(g.w[0].x, s0, a[0]);
    int4_step(g.w[0].y, s0, a[1]);
    int4_step(g.w[0].z, s1, a[2]);
    int4_step(g.w[0].w, s1, a[3]);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    std::uint32_t b[4], c[4];
    const std::uint32_t at = xaddr[r] + static_cast<std::uint32_t>(ul) * xstep[r];
    ldsm_x4(at, b);
    ldsm_x4(at + (xstep[r] ? 64u : 0u), c);
    mma_bf16(acc[r], a[0], b[0], b[1]);
    mma_bf16(acc[r], a[1], b[2], b[3]);
    mma_bf16(acc[r], a[2], c[0], c[1]);
    mma_bf16(acc[r], a[3], c[2], c[3]);
  }
}

template <WFormat F, int R>
__device__ __forceinline__ void gemv_store(const GemvParams& p, int block, int lane, const float (&tot)[R][4]) {
  const int ch_base = block * 16 + (lane >> 2);
  float s[2] = {1.f, 1.f};
  if constexpr (is_int4(F)) s[0] = s[1] = kInt4DecodeUnscale;
  if constexpr (F == WFormat::fp8_channel) {
    const float* sc = reinterpret_cast<const float*>(p.scales);
    s[0] = ch_base < p.n ? sc[ch_base] : 0.f;
    s[1] = ch_base + 8 < p.n ? sc[ch_base + 8] : 0.f;
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = 8 * r + 2 * (lane & 3) + (j & 1);
      const int ch = ch_base + 8 * (j >> 1);
      if (row < p.m && ch < p.n)
        p.y[static_cast<std::int64_t>(row) * p.n + ch] = __float2bfloat16(tot[r][j] * s[j >> 1]);
    }
  }
}

}  // namespace detail

// Grid: (split, ceil(n16 / blocks_per_cta)) with clusters of (split, 1, 1) when split > 1;
// blockDim: 32 x warps; dynamic shared memory: gemv_smem_bytes(m, R, ...). R: row tiles of 8
// (m <= 8R). Each warp runs tasks warp, warp + warps, ...; the weights of its next task load
// while it multiplies the current one (two register buffers), so a warp with several tasks
// streams instead of waiting out one DRAM latency per task.
template <WFormat F, int R, bool Pdl>
__global__ void __launch_bounds__(kGemvMaxWarps * 32) weight_only_gemv_kernel(const GemvParams params) {
  using namespace detail;
  constexpr int H = gemv_units_per_task(F);
  extern __shared__ __align__(128) unsigned char gemv_smem[];
  __shared__ __align__(16) uint4 s_zero[4];  // the row every ldmatrix address past m reads
  GemvParams p = params;  // p.m: rows of the current pass
  const int rows = p.m;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  const int split = static_cast<int>(gridDim.x), rank = static_cast<int>(blockIdx.x);
  const int n16 = (p.n + 15) / 16;
  const int b0 = static_cast<int>(blockIdx.y) * p.blocks_per_cta;
  const int nb = min(p.blocks_per_cta, n16 - b0);
  const int units = p.k / kGemvUnitK;
  const int c0 = rank * p.units_per_cta, c1 = min(units, c0 + p.units_per_cta);
  const int tasks = nb * p.parts;
  const int pitch = gemv_x_pitch(p.units_per_cta);
  float4* s_part = reinterpret_cast<float4*>(gemv_smem + gemv_partials_offset(8 * R, p.units_per_cta));

  // task t: block j = t / parts, units [ua, ub) of the slice
  auto task_units = [&](int t, int& j, int& ua, int& ub) {
    j = t / p.parts;
    ua = c0 + (t % p.parts) * p.units_per_task;
    ub = min(c1, ua + p.units_per_task);
  };
  auto load_task = [&](int t, GemvUnit<F> (&g)[H]) {
    int j, ua, ub;
    task_units(t, j, ua, ub);
#pragma unroll
    for (int i = 0; i < H; ++i)
      if (ua + i < ub) gemv_load_unit<F>(p, b0 + j, ua + i, lane, g[i]);
  };

  if constexpr (Pdl) launch_dependents();
  if (threadIdx.x < 4) s_zero[threadIdx.x] = make_uint4(0, 0, 0, 0);
  const __nv_bfloat16* x_all = p.x;
  __nv_bfloat16* y_all = p.y;
  // More than 8R rows take several passes (the weights then come from L2); the plan keeps m <= 8R.
  for (int g0 = 0; g0 < rows; g0 += 8 * R) {
    p.m = min(8 * R, rows - g0);
    p.x = x_all + static_cast<std::int64_t>(g0) * p.k;
    p.y = y_all + static_cast<std::int64_t>(g0) * p.n;
    // The first two tasks' weights, before anything that waits.
    GemvUnit<F> ga[H], gb[H];
    if (warp < tasks) load_task(warp, ga);
    if (warp + warps < tasks) load_task(warp + warps, gb);
    if constexpr (Pdl)
      if (g0 == 0) grid_dependency_wait();  // x is the previous kernel's output

    // The slice's activations: m rows of (c1 - c0) units, 16 B per copy, shared by all blocks.
    const std::uint32_t xs = smem_u32(gemv_smem);
    {
      const int chunks = (c1 - c0) * (kGemvUnitK * 2 / 16);  // 16-byte copies per row
      for (int i = threadIdx.x; i < p.m * chunks; i += blockDim.x) {
        const int row = i / chunks, c = i % chunks;
        cp_async16(xs + row * pitch + c * 16, p.x + static_cast<std::int64_t>(row) * p.k + c0 * kGemvUnitK + c * 8);
      }
      cp_async_wait_all();
    }
    __syncthreads();

    std::uint32_t xaddr[R], xstep[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int row = 8 * r + (lane & 7);
      const bool live = row < p.m;
      xaddr[r] = live ? xs + row * pitch + (lane >> 3) * 16 : smem_u32(s_zero) + (lane >> 3) * 16;
      xstep[r] = live ? kGemvUnitK * 2 : 0;
    }
    // One task's multiplies; its fp32 sums go to the task's partial slot.
    auto run_task = [&](int t, const GemvUnit<F> (&g)[H]) {
      int j, ua, ub;
      task_units(t, j, ua, ub);
      float acc[R][4];
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = 0.f;
#pragma unroll
      for (int i = 0; i < H; ++i)
        if (ua + i < ub) gemv_unit<F, R>(g[i], xaddr, xstep, ua - c0 + i, acc);
#pragma unroll
      for (int r = 0; r < R; ++r) s_part[(t * R + r) * 32 + lane] = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    };
    for (int t = warp; t < tasks; t += 2 * warps) {
      run_task(t, ga);
      if (t + 2 * warps < tasks) load_task(t + 2 * warps, ga);
      if (t + warps < tasks) {
        run_task(t + warps, gb);
        if (t + 3 * warps < tasks) load_task(t + 3 * warps, gb);
      }
    }
    __syncthreads();

    // Per block: the parts in order into the block's first slot (warp j % warps), then the
    // cluster's CTAs in rank order (rank 0), then the store.
    for (int j = warp; j < nb; j += warps) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float4 t = s_part[((j * p.parts) * R + r) * 32 + lane];
        for (int q = 1; q < p.parts; ++q) {
          const float4 v = s_part[(((j * p.parts) + q) * R + r) * 32 + lane];
          t.x += v.x;
          t.y += v.y;
          t.z += v.z;
          t.w += v.w;
        }
        s_part[((j * p.parts) * R + r) * 32 + lane] = t;
      }
    }
    namespace cg = cooperative_groups;
    if (split > 1) cg::this_cluster().sync();  // every CTA's block sums are written
    if (rank == 0) {
      for (int j = warp; j < nb; j += warps) {
        float tot[R][4];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          float4 t = s_part[((j * p.parts) * R + r) * 32 + lane];
          for (int c = 1; c < split; ++c) {
            const float4 v = *cg::this_cluster().map_shared_rank(&s_part[((j * p.parts) * R + r) * 32 + lane], c);
            t.x += v.x;
            t.y += v.y;
            t.z += v.z;
            t.w += v.w;
          }
          tot[r][0] = t.x;
          tot[r][1] = t.y;
          tot[r][2] = t.z;
          tot[r][3] = t.w;
        }
        gemv_store<F, R>(p, b0 + j, lane, tot);
      }
    }
    if (split > 1) cg::this_cluster().sync();  // no CTA leaves while rank 0 reads its shared memory
    __syncthreads();  // the next pass overwrites the activations and the partial sums
  }
}

}  // namespace eaglesim::kernels::moe
