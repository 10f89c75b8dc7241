#pragma once
// Verify/decode attention over a batch of requests with ragged KV lengths, chain or tree masks,
// GQA (head dim 64/128, any group size) and absorbed MLA (576/512, one latent KV head).
// bf16 in and out, fp32 accumulation, tensor cores through mma.sync m16n8k16 (sm_80+; built
// for sm_90). Shapes, layout and planning: src/cuda/ops/verify_attention_launch.hpp; design and floor
// arithmetic: docs/kernels/verify-attention.md.
//
// Work decomposition. The host plan cuts each request's KV into splits (long requests get
// more) and lists them longest first; block b serves split b / (kv_heads * row_chunks) for one
// KV head and one chunk of query rows. A KV head's query rows (group heads x query tokens) sit
// in the M dimension of the tiles, so each K/V byte is read from memory once per block; rows
// beyond one block's capacity go to further blocks of the same split that run next to it
// (their second read is served by L2). A split with siblings writes a normalised fp32 partial
// and its log2-sum-exp; a second, small kernel merges the siblings (launched programmatically
// dependent, so its launch overlaps the tail of the first). A request with one split writes
// bf16 directly and needs no merge.
//
// GQA block: 4 warps, 16 rows each x (64 / rows-warps) KV positions of every 64-position tile;
// each warp keeps its own online-softmax state for its positions and the warps merge once at
// the end. Q fragments stay in registers; K/V tiles arrive by 16-byte cp.async in a 3-stage
// ring (one barrier per tile), rows padded by 16 bytes so ldmatrix reads are bank-conflict-free.
// MLA block: 8 warps. QK^T is split four ways over the 576 columns (Q fragments of a quarter
// stay in registers) and two ways over positions; partial scores meet in shared memory, each
// warp turns a few rows into probabilities, and PV is split eight ways over the 512 output
// columns. The latent row serves as K and (first 512 columns) as V, read once, through a ring of
// five 32-position slots (two per step, three in flight).
#include <cmath>
#include <cstdint>

#if !defined(EAGLESIM_VA_EMULATE)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "grid_dependency.cuh"
#endif

#include "cuda/ops/verify_attention_launch.hpp"
#include "verify_attention_tensors.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "verify_attention.cuh needs sm_80 or newer (bf16 mma.sync, cp.async); build for sm_90"
#endif

namespace eaglesim::kernels::verify {

namespace vcfg = ::eaglesim::cuda::verify_attention_config;
using bf16 = __nv_bfloat16;
using WorkItem = ::eaglesim::cuda::VerifyAttentionWorkItem;
using CombineItem = ::eaglesim::cuda::VerifyAttentionCombineItem;

// What every block needs, by value in the parameter space.
struct DeviceArgs : AttentionTensors {
  const WorkItem* work;
  float* part_o;
  float* part_lse;
  int q_tokens, heads, kv_heads, group, rows_total, row_chunks;
  float scale_log2;  // softmax scale * log2(e): scores go straight into exp2
};

struct CombineArgs {
  const CombineItem* items;
  const float* part_o;
  const float* part_lse;
  bf16* out;
  long long out_token_stride;
  int q_tokens, heads, rows;
  int warps_per_row;  // 1, 2, 4 or 8 (combine_warps_per_row)
};

// ------------------------------------------------------------------ device helpers
// The PTX below is the whole of the kernels' contact with the hardware; tools/
// verify_attention_emulate.cpp supplies the same functions on the CPU (EAGLESIM_VA_EMULATE) to
// run these kernels' source against a double-precision reference without a GPU.
#if !defined(EAGLESIM_VA_EMULATE)
#define EAGLESIM_VA_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16-byte async copy global -> shared; with full == false nothing is read and zeros are stored.
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, bool full) {
  const int bytes = full ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// c += a * b for one 16x8x16 tile: a row-major 16x16 (4 regs), b 16x8 "col" (2 regs), fp32 c.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// 2^x on the special-function unit; 2^-inf = 0, which the masking relies on.
__device__ __forceinline__ float exp2_fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// Lets the dependent grid (the combine, or the stream's next kernel when that was launched with
// programmatic serialization) launch now; it still waits for this grid's completion
// (griddepcontrol.wait) before it reads anything this grid writes.
__device__ __forceinline__ void allow_dependent_launch() { ::eaglesim::kernels::allow_next_grid_launch(); }
__device__ __forceinline__ void wait_for_primary_grid() { ::eaglesim::kernels::wait_for_previous_grid(); }
#endif  // !EAGLESIM_VA_EMULATE

// The factor that rescales sums kept relative to 2^m to sums relative to 2^ref (ref finite or 0):
// 0 for sums that saw nothing (m = -inf), where m - ref alone would be NaN if ref were -inf too.
__device__ __forceinline__ float rescale_to(float m, float ref) { return m == -INFINITY ? 0.f : exp2_fast(m - ref); }

__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&v);
}

// Bit j of the word says whether this row's query token sees draft position j.
__device__ __forceinline__ unsigned row_mask_word(const DeviceArgs& a, int request, int token) {
  if (a.mask_tree) return __ldg(a.mask + (a.mask_per_request ? request * a.q_tokens : 0) + token);
  return token >= 31 ? 0xffffffffu : ((2u << token) - 1u);
}
// Whether tile t of a split [begin, end) holds prefix positions only: those are cache entries of
// earlier steps, which no kernel of this step writes, so they may load before the wait for the
// previous kernel (griddepcontrol.wait).
__device__ __forceinline__ bool prefix_tile(int begin, int end, int prefix, int t) {
  return min(end, begin + (t + 1) * vcfg::kTileKv) <= prefix;
}
// Position pos (relative to the request) for a row: inside this split and either in the prefix
// or a draft position the row's mask word admits.
__device__ __forceinline__ bool visible(int pos, int end, int prefix, unsigned word) {
  return pos < end && (pos < prefix || ((word >> ((pos - prefix) & 31)) & 1u));
}

