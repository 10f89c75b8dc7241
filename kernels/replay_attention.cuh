#pragma once
// Split-KV decode attention ("flash-decode") for the verify step: few query tokens against a
// long KV cache. Two variants through one kernel template:
//   GQA: q [q_tokens, heads, D], K and V caches [kv_len, kv_heads, D] each; DK = DV = D.
//   MLA (absorbed, DeepSeek-V3/Kimi-K2 style): q [q_tokens, heads, lora + rope], one latent
//        cache [kv_len, lora + rope] that serves as K (all of it) and V (its first `lora`
//        columns); DK = lora + rope, DV = lora, SHARED_KV = true, kv_heads = 1.
// Causal: query token i (of q_tokens, the newest positions) sees kv positions
// <= kv_len - q_tokens + i, as in a verify step over freshly appended draft tokens.
//
// Key optimisations: every block owns one KV head and one slice ("split") of the sequence and
// serves all query rows that share that KV head (GQA group x q_tokens, up to RMAX rows), so
// each K/V byte is read from memory once per step; splits are sized so that the grid fills
// the GPU even for 1-8 KV heads; 16-byte loads into padded shared-memory tiles (row pitch
// = D + 8 elements keeps 16-byte reads of 8 consecutive rows on distinct banks); online
// softmax in base 2 with fp32 accumulation; a small combine kernel merges the splits.
// Use case: decode/verify with q_tokens * group <= a few dozen rows; larger row counts are
// split over grid.z (K/V then re-read, mostly from L2). Hardware: sm_80+ (bf16).
// A plain reference lives in the GPU tests (CPU, double precision).
#include <cfloat>
#include <cstdint>

#include <cuda_bf16.h>

namespace eaglesim::kernels::replay {

constexpr int kAttnThreads = 128;
constexpr int kAttnRowsPerBlock = 16;  // RMAX: query rows (group heads x q tokens) per block

template <int DK, int DV, int TILE, bool SHARED_KV>
struct AttnSmem {
  static constexpr int kPitch = DK + 8;
  static constexpr int vPitch = SHARED_KV ? kPitch : DV + 8;
  static constexpr std::size_t q_bytes = sizeof(__nv_bfloat16) * kAttnRowsPerBlock * kPitch;
  static constexpr std::size_t k_bytes = sizeof(__nv_bfloat16) * TILE * kPitch;
  static constexpr std::size_t v_bytes = SHARED_KV ? 0 : sizeof(__nv_bfloat16) * TILE * vPitch;
  static constexpr std::size_t s_bytes = sizeof(float) * kAttnRowsPerBlock * TILE;
  static constexpr std::size_t stat_bytes = sizeof(float) * kAttnRowsPerBlock * 3;
  static constexpr std::size_t total = q_bytes + k_bytes + v_bytes + s_bytes + stat_bytes;
};

struct AttnParams {
  const __nv_bfloat16* q;  // [q_tokens, heads, DK]
  const __nv_bfloat16* k;  // row (pos, kvh) at (pos * kv_heads + kvh) * k_row_pitch
  const __nv_bfloat16* v;  // row (pos, kvh) at (pos * kv_heads + kvh) * v_row_pitch
  std::int64_t k_row_pitch, v_row_pitch;
  float* part_acc;         // [splits, q_tokens * heads, DV]
  float* part_ml;          // [splits, q_tokens * heads, 2]: running max (base 2), sum
  int q_tokens, heads, kv_heads, kv_len, split_len;
  float scale_log2;        // softmax scale * log2(e)
};

template <int DK, int DV, int TILE, bool SHARED_KV>
__global__ void __launch_bounds__(kAttnThreads) decode_attention_split_kernel(AttnParams p) {
  static_assert(DK % 8 == 0 && DV % kAttnThreads == 0, "head dims: DK multiple of 8, DV of 128");
  using S = AttnSmem<DK, DV, TILE, SHARED_KV>;
  constexpr int RMAX = kAttnRowsPerBlock;
  constexpr int COLS = DV / kAttnThreads;  // output columns per thread
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* q_s = reinterpret_cast<__nv_bfloat16*>(smem);
  __nv_bfloat16* k_s = reinterpret_cast<__nv_bfloat16*>(smem + S::q_bytes);
  __nv_bfloat16* v_s = SHARED_KV ? k_s : reinterpret_cast<__nv_bfloat16*>(smem + S::q_bytes + S::k_bytes);
  float* s_s = reinterpret_cast<float*>(smem + S::q_bytes + S::k_bytes + S::v_bytes);
  float* m_s = s_s + RMAX * TILE;
  float* l_s = m_s + RMAX;
  float* alpha_s = l_s + RMAX;

  const int tid = threadIdx.x;
  const int split = blockIdx.x, kvh = blockIdx.y;
  const int group = p.heads / p.kv_heads;
  const int rows_total = group * p.q_tokens;
  const int row0 = blockIdx.z * RMAX;
  const int nrows = min(RMAX, rows_total - row0);
  const int begin = split * p.split_len;
  const int end = min(p.kv_len, begin + p.split_len);
  const int rows_all = p.q_tokens * p.heads;

  // Block row r -> (query token, head); GQA group heads are adjacent in q's head dimension.
  auto row_token = [&](int r) { return (row0 + r) / group; };
  auto row_global = [&](int r) { return row_token(r) * p.heads + kvh * group + (row0 + r) % group; };

  for (int idx = tid; idx < RMAX * (DK / 8); idx += kAttnThreads) {
    const int r = idx / (DK / 8), c = idx % (DK / 8);
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r < nrows) val = reinterpret_cast<const uint4*>(p.q + static_cast<std::int64_t>(row_global(r)) * DK)[c];
    reinterpret_cast<uint4*>(q_s + r * S::kPitch)[c] = val;
  }
  if (tid < RMAX) { m_s[tid] = -INFINITY; l_s[tid] = 0.f; }

