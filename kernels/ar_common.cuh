#pragma once
// Shared pieces of our allreduce kernels: the per-rank control block (Signal), the arguments
// every kernel gets (RankArgs), the cross-GPU flag barrier, and 16-byte packed load/store helpers
// that fall back to a scalar tail when a size or pointer does not fit the vector width.
//
// Protocol, once for all kernels (why it is safe without a reset between calls):
//  * Every rank owns one Signal in device memory that its peers can write (P2P or CUDA IPC).
//  * Signal::epoch[] counts the calls this rank has made. Every kernel reads epoch[blockIdx.x],
//    uses e = epoch + 1 for this call and, at its end, writes e into ALL kMaxBlocks entries it is
//    responsible for (j = blockIdx.x, blockIdx.x + gridDim.x, ...), so all entries stay equal
//    whatever grid the next call uses. The kernel increments it itself, so a captured CUDA graph
//    replays correctly (no host-side counter baked into the graph).
//  * Flags are never reset: block b of rank s announces phase p of call e by storing e into
//    flags[p][b][s] of every peer (st.release.sys), and waits until its own flags[p][b][r] >= e
//    for every r (ld.acquire.sys). Values only grow, so a fast rank that already announced call
//    e+1 still satisfies a slow peer waiting for e: no reset race between back-to-back calls.
//  * Data slots are double-buffered by the parity of e. A rank can be at most one call ahead of
//    any peer (it cannot leave call e before every peer reached call e, i.e. finished call e-1,
//    by stream order), so writing slot (e+1)&1 never touches the slot a slow peer still reads.
//    This saves the second (end) barrier round trip a single-buffered design needs.
//  * A block's data partition is the same on every rank (same grid, same count), so the barrier
//    is per block: block b only waits for the blocks b of its peers, which wrote exactly the
//    elements block b reads.
//  * The spin is bounded: after kAbortCheckSpins spins it polls a host-mapped abort word and the
//    %globaltimer; on abort or timeout the kernel records an error, raises the abort word so the
//    other ranks stop too, and exits. A dead peer costs `timeout_ns`, never a hang.
#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