// ------------------------------------------------------------------ GQA kernel
// D: head dim (K and V). WM: warps along rows (16 rows each); the other 4 / WM warps share
// the positions of each tile.
template <int D, int WM>
__global__ void __launch_bounds__(vcfg::kGqaThreads, vcfg::gqa_blocks_per_sm(D)) gqa_verify_kernel(const DeviceArgs a) {
  constexpr int THREADS = vcfg::kGqaThreads;
  constexpr int WARPS = THREADS / 32;
  constexpr int WN = WARPS / WM;
  constexpr int TILE = vcfg::kTileKv;
  constexpr int KW = TILE / WN;  // positions per warp per tile
  constexpr int KSUB = KW > 32 ? 32 : KW;  // positions per softmax step
  constexpr int NTS = KSUB / 8;  // score n-tiles per step
  constexpr int KS = D / 16;     // k-steps of QK^T
  constexpr int ON = D / 8;      // output n-tiles
  constexpr int PITCH = D + 8;   // bf16 row pitch in shared memory: 16 bytes of padding
  constexpr int STAGES = vcfg::kGqaStages;
  constexpr int TILE_ELEMS = TILE * PITCH;
  constexpr int CH = D / 8;      // 16-byte chunks per row
  constexpr int ROWS = 16 * WM;
  constexpr int OPITCH = D + 8;  // fp32 merge rows: quads of 8 rows land on distinct banks
  static_assert(WARPS % WM == 0 && KW >= 16 && KW % 16 == 0, "warp layout");
  static_assert(static_cast<std::size_t>(STAGES) * 2 * TILE_ELEMS * 2 == vcfg::gqa_smem_bytes(D), "smem size");
  static_assert(ROWS * PITCH <= 2 * TILE_ELEMS, "Q staging fits in one stage");
  static_assert(static_cast<std::size_t>(WARPS * 16 * OPITCH + 2 * WARPS * 16) * 4 <= vcfg::gqa_smem_bytes(D),
                "merge buffers fit");
  static_assert((TILE * CH) % THREADS == 0, "tile copy divides evenly");

  EAGLESIM_VA_DYNAMIC_SMEM(smem_raw);
  bf16* smem = reinterpret_cast<bf16*>(smem_raw);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp / WN, wn = warp % WN;
  const int g = lane >> 2, c4 = lane & 3;

  const int per_item = a.kv_heads * a.row_chunks;
  const int item = blockIdx.x / per_item;
  const int rem = blockIdx.x - item * per_item;
  const int head = rem / a.row_chunks;
  const int chunk = rem - head * a.row_chunks;
  const WorkItem w = a.work[item];

  const int req = w.request;
  const long long kv0 = a.kv_indptr[req];
  const int prefix = a.kv_len[req] - a.q_tokens;
  const int begin = w.kv_begin, end = w.kv_end;
  const int ntiles = (end - begin + TILE - 1) / TILE;
  const int row0 = chunk * ROWS;
  const int rows_here = min(ROWS, a.rows_total - row0);
  const bf16* kbase = a.k + kv0 * a.k_token_stride + head * a.k_head_stride;
  const bf16* vbase = a.v + kv0 * a.v_token_stride + head * a.v_head_stride;

  // Thread tid copies chunk tid % CH of rows tid / CH + i * ROW_STEP: one shared and two global
  // bases per thread, the rest immediate offsets and one stride step per row.
  constexpr int ROW_STEP = THREADS / CH;
  static_assert(THREADS % CH == 0, "a thread keeps its chunk column");
  const int ld_row = tid / CH, ld_col = (tid % CH) * 8;
  const unsigned ld_smem = smem_addr(smem + ld_row * PITCH + ld_col);
  const bf16* ld_k = kbase + ld_col;
  const bf16* ld_v = vbase + ld_col;
  auto load_tile = [&](int t) {
    const unsigned ks = ld_smem + (t % STAGES) * (2 * TILE_ELEMS * 2);
    const int p0 = begin + t * TILE + ld_row;
#pragma unroll
    for (int i = 0; i < TILE / ROW_STEP; ++i) {
      const int p = p0 + i * ROW_STEP;
      const bool ok = p < end;
      const long long pc = ok ? p : begin;  // an address inside the request even when nothing is read
      cp_async_16(ks + i * ROW_STEP * PITCH * 2, ld_k + pc * a.k_token_stride, ok);
      cp_async_16(ks + (TILE_ELEMS + i * ROW_STEP * PITCH) * 2, ld_v + pc * a.v_token_stride, ok);
    }
  };

  // Early start (the kernel launched with programmatic stream serialization): the tiles that lie
  // wholly in the prefix are not written by this step's earlier kernels, so they load before
  // the wait; Q and the draft positions are the previous kernels' output and load after it. The
  // early copies join the first commit group, so the pipeline's waits cover them.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s)
    if (s < ntiles && prefix_tile(begin, end, prefix, s)) load_tile(s);
  wait_for_primary_grid();
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ntiles && !prefix_tile(begin, end, prefix, s)) load_tile(s);
    cp_async_commit();
  }

  // Q rows of this block into the last stage (not loaded before the first barrier of the loop),
  // zeros past the valid rows; pack row pr = query token * group + head within the group.
  {
    bf16* qs = smem + (STAGES - 1) * 2 * TILE_ELEMS;
    for (int idx = tid; idx < ROWS * CH; idx += THREADS) {
      const int row = idx / CH, c = idx % CH;
      uint4 val = make_uint4(0u, 0u, 0u, 0u);
      if (row < rows_here) {
        const int pr = row0 + row, t = pr / a.group, j = pr - t * a.group;
        val = *reinterpret_cast<const uint4*>(a.q + static_cast<long long>(req * a.q_tokens + t) * a.q_token_stride +
                                              static_cast<long long>(head * a.group + j) * D + c * 8);
      }
      *reinterpret_cast<uint4*>(qs + row * PITCH + c * 8) = val;
    }
  }
  __syncthreads();
  unsigned qf[KS][4];
  {
    const bf16* qs = smem + (STAGES - 1) * 2 * TILE_ELEMS;
    const int r = wm * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) ldsm_x4(qf[kk], smem_addr(qs + r * PITCH + kk * 16 + (lane >> 4) * 8));
  }

  unsigned mw[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int pr = row0 + wm * 16 + g + 8 * h;
    mw[h] = pr < a.rows_total ? row_mask_word(a, req, pr / a.group) : 0xffffffffu;
  }

  float m_run[2] = {-INFINITY, -INFINITY};
  float l_run[2] = {0.f, 0.f};  // this thread's columns only; the quad sums them at the end
  float o[ON][4];
