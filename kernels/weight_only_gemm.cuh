#pragma once
// Dense weight-only GEMM for few rows (1-256): y[m, n] = x[m, k] . dequant(W)^T with W in int4
// (group 32/128 bf16 scales), fp8 e4m3 (per-channel or 128x128-block fp32 scales) or bf16, x and
// y bf16, fp32 accumulation.
//
// Why it is the grouped kernel with one expert: a dense layer at these row counts is the same
// weight stream as one expert of moe_grouped_gemm.cuh, in the same packed layout (so one packer
// and one replay fill serve both). The stream-K schedule supplies the split-K that shapes with
// few 128-channel tiles need (Llama-3.1-70B TP8 o_proj: 64 tiles for 132 SMs): the k-chunks of
// all tiles are dealt evenly to a persistent grid, the pieces of a tile are summed in a fixed
// order by whichever CTA finishes the tile last (deterministic, no atomics on the output).
// Rows past 64 make further row blocks of each tile, which run side by side (L2 serves their
// shared weights); by then the op is compute-bound (int4 at m = 64 needs 256 FLOP per weight
// byte, above what mma.sync delivers per byte of HBM on an H200).
#include <cstdint>

#include <cuda_bf16.h>

#include "moe_grouped_gemm.cuh"

namespace eaglesim::kernels::moe {

// Parameters of a dense GEMM: no expert offsets, one "expert" of m rows.
inline GemmParams dense_gemm_params(WFormat f, const __nv_bfloat16* x, int m, const std::uint8_t* w,
                                    const std::uint8_t* scales, __nv_bfloat16* y, int n, int k, float* partials,
                                    int* counters, int max_items) {
  GemmParams p;
  p.x = x;
  p.expert_offsets = nullptr;
  p.dense_rows = m;
  p.w = w;
  p.scales = scales;
  p.y = y;
  p.experts = 1;
  p.n = n;
  p.k = k;
  p.w_expert_bytes = packed_weight_bytes(f, n, k);
  p.s_expert_bytes = packed_scale_bytes(f, n, k);
  p.partials = partials;
  p.counters = counters;
  p.max_items = max_items;
  return p;
}

// The dense kernel is moe_grouped_gemm_kernel<F, R> launched with dense_gemm_params: grid = the
// plan's persistent grid, kThreads threads, TileConfig<F, R>::smem_bytes(1) shared memory.

}  // namespace eaglesim::kernels::moe
