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
//     row's sum of squares is then combined across its C blocks, in the fixed order 0..C-1 so
//     that every block of the row and every rank compute the same bits, in one of two ways
//     (RowSync, chosen by the host; both give identical results):
//       - cluster (sm_90+, C <= 8): the row's C blocks form one thread-block cluster. Each block
//         leaves its partial in its shared memory, one hardware cluster barrier, then every warp
//         reads the C partials through distributed shared memory (DSMEM); a second, split
//         barrier (arrive after the reads, wait just before exit) keeps each block's shared
//         memory alive until its peers have read it. Why: the rendezvous below is a second
//         barrier through L2 (a store, then polled loads of the other blocks' words) and the
//         main step the split kernel has beyond the one-shot's sequence, which it trails by
//         about 1 us at 3 x 7168 (5.74-5.81 vs 4.77 us on 2 x H200; the barrier's own share is
//         an estimate, not measured alone); a cluster barrier is hardware within one GPC and
//         a DSMEM read goes SM to SM, without L2 polling.
//       - rendezvous (fallback: older GPUs, C > 8, or EAGLESIM_FUSED_CLUSTER=0): every block
//         publishes its partial (epoch-tagged 64-bit word in Signal::row_partial, never reset)
//         and polls the other C-1 words of its row. Needs all blocks co-resident: grid <= SM
//         count.
//     The host splits only while the grid stays small (<= 16 blocks, custom_comm.cu): a larger
//     grid already spreads the pull, and more blocks only add barrier and launch cost;
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
// Hardware:     P2P between all ranks; sm_70+ (the cluster row sync: sm_90+); the split kernel
//               relies on its whole grid being resident at once (the host caps grids at the SM
//               count and kMaxBlocks; a cluster launch schedules each cluster's blocks together).
//
// Registered slot layout: row t at t * row_units * 16 bytes (rows padded to whole 16-byte
// units, so the peer reads are always packed even when hidden*sizeof(T) % 16 != 0).
#include <cooperative_groups.h>

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

// How the C blocks of one split row combine their partial sums of squares (see the header).
enum class RowSync {
  rendezvous,  // epoch-tagged words in global memory (Signal::row_partial), polled: any sm_70+
  cluster,     // the row's blocks form one thread-block cluster: DSMEM + hardware barrier, sm_90+
};
// Portable cluster size (no opt-in attribute needed): the most chunks RowSync::cluster takes.
constexpr int kMaxClusterChunks = 8;

// RowSync::cluster: block `chunk` of a cluster of `chunks` blocks publishes (partial, ok) in its
// shared memory, and after the cluster barrier every warp reads the C values through DSMEM
// (lane c reads chunk c) and adds them with shuffles in the fixed order 0..C-1: the same
// additions, from 0.f, as the rendezvous loop, so both paths give the same bits. Returns false
// when any block of the row failed its cross-GPU barrier. Every thread of every block of the
// cluster must call it (barrier.cluster counts all of them: no block may leave early); the caller
// then owes cluster_exit_wait() before the block exits, so no peer's DSMEM read outlives `share`.
__device__ __forceinline__ bool cluster_row_total(float partial, bool ok, int chunks, float2* share,
                                                  float& total) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) *share = make_float2(partial, ok ? 1.f : 0.f);
  cluster.sync();  // arrive.release / wait.acquire: every block's `share` is written and visible
  const int lane = threadIdx.x % 32;
  float2 mine = make_float2(0.f, 1.f);
  if (lane < chunks) mine = *cluster.map_shared_rank(share, lane);
  cluster.barrier_arrive();  // this thread's DSMEM reads are done (values in registers)
  const bool all_ok = __all_sync(0xffffffffu, mine.y != 0.f);
  float sum = 0.f;
  for (int c = 0; c < chunks; ++c) sum += __shfl_sync(0xffffffffu, mine.x, c);  // fixed order
  total = sum;
  return all_ok;
#else
  (void)partial, (void)ok, (void)chunks, (void)share, (void)total;
  __trap();  // the host launches RowSync::cluster only on sm_90+ code (Group: ptxVersion check)
  return false;
#endif
}

// Second half of the split barrier of cluster_row_total: waits until every block of the cluster
// has read its peers' shared memory, so this block's may go away.
__device__ __forceinline__ void cluster_exit_wait() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  cooperative_groups::this_cluster().barrier_wait();
#endif
}

// Row-split variant for few long rows (see the header): each block owns one chunk of one row,
// at most U units per thread, all in registers. Sequence per block: input copy -> weight and
// old residual loads -> cross-GPU barrier -> ONE round of peer loads -> residual store + block
// partial of the sum of squares -> combine the row's C partials (fixed order; kSync says how)
// -> normed store.
// RowSync::cluster must be launched with cluster dimension {chunks, 1, 1} (so the cluster rank
// of a block is its chunk) and chunks <= kMaxClusterChunks; it never returns before both cluster
// barriers, also when the cross-GPU barrier failed (then it skips the data and the stores).
template <typename T, int N, int U, RowSync kSync>
__global__ void __launch_bounds__(kThreads) fused_allreduce_rmsnorm_split(RankArgs a, const T* in, FusedRows f,
                                                                          FusedSplit sp, T* residual,
                                                                          const T* weight, T* normed) {
  constexpr int E = Pack<T>::kElems;
  constexpr bool kCluster = kSync == RowSync::cluster;
  __shared__ float scratch[32];
  __shared__ float partials[kCluster ? 1 : kMaxBlocks];  // rendezvous: the row's C partials
  __shared__ float2 share;                                // cluster: (partial, ok) read by the peers
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

  const bool arrived = block_barrier<N>(a, kPhaseStart, epoch);
  if (!kCluster && !arrived) return;  // a cluster block must still take part in both barriers

  float sq = 0.f;
  if (arrived) {  // always true here for the rendezvous (the compiler drops the test)
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
  }
  const float partial = block_sum(sq, scratch);

  float total = 0.f;
  if constexpr (kCluster) {
    if (!cluster_row_total(partial, arrived, sp.chunks, &share, total)) {
      cluster_exit_wait();
      return;
    }
  } else {
    // Row rendezvous. Thread 0 publishes this block's partial; thread c fetches the partial of
    // the row's chunk c (its own block's straight from the register).
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
    for (int c = 0; c < sp.chunks; ++c) total += partials[c];  // fixed order: same bits everywhere
  }
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
  if constexpr (kCluster) cluster_exit_wait();
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