#pragma unroll
  for (int d = 0; d < ON; ++d)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[d][e] = 0.f;
  const bool warp_active = wm * 16 < rows_here;  // a warp whose rows are all padding idles
  const int clean_end = min(end, prefix);        // below it every position is visible to every row

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile t visible to all; every warp is done with tile t - 1, whose stage refills now
    if (t + STAGES - 1 < ntiles) load_tile(t + STAGES - 1);
    cp_async_commit();
    if (!warp_active) continue;

    const bf16* ks = smem + (t % STAGES) * 2 * TILE_ELEMS;
    const bf16* vs = ks + TILE_ELEMS;

    // Sub-tiles of at most 32 positions bound the live score registers.
#pragma unroll 1
    for (int sub = 0; sub < KW / KSUB; ++sub) {
      const int cb = wn * KW + sub * KSUB;  // this sub-tile's first column within the tile
      float s[NTS][4];
#pragma unroll
      for (int j = 0; j < NTS; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[j][e] = 0.f;
      {
        const int krow = cb + (lane & 7) + (lane >> 4) * 8;
        const int kcol = ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
#pragma unroll
          for (int np = 0; np < NTS / 2; ++np) {
            unsigned b[4];
            ldsm_x4(b, smem_addr(ks + (krow + np * 16) * PITCH + kk * 16 + kcol));
            mma_bf16(s[2 * np], qf[kk], b[0], b[1]);
            mma_bf16(s[2 * np + 1], qf[kk], b[2], b[3]);
          }
        }
      }

      const int wp0 = begin + t * TILE + cb;  // position of this sub-tile's first column
      if (wp0 + KSUB <= clean_end) {
#pragma unroll
        for (int j = 0; j < NTS; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[j][e] *= a.scale_log2;
      } else {
#pragma unroll
        for (int j = 0; j < NTS; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int p = wp0 + j * 8 + 2 * c4 + (e & 1);
            s[j][e] = visible(p, end, prefix, mw[e >> 1]) ? s[j][e] * a.scale_log2 : -INFINITY;
          }
      }

#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < NTS; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run[h], mx);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet stays at 0
        const float alpha = exp2_fast(m_run[h] - m_use);
        m_run[h] = m_new;
        l_run[h] *= alpha;
#pragma unroll
        for (int d = 0; d < ON; ++d) {
          o[d][2 * h] *= alpha;
          o[d][2 * h + 1] *= alpha;
        }
#pragma unroll
        for (int j = 0; j < NTS; ++j) {
          s[j][2 * h] = exp2_fast(s[j][2 * h] - m_use);
          s[j][2 * h + 1] = exp2_fast(s[j][2 * h + 1] - m_use);
          l_run[h] += s[j][2 * h] + s[j][2 * h + 1];
        }
      }

      // O += P V: the score accumulators are already laid out as the A operand.
      {
        const int vrow = cb + (lane & 7) + ((lane >> 3) & 1) * 8;
        const int vcol = (lane >> 4) * 8;
#pragma unroll
        for (int k2 = 0; k2 < KSUB / 16; ++k2) {
          unsigned pa[4];
          pa[0] = pack_bf16(s[2 * k2][0], s[2 * k2][1]);
          pa[1] = pack_bf16(s[2 * k2][2], s[2 * k2][3]);
          pa[2] = pack_bf16(s[2 * k2 + 1][0], s[2 * k2 + 1][1]);
          pa[3] = pack_bf16(s[2 * k2 + 1][2], s[2 * k2 + 1][3]);
#pragma unroll
          for (int dp = 0; dp < D / 16; ++dp) {
            unsigned b[4];
            ldsm_x4_trans(b, smem_addr(vs + (vrow + k2 * 16) * PITCH + dp * 16 + vcol));
            mma_bf16(o[2 * dp], pa, b[0], b[1]);
            mma_bf16(o[2 * dp + 1], pa, b[2], b[3]);
          }
        }
      }
    }
  }

  // The dependent grid (the combine, or the stream's next kernel) may launch once every block
  // is past its KV loop: early enough to hide its launch, late enough that its blocks do not
  // take SM slots from this grid's last wave.
  allow_dependent_launch();
  // Merge the warps that share rows (different positions), then write.
  cp_async_wait<0>();
  __syncthreads();
  float* om = reinterpret_cast<float*>(smem_raw);  // [WARPS][16][OPITCH]
  float* mm = om + WARPS * 16 * OPITCH;            // [WARPS][16]
  float* lm = mm + WARPS * 16;                     // [WARPS][16]
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
  }
  {
    float* mine = om + warp * 16 * OPITCH;
#pragma unroll
    for (int d = 0; d < ON; ++d)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(mine + (g + 8 * h) * OPITCH + d * 8 + 2 * c4) = make_float2(o[d][2 * h], o[d][2 * h + 1]);
    if (c4 == 0) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mm[warp * 16 + g + 8 * h] = m_run[h];
        lm[warp * 16 + g + 8 * h] = l_run[h];
      }
    }
  }
  __syncthreads();

  constexpr int C4 = D / 4;
  for (int idx = tid; idx < ROWS * C4; idx += THREADS) {
    const int row = idx / C4, c = idx - (idx / C4) * C4;
    if (row >= rows_here) break;  // rows are in order: the rest are padding too
    const int wr = row >> 4, rr = row & 15;
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < WN; ++k) mx = fmaxf(mx, mm[(wr * WN + k) * 16 + rr]);
    const float m_use = mx == -INFINITY ? 0.f : mx;
    float l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int k = 0; k < WN; ++k) {
      const int wi = wr * WN + k;
      const float e = exp2_fast(mm[wi * 16 + rr] - m_use);
      l += e * lm[wi * 16 + rr];
      const float4 v = *reinterpret_cast<const float4*>(om + (wi * 16 + rr) * OPITCH + c * 4);
      acc.x += e * v.x;
      acc.y += e * v.y;
      acc.z += e * v.z;
      acc.w += e * v.w;
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const int pr = row0 + row, t = pr / a.group, hq = head * a.group + (pr - t * a.group);
    if (w.slot < 0) {
      uint2 packed;
      packed.x = pack_bf16(acc.x * inv, acc.y * inv);
      packed.y = pack_bf16(acc.z * inv, acc.w * inv);
      *reinterpret_cast<uint2*>(a.out + static_cast<long long>(req * a.q_tokens + t) * a.out_token_stride +
                                static_cast<long long>(hq) * D + c * 4) = packed;
    } else {
      const long long prow = (static_cast<long long>(w.slot) * a.q_tokens + t) * a.heads + hq;
      *reinterpret_cast<float4*>(a.part_o + prow * D + c * 4) =
          make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
      if (c == 0) a.part_lse[prow] = l > 0.f ? mx + log2f(l) : -INFINITY;
    }
  }
}

