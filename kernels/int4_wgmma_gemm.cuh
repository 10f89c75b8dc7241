#pragma once
// Dense int4 weight-only GEMM on Hopper's warpgroup MMA (wgmma), for row counts where the
// weight stream is no longer the limit: y[m, n] = x[m, k] . dequant(W)^T, x bf16 [m][k],
// W int4 (nibble - 8) times a bf16 scale per 32 or 128 weights along k, in the packed layout of
// moe_gemm_layout.cuh (the same bytes the stream-K and GEMV kernels read), fp32 accumulation,
// y bf16 [m][n].
//
// Why this shape. At 64-256 rows an int4 GEMM does 256-1024 FLOP per weight byte, past what
// mma.sync sustains per HBM byte: the tensor cores, not the weight stream, set the time, and
// only wgmma runs them at their rate. The weights are wgmma's A operand from registers (output
// channels are M, 64 per warpgroup; the rows are N, 64 or 128): each lane reads its A fragment
// straight from the packed atom (one 16-byte shared load per four k16 steps) and dequantises it
// with one shift, one lop3 (nibble | 0x4300: the bf16 128 + nibble), one subtraction of 136 and
// one multiply by the group scale per register, so a weight is converted once per CTA whatever
// the row count (the stream-K kernel converts it once per 16-row item). The rows are B, from
// shared memory in wgmma's K-major no-swizzle layout: 16-byte chunk kc of row r at
// (kc * NT + r) * 16, i.e. 8-row x 16-byte core matrices, LBO = NT * 16 between k-chunks, SBO =
// 128 between 8-row groups.
//
// CTA: three consumer warpgroups (192 output channels, warp w owns 16-channel block w) and one
// producer warp (13 warps: registers are allocated per warpgroup, so four warpgroups and a warp
// would leave 96 a thread, too few for 128 rows of fp32 accumulators). The producer moves a stage of 128 k: each block's packed weights and scales by
// bulk copy (contiguous runs in the packed layout), the rows by 16-byte cp.async whose
// completion arrives on the same mbarrier (cp.async.mbarrier.arrive.noinc). A warpgroup
// dequantises four k16 steps, issues their four wgmmas as one group and waits for it before the
// next four; the other two warpgroups' groups fill the tensor cores meanwhile.
// Work: output tiles (192 channels x NT rows) times `splits` ranges of k; one wave (grid <=
// SMs, one CTA per SM by shared memory). A tile split over k writes fp32 partials; its CTAs
// then each sum one slice of the tile over the splits (they are all resident: one wave) and the
// last to finish resets the tile's counters. Deterministic (fixed summation order).
// Requirements (the host plan checks them): k % 128 == 0, x 16-byte aligned rows (k % 8 == 0),
// compute capability 9.0 with sm_90a code (wgmma), grid <= SMs. The counters must be zero
// before the first launch; every launch leaves them zero.
#include <cstdint>

#include <cuda_bf16.h>

#include "int4_wgmma_layout.cuh"
#include "moe_grouped_gemm.cuh"  // the mbarrier / bulk-copy primitives and the packed layout

