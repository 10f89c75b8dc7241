#pragma once
// fused_allreduce_rmsnorm — one-shot allreduce + residual add + RMSNorm in one kernel.
//
// Purpose:      for a [tokens, hidden] activation x (this rank's partial sum):
//                 residual = residual + allreduce(x)          (written back, dtype T)
//                 normed   = residual * rsqrt(mean(residual^2) + eps) * weight
//               which is what every TP decoder layer does after its attention and MLP
//               allreduces. Unfused that is three kernels and two extra round trips through HBM.
// Key optimisations:
//   * few long rows (the decode/verify case, e.g. 3 x 7168): each row is SPLIT over C blocks
//     (fused_allreduce_rmsnorm_split). One block per row would leave the NVLink pull of a
//     14 KiB row to a single SM, whose outstanding remote loads cap it (+3 us over the plain
//     one-shot at 3 x 7168 on 2 x H200); split, the pull is spread like the one-shot's. The
//     row's sum of squares is then combined through an intra-GPU rendezvous: every block
//     publishes its partial (epoch-tagged 64-bit word in Signal::row_partial, never reset) and
//     reads all C partials of its row in the fixed order 0..C-1, so every block of the row and
//     every rank compute the same bits. Needs all blocks co-resident: grid <= SM count. The host
//     splits only while the grid stays small (<= 16 blocks, custom_comm.cu): a larger grid
//     already spreads the pull, and more blocks only add barrier and launch cost;
//   * many rows: one block per token row (rows round-robin over <= kMaxBlocks blocks): the row's
//     sum of squares is a block reduction, no intra-GPU rendezvous at all;
//   * a single cross-GPU barrier per block, the one-shot pull protocol of oneshot_allreduce.cuh
//     (fused input copy, double-buffered slots, fixed rank order): every rank gets a
//     bitwise-identical residual and normed output;
//   * rows of up to 4 x blockDim units stay in registers (peer packs, old residual, weight),
//     weight and old residual are loaded before the barrier, while the peers are arriving;
//   * the norm uses the residual ROUNDED to T (as the unfused residual_add -> rmsnorm sequence
//     would).
// Use case:     the `fused` strategy: small decode/verify activations (a few tokens x hidden).
//               residual_rmsnorm (bottom) is the plain unfused tail, used after the NCCL
//               fallback of oversize calls.
// Hardware:     P2P between all ranks; sm_70+; the split kernel relies on its whole grid being
//               resident at once (the host caps grids at the SM count and kMaxBlocks).
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

// Row split of fused_allreduce_rmsnorm_split: grid = tokens * chunks; block b handles chunk
// b % chunks of row b / chunks, i.e. row units [chunk * chunk_units, (chunk + 1) * chunk_units).
struct FusedSplit {
  int chunks = 1;
  std::size_t chunk_units = 0;
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

// Row-split variant for few long rows (see the header): each block owns one chunk of one row,
// at most U units per thread, all in registers. Sequence per block: input copy -> weight and
// old residual loads -> cross-GPU barrier -> ONE round of peer loads -> residual store + block
// partial of the sum of squares -> publish partial, gather the row's C partials (fixed order)
// -> normed store.
template <typename T, int N, int U>
__global__ void __launch_bounds__(kThreads) fused_allreduce_rmsnorm_split(RankArgs a, const T* in, FusedRows f,
                                                                          FusedSplit sp, T* residual,
                                                                          const T* weight, T* normed) {
  constexpr int E = Pack<T>::kElems;
  __shared__ float scratch[32];
  __shared__ float partials[kMaxBlocks];
  const uint32_t epoch = call_epoch(a);
  const std::size_t row_units = units_of<T>(f.hidden);
  const std::size_t row_bytes = row_units * 16;
  const std::size_t row = blockIdx.x / sp.chunks;
  const int chunk = static_cast<int>(blockIdx.x % sp.chunks);
  const std::size_t begin = chunk * sp.chunk_units;
  const std::size_t end = begin + sp.chunk_units < row_units ? begin + sp.chunk_units : row_units;
  const T* in_row = in + row * f.hidden;
  T* res_row = residual + row * f.hidden;
  char* mine = slot_of(a.buffers[a.rank], a.slot_bytes, epoch) + row * row_bytes;

  auto unit_of = [&](int k) { return begin + threadIdx.x + static_cast<std::size_t>(k) * blockDim.x; };
  Pack<T> w[U], next[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = unit_of(k);
    if (u < end) {
      store_reg<T>(mine, u, load_user<T>(in_row, u, f.hidden, f.aligned));
      w[k] = load_user<T>(weight, u, f.hidden, f.aligned);
      next[k] = load_user<T>(res_row, u, f.hidden, f.aligned);  // old residual for now
    }
  }

  if (!block_barrier<N>(a, kPhaseStart, epoch)) return;

  Pack<T> v[U][N];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = unit_of(k);
    if (u < end) {
#pragma unroll
      for (int r = 0; r < N; ++r)
        v[k][r] = load_reg<T>(slot_of(a.buffers[r], a.slot_bytes, epoch) + row * row_bytes, u);
    }
  }
  float sq = 0.f;
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = unit_of(k);
    if (u < end) {
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
  const float partial = block_sum(sq, scratch);

  // Row rendezvous. Thread 0 publishes this block's partial; thread c fetches the partial of the
  // row's chunk c (its own block's straight from the register).
  unsigned long long* words = a.signals[a.rank]->row_partial;
  const std::size_t row_first = row * sp.chunks;
  if (threadIdx.x == 0)
    st_relaxed_gpu_u64(&words[blockIdx.x], (static_cast<unsigned long long>(epoch) << 32) | __float_as_uint(partial));
  bool ok = true;
  for (int c = threadIdx.x; c < sp.chunks && ok; c += blockDim.x) {
    if (c == chunk) {
      partials[c] = partial;
      continue;
    }
    unsigned long long word = 0;
    ok = spin_until(
        [&] {
          word = ld_relaxed_gpu_u64(&words[row_first + c]);
          return static_cast<uint32_t>(word >> 32) == epoch;
        },
        a);
    partials[c] = __uint_as_float(static_cast<uint32_t>(word));
  }
  if (!__syncthreads_and(ok)) return;
  float total = 0.f;
  for (int c = 0; c < sp.chunks; ++c) total += partials[c];  // fixed order: same bits everywhere
  const float inv_rms = rsqrtf(total / static_cast<float>(f.hidden) + f.eps);
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = unit_of(k);
    if (u < end) {
      Pack<T> y;
#pragma unroll
      for (int i = 0; i < E; ++i)
        y.v[i] = Elem<T>::from_f(Elem<T>::to_f(next[k].v[i]) * inv_rms * Elem<T>::to_f(w[k].v[i]));
      store_user<T>(normed + row * f.hidden, u, f.hidden, f.aligned, y);
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