// ------------------------------------------------------------------ MLA kernel
// R16: 16-row tiles per block (16 or 32 rows of heads x query tokens). Warp roles: QK^T four
// ways over the 576 columns and two over a step's positions, softmax rows per warp, PV eight
// ways over the 512 output columns; three barriers per step. The KV ring holds five slots of
// 32 positions; a step computes two of them (64 positions) while the next three are in flight.
// Q arrives by cp.async with the first slot (one memory round trip for both), and a step whose
// second slot lies past the split's end (a 32-position split, a split's odd last slot) neither
// loads nor computes it.
template <int R16>
__global__ void __launch_bounds__(vcfg::kMlaThreads, 1) mla_verify_kernel(const DeviceArgs a) {
  constexpr int THREADS = vcfg::kMlaThreads;
  constexpr int WARPS = THREADS / 32;
  constexpr int TILE = vcfg::kTileKv;     // positions per step
  constexpr int HALF = vcfg::kMlaSlotKv;  // positions per ring slot
  constexpr int SLOTS = vcfg::kMlaSlots;
  constexpr int PRO = vcfg::mla_slots_in_flight();  // slots issued ahead of the step's two
  constexpr int DK = vcfg::kMlaDk, DV = vcfg::kMlaDv;
  constexpr int PITCH = DK + 8;
  constexpr int ROWS = 16 * R16;
  constexpr int QCOLS = DK / 4;  // 144 columns of QK^T per warp
  constexpr int KQ = QCOLS / 16;
  constexpr int SPITCH = TILE + 8;
  constexpr int PPITCH = TILE + 8;
  constexpr int RPW = ROWS / WARPS;  // softmax rows per warp
  constexpr int VCOLS = DV / WARPS;  // output columns per warp
  constexpr int ON = VCOLS / 8;
  constexpr int SLOT_ELEMS = HALF * PITCH;
  constexpr int CH = DK / 8;
  static_assert(WARPS == 8 && QCOLS % 16 == 0 && RPW >= 1 && ROWS % WARPS == 0, "warp layout");
  static_assert(TILE == 2 * HALF && PRO == SLOTS - 2 && PRO >= 2, "a step is two slots, the rest in flight");
  static_assert(static_cast<std::size_t>(SLOT_ELEMS) * 2 == vcfg::mla_slot_bytes(), "slot size");
  static_assert(ROWS <= HALF, "Q staging fits in one slot");

  EAGLESIM_VA_DYNAMIC_SMEM(smem_raw);
  constexpr std::size_t RING = static_cast<std::size_t>(SLOTS) * vcfg::mla_slot_bytes();
  bf16* slots = reinterpret_cast<bf16*>(smem_raw);
  float* sp = reinterpret_cast<float*>(smem_raw + RING);  // [4][ROWS][SPITCH]
  bf16* pm = reinterpret_cast<bf16*>(smem_raw + RING + vcfg::mla_sp_bytes(ROWS));
  float* alpha_s = reinterpret_cast<float*>(smem_raw + RING + vcfg::mla_sp_bytes(ROWS) + vcfg::mla_p_bytes(ROWS));
  float* m_fin = alpha_s + ROWS;
  float* l_fin = m_fin + ROWS;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, c4 = lane & 3;
  const int dq = warp & 3, kh = warp >> 2;  // QK^T: column quarter, slot of the step

  const int item = blockIdx.x / a.row_chunks;
  const int chunk = blockIdx.x - item * a.row_chunks;
  const WorkItem w = a.work[item];

  const int req = w.request;
  const long long kv0 = a.kv_indptr[req];
  const int prefix = a.kv_len[req] - a.q_tokens;
  const int begin = w.kv_begin, end = w.kv_end;
  const int nh = (end - begin + HALF - 1) / HALF;  // slots' worth of positions in the split
  const int nsteps = (nh + 1) / 2;
  const int row0 = chunk * ROWS;
  const int rows_here = min(ROWS, a.rows_total - row0);
  const bf16* kbase = a.k + kv0 * a.k_token_stride;

  // Positions [begin + h * HALF, +HALF) into slot h % SLOTS; zeros (nothing read) past the end.
  // Thread tid copies row tid / LPR, chunks tid % LPR + LPR * i: a warp's copy covers 4 rows x
  // 128 contiguous bytes, and a thread keeps one row pointer and one shared address (the rest
  // are immediate offsets), so the unrolled copies hold few registers.
  constexpr int LPR = THREADS / HALF;  // threads per row
  constexpr int PER_THREAD = CH / LPR;
  static_assert(THREADS % HALF == 0 && CH % LPR == 0, "a thread keeps its row");
  const int ld_row = tid / LPR, ld_c = tid % LPR;
  const unsigned ld_smem = smem_addr(slots + ld_row * PITCH + ld_c * 8);
  auto load_half = [&](int h) {
    const unsigned dst = ld_smem + (h % SLOTS) * (SLOT_ELEMS * 2);
    const int p = begin + h * HALF + ld_row;
    const bool ok = p < end;
    const bf16* src = kbase + static_cast<long long>(ok ? p : begin) * a.k_token_stride + ld_c * 8;
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) cp_async_16(dst + i * (LPR * 16), src + i * (LPR * 8), ok);
  };
  auto prefix_half = [&](int h) { return min(end, begin + (h + 1) * HALF) <= prefix; };

  // Prologue: slots 0 .. PRO-1, one commit group each; Q joins the first. Prefix-only slots
  // load before the wait for the previous kernel (early start, see the GQA kernel).