namespace eaglesim::kernels::int4wg {

struct Params {
  const __nv_bfloat16* x = nullptr;  // [m][k]
  const std::uint8_t* w = nullptr;   // packed int4 weights of the one expert
  const std::uint8_t* scales = nullptr;  // packed bf16 scales
  __nv_bfloat16* y = nullptr;        // [m][n]
  float* partials = nullptr;         // [tiles][splits][NT][kTileN] when splits > 1
  int* counters = nullptr;           // [tiles][2] when splits > 1
  int m = 0, n = 0, k = 0;
  int row_tiles = 1, splits = 1;
};

namespace detail {
using moe::detail::smem_u32;

__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, std::uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_arrive_noinc(std::uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving definitions of a wgmma operand across the asm around it.
__device__ __forceinline__ void fence_operand(std::uint32_t (&r)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_operand(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
__device__ __forceinline__ void consumer_sync() {  // the consumer warps only (the producer may have left)
  asm volatile("bar.sync 1, %0;" ::"n"(kConsumerThreads) : "memory");
}

// Shared-memory matrix descriptor, no swizzle: start, LBO (between 16-byte k-chunks), SBO
// (between 8-row groups), all in 16-byte units.
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<std::uint64_t>(lbo >> 4) << 16) |
         (static_cast<std::uint64_t>(sbo >> 4) << 32);
}

template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t desc_b,
                                         bool accumulate);
template <>
__device__ __forceinline__ void wgmma_rs<64>(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t desc_b,
                                              bool accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n\t}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(static_cast<std::uint32_t>(accumulate))
      : "memory");
}
template <>
__device__ __forceinline__ void wgmma_rs<128>(float (&d)[64], const std::uint32_t (&a)[4], std::uint64_t desc_b,
                                              bool accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n\t}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(static_cast<std::uint32_t>(accumulate))
      : "memory");
}

// One packed word (k16 step, nibble of register r element e at bit 4r + 16e) to the four bf16x2
// A-fragment registers: (nibble | 0x4300) is the bf16 128 + nibble, minus 136 is nibble - 8
// exactly, times the row's scale (registers 0, 2: row L/4; 1, 3: row L/4 + 8) rounds once, as
// bf16((nibble - 8) * scale).
__device__ __forceinline__ void dequant(std::uint32_t w, std::uint32_t s_lo, std::uint32_t s_hi,
                                        std::uint32_t (&a)[4]) {
  const __nv_bfloat162 bias = __halves2bfloat162(__float2bfloat16(136.f), __float2bfloat16(136.f));
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const std::uint32_t t = moe::detail::lop3<(0xf0 & 0xcc) | 0xaa>(w >> (4 * r), 0x000f000fu, 0x43004300u);
    __nv_bfloat162 v = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&t), bias);
    const std::uint32_t s = (r & 1) ? s_hi : s_lo;
    v = __hmul2(v, *reinterpret_cast<const __nv_bfloat162*>(&s));
    a[r] = *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

}  // namespace detail