  float acc[RMAX][COLS];
#pragma unroll
  for (int r = 0; r < RMAX; ++r)
#pragma unroll
    for (int c = 0; c < COLS; ++c) acc[r][c] = 0.f;

  for (int t0 = begin; t0 < end; t0 += TILE) {
    __syncthreads();  // previous tile fully consumed (and q_s/m_s written on the first pass)
    for (int idx = tid; idx < TILE * (DK / 8); idx += kAttnThreads) {
      const int i = idx / (DK / 8), c = idx % (DK / 8);
      const int pos = t0 + i;
      uint4 val = make_uint4(0, 0, 0, 0);
      if (pos < end)
        val = reinterpret_cast<const uint4*>(p.k + (static_cast<std::int64_t>(pos) * p.kv_heads + kvh) * p.k_row_pitch)[c];
      reinterpret_cast<uint4*>(k_s + i * S::kPitch)[c] = val;
    }
    if (!SHARED_KV) {
      for (int idx = tid; idx < TILE * (DV / 8); idx += kAttnThreads) {
        const int i = idx / (DV / 8), c = idx % (DV / 8);
        const int pos = t0 + i;
        uint4 val = make_uint4(0, 0, 0, 0);
        if (pos < end)
          val = reinterpret_cast<const uint4*>(p.v + (static_cast<std::int64_t>(pos) * p.kv_heads + kvh) * p.v_row_pitch)[c];
        reinterpret_cast<uint4*>(v_s + i * S::vPitch)[c] = val;
      }
    }
    __syncthreads();

    // Scores: thread per (row, position); consecutive threads take consecutive positions.
    for (int idx = tid; idx < RMAX * TILE; idx += kAttnThreads) {
      const int r = idx / TILE, i = idx % TILE;
      const int pos = t0 + i;
      float s = -INFINITY;
      if (r < nrows && pos < end && pos <= p.kv_len - p.q_tokens + row_token(r)) {
        float dot = 0.f;
        const uint4* qv = reinterpret_cast<const uint4*>(q_s + r * S::kPitch);
        const uint4* kv = reinterpret_cast<const uint4*>(k_s + i * S::kPitch);
#pragma unroll 4
        for (int c = 0; c < DK / 8; ++c) {
          uint4 a = qv[c], b = kv[c];
          const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
          const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&b);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            float2 fa = __bfloat1622float2(a2[j]), fb = __bfloat1622float2(b2[j]);
            dot = fmaf(fa.x, fb.x, dot);
            dot = fmaf(fa.y, fb.y, dot);
          }
        }
        s = dot * p.scale_log2;
      }
      s_s[r * TILE + i] = s;
    }
    __syncthreads();

    // Online softmax: one warp per row.
    const int warp = tid / 32, lane = tid % 32;
    for (int r = warp; r < RMAX; r += kAttnThreads / 32) {
      float mx = -INFINITY;
      for (int i = lane; i < TILE; i += 32) mx = fmaxf(mx, s_s[r * TILE + i]);
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_old = m_s[r];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.f;
      for (int i = lane; i < TILE; i += 32) {
        const float s = s_s[r * TILE + i];
        const float e = (m_new == -INFINITY) ? 0.f : exp2f(s - m_new);
        s_s[r * TILE + i] = e;
        sum += e;
      }
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      // Every lane read m_s[r] above; a shuffle converges the warp but does not order shared
      // memory, so make the reads visible as done before lane 0 overwrites it (racecheck).
      __syncwarp();
      if (lane == 0) {
        const float alpha = (m_old == -INFINITY) ? 0.f : exp2f(m_old - m_new);
        alpha_s[r] = alpha;
        l_s[r] = l_s[r] * alpha + sum;
        m_s[r] = m_new;
      }
    }
    __syncthreads();

    // P.V: thread owns output columns tid + c*128 for every row; each V element is read once.