namespace eaglesim::kernels {

constexpr int kMaxRanks = 8;
// Grid limit of every kernel: one flag row per block. 128 blocks of 512 threads keep one block
// per SM on an H100/H200 (132 SMs), so all blocks of a call are co-resident (needed: a block
// spins on the same-index block of its peers, and a row-split fused block on its row's other
// blocks). The host also caps every grid at the SM count (Group::limit in custom_comm.cu).
constexpr int kMaxBlocks = 128;
constexpr int kThreads = 512;
constexpr int kMaxWarps = kThreads / 32;  // warps per block at most
// Spins before the first (expensive, PCIe round trip) look at the host-mapped abort word.
constexpr unsigned kAbortCheckSpins = 1u << 12;

enum BarrierPhase : int { kPhaseStart = 0, kPhaseMid = 1, kPhases = 2 };

// Error codes written to RankArgs::error (host-mapped) when a kernel gives up.
enum AllreduceError : uint32_t { kErrNone = 0, kErrTimeout = 1, kErrAborted = 2 };

struct Signal {
  uint32_t flags[kPhases][kMaxBlocks][kMaxRanks];
  uint32_t epoch[kMaxBlocks];
  // Intra-GPU rendezvous of the row-split fused kernel (fused_allreduce_rmsnorm.cuh, RowSync::
  // rendezvous; the cluster variant does not use it): warp w of block b of call e publishes
  // (e << 32) | bits(its partial sum of squares) at [b * kMaxWarps + w] with ONE 64-bit store,
  // so a reader that sees epoch e also sees the value (no fence, no separate flag). Written and
  // read by this rank only; never reset (epochs only grow, and the next call on this GPU starts
  // after this one ended, by stream order, so one buffer suffices).
  unsigned long long row_partial[kMaxBlocks * kMaxWarps];
};

// Everything a kernel needs to find its peers. Passed by value (about 200 bytes of parameters).
struct RankArgs {
  char* buffers[kMaxRanks];      // registered data buffer of every rank (index = rank)
  Signal* signals[kMaxRanks];    // control block of every rank
  int rank = 0;
  std::size_t slot_bytes = 0;    // bytes of one parity slot inside a buffer
  volatile uint32_t* abort_word = nullptr;  // host-mapped, shared by the group
  uint32_t* error = nullptr;                // host-mapped, this rank's error code
  unsigned long long timeout_ns = 0;
};

// ------------------------------------------------------------------ memory-ordering primitives
__device__ __forceinline__ void st_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Single-word payloads between blocks of ONE GPU (no ordering of other data implied).
__device__ __forceinline__ void st_relaxed_gpu_u64(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed_gpu_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins until ready() holds. Returns false after an abort or a timeout (recording the error and
// raising the group's abort word, so that every other waiter of every rank stops too).
template <typename Ready>
__device__ __forceinline__ bool spin_until(Ready ready, const RankArgs& a) {
  unsigned spins = 0;
  unsigned long long start = 0;
  while (!ready()) {
    if (++spins % kAbortCheckSpins != 0) continue;
    if (*a.abort_word != 0) {
      atomicCAS(a.error, kErrNone, kErrAborted);
      return false;
    }
    unsigned long long now = global_timer_ns();
    if (start == 0) start = now;
    else if (now - start > a.timeout_ns) {
      atomicCAS(a.error, kErrNone, kErrTimeout);
      *a.abort_word = 1;  // let every other rank of the group stop waiting for us as well
      __threadfence_system();
      return false;
    }
  }
  return true;
}

// Waits until *flag >= epoch (wrap-safe). Returns false after an abort or a timeout.
__device__ __forceinline__ bool wait_flag(const uint32_t* flag, uint32_t epoch, const RankArgs& a) {
  return spin_until([&] { return static_cast<int32_t>(ld_acquire_sys(flag) - epoch) >= 0; }, a);
}

// Per-block barrier across ranks for phase `phase` of call `epoch`. Thread t < N signals peer t
// and waits for peer t. The leading __syncthreads orders the block's earlier writes (its data
// slot) before the release store; the trailing one publishes the acquire to the whole block.
// Split in two halves so that a kernel can issue loads of its own (weights, ...) between them,
// under the wait: block_arrive announces (the release covers everything before it, loads
// included, so such loads belong after it), block_wait waits for the peers.
template <int N>
__device__ __forceinline__ void block_arrive(const RankArgs& a, int phase, uint32_t epoch) {
  __syncthreads();
  if (threadIdx.x < N) st_release_sys(&a.signals[threadIdx.x]->flags[phase][blockIdx.x][a.rank], epoch);
}
template <int N>
__device__ __forceinline__ bool block_wait(const RankArgs& a, int phase, uint32_t epoch) {
  bool ok = true;
  if (threadIdx.x < N) ok = wait_flag(&a.signals[a.rank]->flags[phase][blockIdx.x][threadIdx.x], epoch, a);
  return __syncthreads_and(ok) != 0;
}
template <int N>
__device__ __forceinline__ bool block_barrier(const RankArgs& a, int phase, uint32_t epoch) {
  block_arrive<N>(a, phase, epoch);
  return block_wait<N>(a, phase, epoch);
}

// Barrier of a block whose data spans a whole ROW of `chunks` blocks (blocks first .. first +
// chunks - 1, each of which wrote one chunk of the row into every rank's buffer): like
// block_barrier, this block announces phase `phase` of call `epoch` to every rank (itself
// included, so its sibling blocks on this GPU see it too), then waits until all chunks x N
// (block, rank) pairs of the row have announced it. Thread i < chunks * N waits for one pair.
template <int N>
__device__ __forceinline__ bool row_barrier(const RankArgs& a, int phase, uint32_t epoch, std::size_t first,
                                            int chunks) {
  block_arrive<N>(a, phase, epoch);
  bool ok = true;
  for (int i = threadIdx.x; i < chunks * N && ok; i += blockDim.x)
    ok = wait_flag(&a.signals[a.rank]->flags[phase][first + i / N][i % N], epoch, a);
  return __syncthreads_and(ok) != 0;
}

__device__ __forceinline__ uint32_t call_epoch(const RankArgs& a) {
  return a.signals[a.rank]->epoch[blockIdx.x] + 1;
}

// Marks call `epoch` done for every epoch entry this block owns (see the protocol above). The
// lanes of warp 0 share the stores: a 1-block call owns all kMaxBlocks entries, and one thread
// storing them one after another is the prediction for why calls under 16 KiB (one block) took
// longer than those of 32 KiB and up (docs/results.md, "What limits one-shot latency").
// Every thread of the block read its own entry before the block's first barrier, so these
// stores, after it, cannot be seen by this call.
__device__ __forceinline__ void finish_call(const RankArgs& a, uint32_t epoch) {
  if (threadIdx.x >= 32) return;
  const int stride = 32 * static_cast<int>(gridDim.x);
  for (int j = static_cast<int>(blockIdx.x + threadIdx.x * gridDim.x); j < kMaxBlocks; j += stride)
    a.signals[a.rank]->epoch[j] = epoch;
}

__device__ __forceinline__ char* slot_of(char* buffer, std::size_t slot_bytes, uint32_t epoch) {
  return buffer + (epoch & 1u) * slot_bytes;
}

// ------------------------------------------------------------------ element types
template <typename T>
struct Elem;
template <>
struct Elem<__nv_bfloat16> {
  __device__ __forceinline__ static float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ __forceinline__ static __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Elem<__half> {
  __device__ __forceinline__ static float to_f(__half v) { return __half2float(v); }
  __device__ __forceinline__ static __half from_f(float v) { return __float2half_rn(v); }
};
template <>
struct Elem<float> {
  __device__ __forceinline__ static float to_f(float v) { return v; }
  __device__ __forceinline__ static float from_f(float v) { return v; }
};

// One 16-byte packet of T.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kElems = 16 / sizeof(T);
  T v[kElems];
};

template <typename T>
__host__ __device__ constexpr std::size_t units_of(std::size_t count) {
  return (count + Pack<T>::kElems - 1) / Pack<T>::kElems;
}

// Loads 16-byte unit `u` of a user array of `count` elements. Full, aligned units are one
// packed load; the last partial unit (or an unaligned array) is loaded element by element and
// padded with zeros, so any size works.
template <typename T>
__device__ __forceinline__ Pack<T> load_user(const T* p, std::size_t u, std::size_t count, bool aligned) {
  constexpr int E = Pack<T>::kElems;
  const std::size_t base = u * E;
  Pack<T> r;
  if (aligned && base + E <= count) {
    *reinterpret_cast<uint4*>(&r) = *reinterpret_cast<const uint4*>(p + base);
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) r.v[i] = base + i < count ? p[base + i] : Elem<T>::from_f(0.f);
  }
  return r;
}

template <typename T>
__device__ __forceinline__ void store_user(T* p, std::size_t u, std::size_t count, bool aligned, const Pack<T>& r) {
  constexpr int E = Pack<T>::kElems;
  const std::size_t base = u * E;
  if (aligned && base + E <= count) {
    *reinterpret_cast<uint4*>(p + base) = *reinterpret_cast<const uint4*>(&r);
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i)
      if (base + i < count) p[base + i] = r.v[i];
  }
}

// Registered buffers are 256-byte aligned and padded to whole units: always packed access.
// Peer data is loaded with .cg (L2 only) so that no stale L1 line of a previous call is reused.
template <typename T>
__device__ __forceinline__ Pack<T> load_reg(const char* base, std::size_t u) {
  Pack<T> r;
  *reinterpret_cast<uint4*>(&r) = __ldcg(reinterpret_cast<const uint4*>(base) + u);
  return r;
}
template <typename T>
__device__ __forceinline__ void store_reg(char* base, std::size_t u, const Pack<T>& r) {
  reinterpret_cast<uint4*>(base)[u] = *reinterpret_cast<const uint4*>(&r);
}

template <typename T>
__device__ __forceinline__ void accumulate(float (&acc)[Pack<T>::kElems], const Pack<T>& p) {
#pragma unroll
  for (int i = 0; i < Pack<T>::kElems; ++i) acc[i] += Elem<T>::to_f(p.v[i]);
}

template <typename T>
__device__ __forceinline__ Pack<T> to_pack(const float (&acc)[Pack<T>::kElems]) {
  Pack<T> r;
#pragma unroll
  for (int i = 0; i < Pack<T>::kElems; ++i) r.v[i] = Elem<T>::from_f(acc[i]);
  return r;
}

// Sum of N loaded packs in the fixed order 0..N-1, fp32, rounded to T once.
template <typename T, int N>
__device__ __forceinline__ Pack<T> sum_packs(const Pack<T> (&v)[N]) {
  float acc[Pack<T>::kElems] = {};
#pragma unroll
  for (int r = 0; r < N; ++r) accumulate<T>(acc, v[r]);
  return to_pack<T>(acc);
}

// Sum of the same unit over all N ranks' slots, in the fixed order 0..N-1 (not starting at
// self), so that every rank computes a bitwise-identical result. All N loads are issued before
// the first add so their latencies overlap.
template <typename T, int N>
__device__ __forceinline__ Pack<T> sum_fixed_order(const char* const (&slots)[N], std::size_t u) {
  Pack<T> v[N];
#pragma unroll
  for (int r = 0; r < N; ++r) v[r] = load_reg<T>(slots[r], u);
  return sum_packs<T, N>(v);
}

}  // namespace eaglesim::kernels