#pragma unroll
  for (int h = 0; h < PRO; ++h)
    if (h < nh && prefix_half(h)) load_half(h);
  wait_for_primary_grid();
  bf16* qs = slots + (SLOTS - 1) * SLOT_ELEMS;  // the last slot is first loaded after step 0's barrier
  if (ld_row < ROWS) {  // Q rows as the slots' rows; zeros past the valid rows (an address of row 0, not read)
    const bool ok = ld_row < rows_here;
    const int pr = row0 + (ok ? ld_row : 0), t = pr / a.group, j = pr - t * a.group;
    const bf16* src = a.q + static_cast<long long>(req * a.q_tokens + t) * a.q_token_stride + static_cast<long long>(j) * DK + ld_c * 8;
    const unsigned dst = smem_addr(qs + ld_row * PITCH + ld_c * 8);
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) cp_async_16(dst + i * (LPR * 16), src + i * (LPR * 8), ok);
  }
#pragma unroll
  for (int h = 0; h < PRO; ++h) {
    if (h < nh && !prefix_half(h)) load_half(h);
    cp_async_commit();
  }

  unsigned mw[RPW];
  float m_run[RPW], l_run[RPW];
#pragma unroll
  for (int i = 0; i < RPW; ++i) {
    const int pr = row0 + warp * RPW + i;
    mw[i] = pr < a.rows_total ? row_mask_word(a, req, pr / a.group) : 0xffffffffu;
    m_run[i] = -INFINITY;
    l_run[i] = 0.f;  // this lane's two columns; the warp sums at the end
  }
  float o[R16][ON][4];
#pragma unroll
  for (int mt = 0; mt < R16; ++mt)
#pragma unroll
    for (int d = 0; d < ON; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][d][e] = 0.f;
  const int clean_end = min(end, prefix);

  cp_async_wait<PRO - 1>();  // the first group: Q (with slot 0)
  __syncthreads();
  unsigned qf[R16][KQ][4];
#pragma unroll
  for (int mt = 0; mt < R16; ++mt) {
    const int r = mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int kk = 0; kk < KQ; ++kk)
      ldsm_x4(qf[mt][kk], smem_addr(qs + r * PITCH + dq * QCOLS + kk * 16 + (lane >> 4) * 8));
  }

  for (int t = 0; t < nsteps; ++t) {
    // Groups are committed one per slot, in slot order: the last one is slot 2t + PRO - 1, so
    // PRO - 2 pending groups leave slots 2t and 2t + 1 landed.
    cp_async_wait<PRO - 2>();
    __syncthreads();  // slots 2t, 2t+1 visible; step t - 1's slots (and Q), scores, probabilities consumed
#pragma unroll
    for (int u = 0; u < 2; ++u) {  // into the slots of step t - 1
      const int h = 2 * t + PRO + u;
      if (h < nh) load_half(h);
      cp_async_commit();
    }
    const bool two = 2 * t + 1 < nh;  // uniform: whether the step's second slot holds positions
    const bf16* s0 = slots + ((2 * t) % SLOTS) * SLOT_ELEMS;
    const bf16* s1 = slots + ((2 * t + 1) % SLOTS) * SLOT_ELEMS;

    // Partial scores over this warp's 144 columns for the 32 positions of its slot. A slot past
    // the end is skipped: its scores are masked in the softmax whatever sp holds.
    if (kh == 0 || two) {
      const bf16* ks = kh ? s1 : s0;
      float s[R16][4][4];
#pragma unroll
      for (int mt = 0; mt < R16; ++mt)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][j][e] = 0.f;
      const int krow = (lane & 7) + (lane >> 4) * 8;
      const int kcol = dq * QCOLS + ((lane >> 3) & 1) * 8;
#pragma unroll
      for (int kk = 0; kk < KQ; ++kk) {
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          unsigned b[4];
          ldsm_x4(b, smem_addr(ks + (krow + np * 16) * PITCH + kcol + kk * 16));
#pragma unroll
          for (int mt = 0; mt < R16; ++mt) {
            mma_bf16(s[mt][2 * np], qf[mt][kk], b[0], b[1]);
            mma_bf16(s[mt][2 * np + 1], qf[mt][kk], b[2], b[3]);
          }
        }
      }
      float* mine = sp + dq * ROWS * SPITCH;