#pragma unroll
    for (int r = 0; r < RMAX; ++r) {
      const float a = alpha_s[r];
#pragma unroll
      for (int c = 0; c < COLS; ++c) acc[r][c] *= a;
    }
    const int valid = min(TILE, end - t0);
    for (int i = 0; i < valid; ++i) {
      float vv[COLS];
#pragma unroll
      for (int c = 0; c < COLS; ++c) vv[c] = __bfloat162float(v_s[i * S::vPitch + tid + c * kAttnThreads]);
#pragma unroll
      for (int r = 0; r < RMAX; ++r) {
        const float pr = s_s[r * TILE + i];
#pragma unroll
        for (int c = 0; c < COLS; ++c) acc[r][c] = fmaf(pr, vv[c], acc[r][c]);
      }
    }
  }
  __syncthreads();

#pragma unroll
  for (int r = 0; r < RMAX; ++r) {
    if (r < nrows) {
      float* dst = p.part_acc + (static_cast<std::int64_t>(split) * rows_all + row_global(r)) * DV;
#pragma unroll
      for (int c = 0; c < COLS; ++c) dst[tid + c * kAttnThreads] = acc[r][c];
    }
  }
  if (tid < nrows) {
    float* ml = p.part_ml + (static_cast<std::int64_t>(split) * rows_all + row_global(tid)) * 2;
    ml[0] = m_s[tid];
    ml[1] = l_s[tid];
  }
}

// out[row, :] = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s.  grid = q_tokens*heads, block = 128.
template <int DV>
__global__ void __launch_bounds__(kAttnThreads) decode_attention_combine_kernel(
    const float* __restrict__ part_acc, const float* __restrict__ part_ml, __nv_bfloat16* __restrict__ out,
    int splits, int rows_all) {
  const int row = blockIdx.x;
  float mx = -INFINITY;
  for (int s = 0; s < splits; ++s) mx = fmaxf(mx, part_ml[(static_cast<std::int64_t>(s) * rows_all + row) * 2]);
  float denom = 0.f;
  float num[DV / kAttnThreads];
#pragma unroll
  for (int c = 0; c < DV / kAttnThreads; ++c) num[c] = 0.f;
  for (int s = 0; s < splits; ++s) {
    const float* ml = part_ml + (static_cast<std::int64_t>(s) * rows_all + row) * 2;
    if (ml[0] == -INFINITY) continue;  // split saw only masked positions
    const float w = exp2f(ml[0] - mx);
    denom += w * ml[1];
    const float* a = part_acc + (static_cast<std::int64_t>(s) * rows_all + row) * DV;
#pragma unroll
    for (int c = 0; c < DV / kAttnThreads; ++c) num[c] += w * a[threadIdx.x + c * kAttnThreads];
  }
  const float inv = denom > 0.f ? 1.f / denom : 0.f;
#pragma unroll
  for (int c = 0; c < DV / kAttnThreads; ++c)
    out[static_cast<std::int64_t>(row) * DV + threadIdx.x + c * kAttnThreads] = __float2bfloat16(num[c] * inv);
}

}  // namespace eaglesim::kernels::replay