template <int NT, int G>
__global__ void __launch_bounds__(kThreads, 1) int4_wgmma_gemm_kernel(const Params p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = Layout<NT, G>;
  using namespace detail;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const std::uint32_t smem0 = smem_u32(smem_raw);
  const std::uint32_t full0 = smem0 + L::kBarrierOff, empty0 = full0 + 8 * L::kStages;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  const int tiles = ((p.n + kTileN - 1) / kTileN) * p.row_tiles;
  const int split = blockIdx.x % p.splits, tile = blockIdx.x / p.splits;
  if (tile >= tiles) return;
  const int n_tile = tile / p.row_tiles, row_tile = tile % p.row_tiles;
  const int r0 = row_tile * NT, c0 = n_tile * kTileN;
  const int ks_total = p.k / kTK;
  const int ks0 = static_cast<int>(static_cast<long long>(split) * ks_total / p.splits);
  const int ks1 = static_cast<int>(static_cast<long long>(split + 1) * ks_total / p.splits);
  const int nst = ks1 - ks0;
  const int blocks_n = (p.n + 15) / 16;  // packed 16-channel blocks of the weight
  const int valid_blocks = min(kBlocks, blocks_n - c0 / 16);

  if (threadIdx.x == 0) {
    for (int s = 0; s < L::kStages; ++s) {
      moe::detail::mbar_init(full0 + 8 * s, 33);  // 32 producer lanes' cp.async arrivals + the expect_tx
      moe::detail::mbar_init(empty0 + 8 * s, kBlocks);
    }
    moe::detail::fence_mbarrier_init();
  }
  __syncthreads();

  if (warp == kBlocks) {
    // ---- producer
    const std::uint64_t policy = moe::detail::l2_evict_first_policy();
    const std::uint32_t sbytes = L::kScaleBlockBytes;
    for (int i = 0; i < nst; ++i) {
      const int slot = i % L::kStages;
      if (i >= L::kStages) moe::detail::mbar_wait(empty0 + 8 * slot, ((i / L::kStages) & 1) ^ 1u);
      const int kst = ks0 + i;
      const std::uint32_t stage = smem0 + slot * L::kStageBytes, bar = full0 + 8 * slot;
      if (lane == 0) moe::detail::mbar_arrive_expect_tx(bar, valid_blocks * (kBlockStageBytes + sbytes));
      __syncwarp();
      if (lane < valid_blocks) {
        const long long blk = c0 / 16 + lane;
        moe::detail::bulk_load_evict_first(
            stage + L::kWeightOff + lane * kBlockStageBytes,
            p.w + (blk * (p.k / 64) + static_cast<long long>(kst) * (kTK / 64)) * moe::kAtomBytes, kBlockStageBytes,
            bar, policy);
        moe::detail::bulk_load(stage + L::kScaleOff + lane * sbytes,
                               p.scales + (blk * (p.k / G) + static_cast<long long>(kst) * (kTK / G)) * 32, sbytes,
                               bar);
      }
      // Rows: 16-byte chunk kc of row r at (kc * NT + r) * 16. Lane pairs take the two chunks of
      // one 32-byte sector of a row (whole sectors from L2); a warp's 32 copies cover 16 rows.
      const __nv_bfloat16* xs = p.x + static_cast<long long>(kst) * kTK;
#pragma unroll 4
      for (int it = 0; it < NT * 16 / 32; ++it) {
        const int pair = it * 16 + lane / 2;
        const int r = pair % NT, kc = 2 * (pair / NT) + (lane & 1);
        const int row = r0 + r;
        const bool ok = row < p.m;
        cp_async_16(stage + L::kXOff + (kc * NT + r) * 16, xs + static_cast<long long>(ok ? row : 0) * p.k + kc * 8,
                    ok ? 16u : 0u);
      }
      cp_async_arrive_noinc(bar);
    }
    return;
  }

  // ---- consumers: warp w owns channels c0 + 16w .. + 15 (rows 16(w%4).. of its warpgroup's M).
  // Per half stage: wait for this warpgroup's previous wgmmas (their A registers are rewritten),
  // dequantise four k16 steps, then issue their four wgmmas as one group. The other warpgroups'
  // wgmmas keep the tensor cores busy while this one dequantises; no instruction other than the
  // wgmmas touches their operands between the fence and the commit (ptxas would serialise them).
  // The accumulators are never written by anything but wgmma (the first one overwrites them,
  // scale-d = 0), or ptxas serialises the wgmmas; the plan gives every split at least one stage.
  float acc[NT / 2];
  std::uint32_t a[4][4];
  for (int i = 0; i < nst; ++i) {
    const int slot = i % L::kStages;
    moe::detail::mbar_wait(full0 + 8 * slot, (i / L::kStages) & 1);
    fence_proxy_async_shared();  // the rows arrived through the generic proxy; wgmma reads them through the async one
    const unsigned char* stage = smem_raw + slot * L::kStageBytes;
    const std::uint32_t* sc = reinterpret_cast<const std::uint32_t*>(stage + L::kScaleOff + warp * L::kScaleBlockBytes);
    const std::uint32_t xbase = smem0 + slot * L::kStageBytes + L::kXOff;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 wv =
          *reinterpret_cast<const uint4*>(stage + L::kWeightOff + warp * kBlockStageBytes + h * moe::kAtomBytes + lane * 16);
      const std::uint32_t words[4] = {wv.x, wv.y, wv.z, wv.w};
      wgmma_wait<0>();  // this warpgroup's previous group is done: a[] is free, and so is the previous stage
      if (h == 0 && i > 0) {
        __syncwarp();
        if (lane == 0) moe::detail::mbar_arrive(empty0 + 8 * ((i - 1) % L::kStages));
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int s = 4 * h + q;
        const std::uint32_t sw = sc[(s * 16 / G) * 8 + lane / 4];
        dequant(words[q], __byte_perm(sw, sw, 0x1010), __byte_perm(sw, sw, 0x3232), a[q]);
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) fence_operand(a[q]);
      fence_operand(acc);
      wgmma_fence();
#pragma unroll
      for (int q = 0; q < 4; ++q)
        wgmma_rs<NT>(acc, a[q], smem_desc(xbase + 2 * (4 * h + q) * NT * 16, NT * 16, 128), i > 0 || h > 0 || q > 0);
      wgmma_commit();
      fence_operand(acc);
    }
  }
  wgmma_wait<0>();
  fence_operand(acc);

  // ---- epilogue. Thread (warp w, lane L) holds channels ch0 = c0 + 16w + L/4 and ch0 + 8, rows
  // r0 + 8j + 2(L%4) + {0, 1}: acc[4j + 0..1] for ch0, acc[4j + 2..3] for ch0 + 8.
  // fn(row in the tile, channel in the tile, value) for each accumulator of this thread.
  auto each_acc = [&](auto&& fn) {
#pragma unroll
    for (int j = 0; j < NT / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        fn(8 * j + 2 * (lane % 4) + (e & 1), 16 * warp + lane / 4 + 8 * (e >> 1), acc[4 * j + e]);
  };
  if (p.splits == 1) {
    each_acc([&](int rl, int cl, float v) {
      if (r0 + rl < p.m && c0 + cl < p.n) p.y[static_cast<long long>(r0 + rl) * p.n + c0 + cl] = __float2bfloat16(v);
    });
    return;
  }
  // Split over k: this split's fp32 partial, [NT][kTileN] per (tile, split).
  float* part = p.partials + (static_cast<long long>(tile) * p.splits + split) * NT * kTileN;
  each_acc([&](int rl, int cl, float v) { part[rl * kTileN + cl] = v; });
  __threadfence();
  consumer_sync();
  int* arrived = p.counters + 2 * tile;
  int* done = arrived + 1;
  if (threadIdx.x == 0) {
    atomicAdd(arrived, 1);
    // Every split of the tile is resident (one wave): wait for all of them.
    while (atomicAdd(arrived, 0) < p.splits) __nanosleep(64);
  }
  consumer_sync();
  __threadfence();
  // This CTA sums rows [split * NT / splits, (split + 1) * NT / splits) of the tile over the splits, in split order.
  const int rb = split * NT / p.splits, re = (split + 1) * NT / p.splits;
  const float* tile_parts = p.partials + static_cast<long long>(tile) * p.splits * NT * kTileN;
  for (int idx = threadIdx.x; idx < (re - rb) * kTileN; idx += kConsumerThreads) {
    const int rl = rb + idx / kTileN, cc = idx % kTileN;
    const int row = r0 + rl, ch = c0 + cc;
    // Loads eight splits at a time (independent), summed in split order.
    float sum = 0.f;
    for (int s0 = 0; s0 < p.splits; s0 += 8) {
      float v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        v[u] = s0 + u < p.splits ? __ldcg(tile_parts + (static_cast<long long>(s0 + u) * NT + rl) * kTileN + cc) : 0.f;
#pragma unroll
      for (int u = 0; u < 8; ++u) sum += v[u];
    }
    if (row < p.m && ch < p.n) p.y[static_cast<long long>(row) * p.n + ch] = __float2bfloat16(sum);
  }
  consumer_sync();
  if (threadIdx.x == 0) {
    // The last CTA of the tile to finish its slice resets both counters for the next launch.
    if (atomicAdd(done, 1) == p.splits - 1) {
      atomicExch(arrived, 0);
      atomicExch(done, 0);
    }
  }
#else
  __trap();  // built without sm_90a code: the host plan never launches it then
#endif
}

}  // namespace eaglesim::kernels::int4wg