#pragma unroll
      for (int mt = 0; mt < R16; ++mt)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            *reinterpret_cast<float2*>(mine + (mt * 16 + g + 8 * h) * SPITCH + kh * HALF + j * 8 + 2 * c4) =
                make_float2(s[mt][j][2 * h], s[mt][j][2 * h + 1]);
    }
    __syncthreads();

    // Softmax: warp `warp` owns rows warp * RPW ..; each lane two adjacent positions.
    {
      const int tile0 = begin + t * TILE;
      const bool clean = tile0 + TILE <= clean_end;
      const int p = tile0 + 2 * lane;
#pragma unroll
      for (int i = 0; i < RPW; ++i) {
        const int row = warp * RPW + i;
        float2 x = *reinterpret_cast<const float2*>(sp + row * SPITCH + 2 * lane);
#pragma unroll
        for (int q = 1; q < 4; ++q) {
          const float2 y = *reinterpret_cast<const float2*>(sp + (q * ROWS + row) * SPITCH + 2 * lane);
          x.x += y.x;
          x.y += y.y;
        }
        x.x *= a.scale_log2;
        x.y *= a.scale_log2;
        if (!clean) {
          if (!visible(p, end, prefix, mw[i])) x.x = -INFINITY;
          if (!visible(p + 1, end, prefix, mw[i])) x.y = -INFINITY;
        }
        float mx = fmaxf(x.x, x.y);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        const float m_new = fmaxf(m_run[i], mx);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        const float alpha = exp2_fast(m_run[i] - m_use);
        m_run[i] = m_new;
        const float p0 = exp2_fast(x.x - m_use), p1 = exp2_fast(x.y - m_use);
        l_run[i] = l_run[i] * alpha + p0 + p1;
        *reinterpret_cast<unsigned*>(pm + row * PPITCH + 2 * lane) = pack_bf16(p0, p1);
        if (lane == 0) alpha_s[row] = alpha;
      }
    }
    __syncthreads();

    // O += P V over this warp's 64 output columns (the step's second slot only if it holds positions).
    {
#pragma unroll
      for (int mt = 0; mt < R16; ++mt) {
        const float a0 = alpha_s[mt * 16 + g], a1 = alpha_s[mt * 16 + g + 8];
#pragma unroll
        for (int d = 0; d < ON; ++d) {
          o[mt][d][0] *= a0;
          o[mt][d][1] *= a0;
          o[mt][d][2] *= a1;
          o[mt][d][3] *= a1;
        }
      }
      const int lrow = (lane & 7) + ((lane >> 3) & 1) * 8;
      const int lcol = (lane >> 4) * 8;
      const int nk2 = two ? TILE / 16 : HALF / 16;
#pragma unroll
      for (int k2 = 0; k2 < TILE / 16; ++k2) {
        if (k2 >= nk2) break;
        const bf16* vs = (k2 < HALF / 16 ? s0 : s1) + ((k2 % (HALF / 16)) * 16 + lrow) * PITCH + warp * VCOLS + lcol;
        unsigned pa[R16][4];
#pragma unroll
        for (int mt = 0; mt < R16; ++mt) ldsm_x4(pa[mt], smem_addr(pm + (mt * 16 + lrow) * PPITCH + k2 * 16 + lcol));
#pragma unroll
        for (int dp = 0; dp < ON / 2; ++dp) {
          unsigned b[4];
          ldsm_x4_trans(b, smem_addr(vs + dp * 16));
#pragma unroll
          for (int mt = 0; mt < R16; ++mt) {
            mma_bf16(o[mt][2 * dp], pa[mt], b[0], b[1]);
            mma_bf16(o[mt][2 * dp + 1], pa[mt], b[2], b[3]);
          }
        }
      }
    }
  }

  allow_dependent_launch();  // past the KV loop (see the GQA kernel)
  cp_async_wait<0>();
#pragma unroll
  for (int i = 0; i < RPW; ++i) {
    float l = l_run[i];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
    if (lane == 0) {
      m_fin[warp * RPW + i] = m_run[i];
      l_fin[warp * RPW + i] = l;
    }
  }
  __syncthreads();

#pragma unroll
  for (int mt = 0; mt < R16; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = mt * 16 + g + 8 * h;
      if (row >= rows_here) continue;
      const float l = l_fin[row];
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const int pr = row0 + row, t = pr / a.group, hq = pr - t * a.group;
      if (w.slot < 0) {
        bf16* dst = a.out + static_cast<long long>(req * a.q_tokens + t) * a.out_token_stride +
                    static_cast<long long>(hq) * DV + warp * VCOLS + 2 * c4;
#pragma unroll
        for (int d = 0; d < ON; ++d)
          *reinterpret_cast<unsigned*>(dst + d * 8) = pack_bf16(o[mt][d][2 * h] * inv, o[mt][d][2 * h + 1] * inv);
      } else {
        const long long prow = (static_cast<long long>(w.slot) * a.q_tokens + t) * a.heads + hq;
        float* dst = a.part_o + prow * DV + warp * VCOLS + 2 * c4;
#pragma unroll
        for (int d = 0; d < ON; ++d)
          *reinterpret_cast<float2*>(dst + d * 8) = make_float2(o[mt][d][2 * h] * inv, o[mt][d][2 * h + 1] * inv);
        if (warp == 0 && c4 == 0) a.part_lse[prow] = l > 0.f ? m_fin[row] + log2f(l) : -INFINITY;
      }
    }
  }
}

