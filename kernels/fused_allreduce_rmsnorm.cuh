#pragma once
// fused_allreduce_rmsnorm — one-shot allreduce + residual add + RMSNorm in one kernel.
//
// Purpose:      for a [tokens, hidden] activation x (this rank's partial sum):
//                 residual = residual + allreduce(x)          (written back, dtype T)
//                 normed   = residual * rsqrt(mean(residual^2) + eps) * weight
//               which is what every TP decoder layer does after its attention and MLP
//               allreduces. Unfused that is three kernels and two extra round trips through HBM.
// Key optimisations:
//   * one block per token row (rows round-robin over <= kMaxBlocks blocks): the row's sum of
//     squares is a block reduction, no grid-wide sync, a single cross-GPU barrier per block;
//   * the one-shot pull protocol of oneshot_allreduce.cuh (fused input copy, double-buffered
//     slots, fixed rank order): every rank gets a bitwise-identical residual and normed output;
//   * the norm uses the residual ROUNDED to T (as the unfused residual_add -> rmsnorm sequence
//     would), re-read by the thread that wrote it (no extra synchronisation needed).
// Use case:     the `fused` strategy: small decode/verify activations (a few tokens x hidden).
// Hardware:     P2P between all ranks; sm_70+.
//
// Registered slot layout: row t at t * row_units * 16 bytes (rows padded to whole 16-byte
// units, so the peer reads are always packed even when hidden*sizeof(T) % 16 != 0).
#include "ar_common.cuh"

namespace eaglesim::kernels {

// Sum over the block; every thread gets the result. Deterministic (fixed shuffle tree).
__device__ __forceinline__ float block_sum(float v, float* scratch /* >= 32 floats */) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from the previous row
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  v = lane < warps ? scratch[lane] : 0.f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

struct FusedRows {
  std::size_t tokens = 0;
  std::size_t hidden = 0;
  float eps = 1e-5f;
  bool aligned = false;  // all user pointers 16-byte aligned and hidden*sizeof(T) % 16 == 0
};

// Residual add + RMSNorm of one row whose reduced sum is produced by `sum_unit(u)`.
template <typename T, typename SumUnit>
__device__ __forceinline__ void residual_rmsnorm_row(const FusedRows& f, std::size_t row, T* residual,
                                                     const T* weight, T* normed, float* scratch,
                                                     SumUnit sum_unit) {
  constexpr int E = Pack<T>::kElems;
  const std::size_t row_units = units_of<T>(f.hidden);
  T* res_row = residual + row * f.hidden;
  T* out_row = normed + row * f.hidden;
  float sq = 0.f;
  for (std::size_t u = threadIdx.x; u < row_units; u += blockDim.x) {
    const Pack<T> s = sum_unit(u);
    const Pack<T> old = load_user<T>(res_row, u, f.hidden, f.aligned);
    Pack<T> next;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      next.v[i] = Elem<T>::from_f(Elem<T>::to_f(old.v[i]) + Elem<T>::to_f(s.v[i]));
      const float x = Elem<T>::to_f(next.v[i]);
      sq += u * E + i < f.hidden ? x * x : 0.f;
    }
    store_user<T>(res_row, u, f.hidden, f.aligned, next);
  }
  const float inv_rms = rsqrtf(block_sum(sq, scratch) / static_cast<float>(f.hidden) + f.eps);
  for (std::size_t u = threadIdx.x; u < row_units; u += blockDim.x) {
    const Pack<T> x = load_user<T>(res_row, u, f.hidden, f.aligned);  // this thread's own writes
    const Pack<T> w = load_user<T>(weight, u, f.hidden, f.aligned);
    Pack<T> y;
#pragma unroll
    for (int i = 0; i < E; ++i) y.v[i] = Elem<T>::from_f(Elem<T>::to_f(x.v[i]) * inv_rms * Elem<T>::to_f(w.v[i]));
    store_user<T>(out_row, u, f.hidden, f.aligned, y);
  }
}

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) fused_allreduce_rmsnorm(RankArgs a, const T* in, FusedRows f, T* residual,
                                                                    const T* weight, T* normed) {
  __shared__ float scratch[32];
  const uint32_t epoch = call_epoch(a);
  const std::size_t row_units = units_of<T>(f.hidden);
  const std::size_t row_bytes = row_units * 16;

  const char* slots[N];
#pragma unroll
  for (int r = 0; r < N; ++r) slots[r] = slot_of(a.buffers[r], a.slot_bytes, epoch);
  char* mine = slot_of(a.buffers[a.rank], a.slot_bytes, epoch);

  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x)
    for (std::size_t u = threadIdx.x; u < row_units; u += blockDim.x)
      store_reg<T>(mine + row * row_bytes, u, load_user<T>(in + row * f.hidden, u, f.hidden, f.aligned));

  if (!block_barrier<N>(a, kPhaseStart, epoch)) return;

  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x) {
    const char* rows[N];
#pragma unroll
    for (int r = 0; r < N; ++r) rows[r] = slots[r] + row * row_bytes;
    residual_rmsnorm_row<T>(f, row, residual, weight, normed, scratch,
                            [&](std::size_t u) { return sum_fixed_order<T, N>(rows, u); });
  }
  finish_call(a, epoch);
}

