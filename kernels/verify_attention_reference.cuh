#pragma once
// The plain version of verify attention (kernels/verify_attention.cuh): same inputs, same
// function, written to be read rather than to be fast. One block per (request, query token,
// query head); fp32 dot products, online softmax in natural base over tiles of 128 positions,
// no tensor cores, no splits. Any head dims up to 576 (q/k) and 512 (v); GQA and MLA alike
// (MLA: kv_heads = 1 and V the first head_dim_v columns of the K rows).
#include <cmath>
#include <cstdint>

#if !defined(EAGLESIM_VA_EMULATE)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#endif

#include "cuda/ops/verify_attention_launch.hpp"
#include "verify_attention_tensors.cuh"

namespace eaglesim::kernels::verify {

constexpr int kRefThreads = 128;
constexpr int kRefMaxDk = 576;
constexpr int kRefMaxDv = 512;

struct ReferenceArgs : AttentionTensors {
  int q_tokens, heads, kv_heads, dk, dv;
  float scale;
};

// Block-wide max (op 0) or sum (op 1) of one value per thread; every thread gets the result.
__device__ inline float reference_block_reduce(float x, int op, float* scratch) {
  for (int off = 16; off > 0; off >>= 1) {
    const float y = __shfl_xor_sync(0xffffffffu, x, off);
    x = op == 0 ? fmaxf(x, y) : x + y;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch free from the previous reduction
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < kRefThreads / 32; ++w) r = op == 0 ? fmaxf(r, scratch[w]) : r + scratch[w];
  return r;
}

__global__ void __launch_bounds__(kRefThreads) verify_attention_reference_kernel(const ReferenceArgs a) {
  __shared__ float q_s[kRefMaxDk];
  __shared__ float p_s[kRefThreads];
  __shared__ float scratch[kRefThreads / 32];

  const int row = blockIdx.x;  // (request * q_tokens + token) * heads + head
  const int head = row % a.heads;
  const int token_row = row / a.heads;
  const int request = token_row / a.q_tokens;
  const int token = token_row % a.q_tokens;
  const int kv_head = head / (a.heads / a.kv_heads);
  const int len = a.kv_len[request];
  const int prefix = len - a.q_tokens;
  const long long first = a.kv_indptr[request];
  unsigned word = 0xffffffffu;
  if (a.mask_tree)
    word = a.mask[(a.mask_per_request ? request * a.q_tokens : 0) + token];
  else if (token < 31)
    word = (2u << token) - 1u;

  const __nv_bfloat16* qrow = a.q + static_cast<long long>(token_row) * a.q_token_stride + static_cast<long long>(head) * a.dk;
  for (int d = threadIdx.x; d < a.dk; d += kRefThreads) q_s[d] = __bfloat162float(qrow[d]);
  __syncthreads();

  float m = -INFINITY, l = 0.f;
  float acc[kRefMaxDv / kRefThreads] = {0.f, 0.f, 0.f, 0.f};  // columns threadIdx.x + 128 * c

  for (int p0 = 0; p0 < len; p0 += kRefThreads) {
    const int p = p0 + threadIdx.x;
    float s = -INFINITY;
    const bool seen = p < len && (p < prefix || ((word >> (p - prefix)) & 1u));
    if (seen) {
      const __nv_bfloat16* krow = a.k + (first + p) * a.k_token_stride + kv_head * a.k_head_stride;
      float dot = 0.f;
      for (int d = 0; d < a.dk; ++d) dot += q_s[d] * __bfloat162float(krow[d]);
      s = dot * a.scale;
    }
    const float tile_max = reference_block_reduce(s, 0, scratch);
    const float m_new = fmaxf(m, tile_max);
    const float e = s == -INFINITY ? 0.f : expf(s - m_new);
    const float tile_sum = reference_block_reduce(e, 1, scratch);
    const float alpha = m == -INFINITY ? 0.f : expf(m - m_new);
    l = l * alpha + tile_sum;
    m = m_new;
    p_s[threadIdx.x] = e;
    __syncthreads();
    const int n = min(kRefThreads, len - p0);
    for (int c = 0; c < kRefMaxDv / kRefThreads; ++c) {
      const int col = threadIdx.x + c * kRefThreads;
      if (col >= a.dv) break;
      float sum = acc[c] * alpha;
      for (int i = 0; i < n; ++i) {
        const float pi = p_s[i];
        if (pi != 0.f)
          sum += pi * __bfloat162float(a.v[(first + p0 + i) * a.v_token_stride + kv_head * a.v_head_stride + col]);
      }
      acc[c] = sum;
    }
    __syncthreads();  // p_s is rewritten next tile
  }

  __nv_bfloat16* orow = a.out + static_cast<long long>(token_row) * a.out_token_stride + static_cast<long long>(head) * a.dv;
  const float inv = l > 0.f ? 1.f / l : 0.f;
  for (int c = 0; c < kRefMaxDv / kRefThreads; ++c) {
    const int col = threadIdx.x + c * kRefThreads;
    if (col < a.dv) orow[col] = __float2bfloat16(acc[c] * inv);
  }
}

// From resolved params (resolve_verify_attention_params).
inline ReferenceArgs make_reference_args(const ::eaglesim::cuda::VerifyAttentionParams& p,
                                         const ::eaglesim::cuda::VerifyAttentionShape& s) {
  ReferenceArgs a{};
  static_cast<AttentionTensors&>(a) = attention_tensors(p);
  a.q_tokens = s.q_tokens;
  a.heads = s.heads;
  a.kv_heads = s.kv_heads;
  a.dk = s.head_dim_qk;
  a.dv = s.head_dim_v;
  a.scale = p.scale;
  return a;
}

#if !defined(EAGLESIM_VA_EMULATE)
// Same parameters as launch_verify_attention (strides 0 = packed; MLA: v may be null = k).
inline cudaError_t launch_verify_attention_reference(const ::eaglesim::cuda::VerifyAttentionParams& params,
                                                     const ::eaglesim::cuda::VerifyAttentionShape& s,
                                                     cudaStream_t stream) {
  if (s.head_dim_qk > kRefMaxDk || s.head_dim_v > kRefMaxDv) return cudaErrorInvalidValue;
  ::eaglesim::cuda::VerifyAttentionParams p = params;
  const auto check = ::eaglesim::cuda::resolve_verify_attention_params(s, p);
  if (check == ::eaglesim::cuda::VerifyAttentionCheck::invalid_value) return cudaErrorInvalidValue;
  if (check == ::eaglesim::cuda::VerifyAttentionCheck::misaligned) return cudaErrorMisalignedAddress;
  const ReferenceArgs a = make_reference_args(p, s);
  const long long blocks = static_cast<long long>(s.batch) * s.q_tokens * s.heads;
  verify_attention_reference_kernel<<<static_cast<unsigned>(blocks), kRefThreads, 0, stream>>>(a);
  return cudaGetLastError();
}
#endif  // !EAGLESIM_VA_EMULATE

}  // namespace eaglesim::kernels::verify