// ------------------------------------------------------------------ combine
// W = c.warps_per_row warps per (request, query token, head) row of a request with several
// splits (8 / W rows per 256-thread block): out = sum_s 2^(lse_s - M) o_s / sum_s 2^(lse_s - M),
// each o_s already normalised, M a running maximum (each round of loads rescales the sums so
// far). Warp `sub` of a row takes splits sub, sub + W, ... and keeps
// U of them in flight at once (the first measurement: one split per memory latency, ~0.22 us
// each, made the combine of a 128-split request cost ~30 us); the W partial sums are added
// in warp order through shared memory, so the result does not depend on timing.
// A block takes one slice of DV / combine_column_slices(DV) columns (blockIdx.y) of its rows;
// every slice reads the rows' lse values, so all slices weight the splits alike.
template <int DV>
__global__ void __launch_bounds__(256) verify_combine_kernel(const CombineArgs c) {
  constexpr int DVS = DV / vcfg::combine_column_slices(DV);  // columns of this block's slice
  constexpr int EPL = DVS / 32;  // elements per lane
  constexpr int VEC = EPL >= 4 ? 4 : EPL;
  constexpr int NV = EPL / VEC;
  constexpr int U = vcfg::combine_unroll(DV);
  static_assert(DVS % 64 == 0, "slice width multiple of 64");
  const int col0 = static_cast<int>(blockIdx.y) * DVS;
  __shared__ float red[8][DVS];
  __shared__ float red_den[8], red_max[8];
  const int W = c.warps_per_row;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int sub = warp & (W - 1);
  const int row = blockIdx.x * (8 / W) + warp / W;
  const bool live = row < c.rows;
  const int per_req = c.q_tokens * c.heads;
  // The combine list is the plan's (uploaded before the step), so it is read before the wait;
  // the partials are the attention grid's output and are read after it.
  CombineItem it{};
  if (live) it = c.items[row / per_req];
  wait_for_primary_grid();
  // The next kernel may launch now (it waits for this grid before reading its output); not
  // before the wait, where its blocks would take SM slots from the attention grid.
  allow_dependent_launch();

  float acc[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) acc[e] = 0.f;
  float den = 0.f, m_run = -INFINITY;  // this warp's sums, relative to 2^m_run
  int rem = 0;
  if (live) {
    rem = row - (row / per_req) * per_req;  // token * heads + head
    const long long first = static_cast<long long>(it.slot_base) * per_req + rem;

    // One pass, rescaled as it goes (the flash-decoding merge): no separate pass over the
    // log-sum-exps first, so a round's partial rows load together with their lse values.
    for (int s0 = sub; s0 < it.splits; s0 += W * U) {
      float lse[U];
      float x[U][EPL];
#pragma unroll
      for (int u = 0; u < U; ++u) {  // all U splits' loads first (a split past the end reads split s0, weight 0)
        const int s = s0 + u * W;
        const long long prow = first + static_cast<long long>(s < it.splits ? s : s0) * per_req;
        lse[u] = s < it.splits ? c.part_lse[prow] : -INFINITY;
        const float* src = c.part_o + prow * DV + col0;
#pragma unroll
        for (int v = 0; v < NV; ++v) {
          const int col = (v * 32 + lane) * VEC;
          if constexpr (VEC == 4) {
            const float4 q = *reinterpret_cast<const float4*>(src + col);
            x[u][v * 4 + 0] = q.x;
            x[u][v * 4 + 1] = q.y;
            x[u][v * 4 + 2] = q.z;
            x[u][v * 4 + 3] = q.w;
          } else {
            const float2 q = *reinterpret_cast<const float2*>(src + col);
            x[u][v * 2 + 0] = q.x;
            x[u][v * 2 + 1] = q.y;
          }
        }
      }
      float m_new = m_run;
#pragma unroll
      for (int u = 0; u < U; ++u) m_new = fmaxf(m_new, lse[u]);
      const float m_ref = m_new == -INFINITY ? 0.f : m_new;
      const float keep = rescale_to(m_run, m_ref);
      den *= keep;
#pragma unroll
      for (int e = 0; e < EPL; ++e) acc[e] *= keep;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float wgt = exp2_fast(lse[u] - m_ref);  // 0 for a split that saw nothing or is past the end
        den += wgt;
#pragma unroll
        for (int e = 0; e < EPL; ++e) acc[e] += wgt * x[u][e];
      }
      m_run = m_new;
    }
  }
  if (W > 1) {  // uniform over the block: the reduction's barrier is reached by every thread
#pragma unroll
    for (int v = 0; v < NV; ++v)
#pragma unroll
      for (int e = 0; e < VEC; ++e) red[warp][(v * 32 + lane) * VEC + e] = acc[v * VEC + e];
    if (lane == 0) {
      red_den[warp] = den;
      red_max[warp] = m_run;
    }
    __syncthreads();
    if (sub == 0) {  // the row's warps in order, each rescaled to the row's maximum
      float m_all = m_run;
      for (int w2 = 1; w2 < W; ++w2) m_all = fmaxf(m_all, red_max[warp + w2]);
      const float m_ref = m_all == -INFINITY ? 0.f : m_all;
      const float k0 = rescale_to(m_run, m_ref);
      den *= k0;
#pragma unroll
      for (int e = 0; e < EPL; ++e) acc[e] *= k0;
      for (int w2 = 1; w2 < W; ++w2) {
        const float k = rescale_to(red_max[warp + w2], m_ref);
#pragma unroll
        for (int v = 0; v < NV; ++v)
#pragma unroll
          for (int e = 0; e < VEC; ++e) acc[v * VEC + e] += k * red[warp + w2][(v * 32 + lane) * VEC + e];
        den += k * red_den[warp + w2];
      }
    }
  }
  if (!live || sub != 0) return;
  const float inv = den > 0.f ? 1.f / den : 0.f;
  const int t = rem / c.heads, h = rem - (rem / c.heads) * c.heads;
  bf16* dst = c.out + static_cast<long long>(it.request * c.q_tokens + t) * c.out_token_stride +
              static_cast<long long>(h) * DV + col0;
#pragma unroll
  for (int v = 0; v < NV; ++v) {
    const int col = (v * 32 + lane) * VEC;
    if constexpr (VEC == 4) {
      uint2 packed;
      packed.x = pack_bf16(acc[v * 4 + 0] * inv, acc[v * 4 + 1] * inv);
      packed.y = pack_bf16(acc[v * 4 + 2] * inv, acc[v * 4 + 3] * inv);
      *reinterpret_cast<uint2*>(dst + col) = packed;
    } else {
      *reinterpret_cast<unsigned*>(dst + col) = pack_bf16(acc[v * 2 + 0] * inv, acc[v * 2 + 1] * inv);
    }
  }
}

// ------------------------------------------------------------------ kernel arguments
// From resolved params (resolve_verify_attention_params) and the plan's workspace layout.
inline DeviceArgs make_device_args(const ::eaglesim::cuda::VerifyAttentionParams& p,
                                   const ::eaglesim::cuda::VerifyAttentionPlan& plan, void* workspace) {
  const auto& s = plan.shape;
  unsigned char* ws = static_cast<unsigned char*>(workspace);
  DeviceArgs a{};
  static_cast<AttentionTensors&>(a) = attention_tensors(p);
  a.work = reinterpret_cast<const WorkItem*>(ws + plan.work_offset);
  a.part_o = reinterpret_cast<float*>(ws + plan.part_o_offset);
  a.part_lse = reinterpret_cast<float*>(ws + plan.part_lse_offset);
  a.q_tokens = s.q_tokens;
  a.heads = s.heads;
  a.kv_heads = s.kv_heads;
  a.group = s.heads / s.kv_heads;
  a.rows_total = a.group * s.q_tokens;
  a.row_chunks = plan.kernel.row_chunks;
  a.scale_log2 = p.scale * 1.4426950408889634f;
  return a;
}

inline CombineArgs make_combine_args(const DeviceArgs& a, const ::eaglesim::cuda::VerifyAttentionPlan& plan,
                                     void* workspace) {
  CombineArgs c{};
  c.items = reinterpret_cast<const CombineItem*>(static_cast<unsigned char*>(workspace) + plan.combine_offset);
  c.part_o = a.part_o;
  c.part_lse = a.part_lse;
  c.out = a.out;
  c.out_token_stride = a.out_token_stride;
  c.q_tokens = plan.shape.q_tokens;
  c.heads = plan.shape.heads;
  c.rows = static_cast<int>(plan.combine_rows());
  c.warps_per_row = ::eaglesim::cuda::combine_warps_per_row(plan);
  return c;
}