// Register-resident variant for rows of at most U * blockDim.x units (hidden <= 16384 bf16 with
// U = 4): each thread keeps its units of the row (peer packs, old residual, weight) in
// registers, so the dependent-latency chain is: input copy -> barrier -> ONE round of peer
// loads -> block reduction -> store. The generic kernel above walks the row twice and re-reads
// the residual from memory, which costs ~3 us at 42 KiB (measured on 2 x H200).
// The weight is loaded before the barrier, while the peers are still arriving.
template <typename T, int N, int U>
__global__ void __launch_bounds__(kThreads) fused_allreduce_rmsnorm_regs(RankArgs a, const T* in, FusedRows f,
                                                                         T* residual, const T* weight, T* normed) {
  constexpr int E = Pack<T>::kElems;
  __shared__ float scratch[32];
  const uint32_t epoch = call_epoch(a);
  const std::size_t row_units = units_of<T>(f.hidden);
  const std::size_t row_bytes = row_units * 16;
  char* mine = slot_of(a.buffers[a.rank], a.slot_bytes, epoch);

  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x)
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (u < row_units)
        store_reg<T>(mine + row * row_bytes, u, load_user<T>(in + row * f.hidden, u, f.hidden, f.aligned));
    }
  Pack<T> w[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
    if (u < row_units) w[k] = load_user<T>(weight, u, f.hidden, f.aligned);
  }

  if (!block_barrier<N>(a, kPhaseStart, epoch)) return;

  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x) {
    T* res_row = residual + row * f.hidden;
    Pack<T> v[U][N], next[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (u < row_units) {
        next[k] = load_user<T>(res_row, u, f.hidden, f.aligned);  // old residual for now
#pragma unroll
        for (int r = 0; r < N; ++r)
          v[k][r] = load_reg<T>(slot_of(a.buffers[r], a.slot_bytes, epoch) + row * row_bytes, u);
      }
    }
    float sq = 0.f;
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (u < row_units) {
        float acc[E] = {};
#pragma unroll
        for (int r = 0; r < N; ++r) accumulate<T>(acc, v[k][r]);
        const Pack<T> s = to_pack<T>(acc);
#pragma unroll
        for (int i = 0; i < E; ++i) {
          next[k].v[i] = Elem<T>::from_f(Elem<T>::to_f(next[k].v[i]) + Elem<T>::to_f(s.v[i]));
          const float x = Elem<T>::to_f(next[k].v[i]);
          sq += x * x;  // padding elements are 0 + 0
        }
        store_user<T>(res_row, u, f.hidden, f.aligned, next[k]);
      }
    }
    const float inv_rms = rsqrtf(block_sum(sq, scratch) / static_cast<float>(f.hidden) + f.eps);
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (u < row_units) {
        Pack<T> y;
#pragma unroll
        for (int i = 0; i < E; ++i)
          y.v[i] = Elem<T>::from_f(Elem<T>::to_f(next[k].v[i]) * inv_rms * Elem<T>::to_f(w[k].v[i]));
        store_user<T>(normed + row * f.hidden, u, f.hidden, f.aligned, y);
      }
    }
  }
  finish_call(a, epoch);
}

// The unfused tail on its own: residual += sum; normed = rmsnorm(residual) * weight, where `sum`
// is an already reduced [tokens, hidden] array (used after the NCCL fallback of oversize calls).
template <typename T>
__global__ void __launch_bounds__(kThreads) residual_rmsnorm(const T* sum, FusedRows f, T* residual, const T* weight,
                                                             T* normed) {
  __shared__ float scratch[32];
  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x) {
    const T* sum_row = sum + row * f.hidden;
    residual_rmsnorm_row<T>(f, row, residual, weight, normed, scratch,
                            [&](std::size_t u) { return load_user<T>(sum_row, u, f.hidden, f.aligned); });
  }
}

}  // namespace eaglesim::kernels