#if !defined(EAGLESIM_VA_EMULATE)
// ------------------------------------------------------------------ host API
namespace detail {
using Kernel = void (*)(DeviceArgs);
inline Kernel kernel_for(::eaglesim::cuda::VerifyAttentionVariant v) {
  using V = ::eaglesim::cuda::VerifyAttentionVariant;
  switch (v) {
    case V::gqa_d64_r16: return gqa_verify_kernel<64, 1>;
    case V::gqa_d64_r32: return gqa_verify_kernel<64, 2>;
    case V::gqa_d64_r64: return gqa_verify_kernel<64, 4>;
    case V::gqa_d128_r16: return gqa_verify_kernel<128, 1>;
    case V::gqa_d128_r32: return gqa_verify_kernel<128, 2>;
    case V::gqa_d128_r64: return gqa_verify_kernel<128, 4>;
    case V::mla_r16: return mla_verify_kernel<1>;
    case V::mla_r32: return mla_verify_kernel<2>;
  }
  return nullptr;
}
inline bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }
}  // namespace detail

// Raises the dynamic shared-memory limit of every variant (they all need more than 48 KB).
// Not a stream operation; upload_verify_attention_plan calls it, outside any graph capture.
inline cudaError_t prepare_verify_attention_kernels() {
  using V = ::eaglesim::cuda::VerifyAttentionVariant;
  const V all[] = {V::gqa_d64_r16, V::gqa_d64_r32, V::gqa_d64_r64, V::gqa_d128_r16,
                   V::gqa_d128_r32, V::gqa_d128_r64, V::mla_r16, V::mla_r32};
  for (V v : all) {
    const std::size_t bytes = (v == V::mla_r16)   ? vcfg::mla_smem_bytes(16)
                              : (v == V::mla_r32) ? vcfg::mla_smem_bytes(32)
                              : (static_cast<int>(v) <= static_cast<int>(V::gqa_d64_r64)) ? vcfg::gqa_smem_bytes(64)
                                                                                           : vcfg::gqa_smem_bytes(128);
    const cudaError_t e =
        cudaFuncSetAttribute(detail::kernel_for(v), cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// Copies the plan's work list into the workspace (plan.workspace_bytes, 256-byte aligned) and
// prepares the kernels. Call once per plan before launching, outside graph capture; the copy
// is ordered on `stream`.
inline cudaError_t upload_verify_attention_plan(const ::eaglesim::cuda::VerifyAttentionPlan& plan, void* workspace,
                                                cudaStream_t stream) {
  if (workspace == nullptr || !detail::aligned16(workspace)) return cudaErrorInvalidValue;
  const cudaError_t e = prepare_verify_attention_kernels();
  if (e != cudaSuccess) return e;
  if (plan.metadata.empty()) return cudaSuccess;
  return cudaMemcpyAsync(workspace, plan.metadata.data(), plan.metadata.size(), cudaMemcpyHostToDevice, stream);
}

// The op: the attention kernel and, when a request has several splits, the combine. Enqueues
// kernels only (graph-capturable). params.kv_len must hold the lengths the plan was made from.
inline cudaError_t launch_verify_attention(const ::eaglesim::cuda::VerifyAttentionParams& params,
                                           const ::eaglesim::cuda::VerifyAttentionPlan& plan, void* workspace,
                                           cudaStream_t stream,
                                           const ::eaglesim::cuda::VerifyAttentionLaunchOptions& options = {}) {
  using ::eaglesim::cuda::VerifyAttentionCheck;
  using ::eaglesim::cuda::AttentionMaskKind;
  const auto& s = plan.shape;
  if (workspace == nullptr || !detail::aligned16(workspace) || plan.work.empty()) return cudaErrorInvalidValue;
  ::eaglesim::cuda::VerifyAttentionParams p = params;
  const VerifyAttentionCheck check = ::eaglesim::cuda::resolve_verify_attention_params(s, p);
  if (check == VerifyAttentionCheck::invalid_value) return cudaErrorInvalidValue;
  if (check == VerifyAttentionCheck::misaligned) return cudaErrorMisalignedAddress;

  const DeviceArgs a = make_device_args(p, plan, workspace);

  const detail::Kernel kern = detail::kernel_for(plan.kernel.variant);
  const long long blocks = plan.grid_blocks();
  if (kern == nullptr || blocks <= 0 || blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  // Programmatic serialization only on explicit streams (see VerifyAttentionLaunchOptions).
  const bool early = early_start_allowed(stream);
  cudaLaunchAttribute attr[1] = {early_start_attribute()};
  cudaLaunchConfig_t la{};
  la.gridDim = dim3(static_cast<unsigned>(blocks));
  la.blockDim = dim3(static_cast<unsigned>(plan.kernel.threads));
  la.dynamicSmemBytes = plan.kernel.smem_bytes;
  la.stream = stream;
  la.attrs = attr;
  la.numAttrs = options.early_start && early ? 1 : 0;
  cudaError_t e = cudaLaunchKernelEx(&la, kern, a);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess || plan.combine.empty()) return e;

  const CombineArgs c = make_combine_args(a, plan, workspace);
  cudaLaunchConfig_t lc{};
  const int rows_per_block = 8 / c.warps_per_row;
  lc.gridDim = dim3(static_cast<unsigned>((c.rows + rows_per_block - 1) / rows_per_block),
                    static_cast<unsigned>(vcfg::combine_column_slices(s.head_dim_v)));
  lc.blockDim = dim3(256);
  lc.dynamicSmemBytes = 0;
  lc.stream = stream;
  lc.attrs = attr;
  lc.numAttrs = options.overlap_combine && early ? 1 : 0;
  switch (s.head_dim_v) {
    case 64: e = cudaLaunchKernelEx(&lc, verify_combine_kernel<64>, c); break;
    case 128: e = cudaLaunchKernelEx(&lc, verify_combine_kernel<128>, c); break;
    case 512: e = cudaLaunchKernelEx(&lc, verify_combine_kernel<512>, c); break;
    default: return cudaErrorInvalidValue;
  }
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

#endif  // !EAGLESIM_VA_EMULATE

}  // namespace eaglesim::kernels::verify
