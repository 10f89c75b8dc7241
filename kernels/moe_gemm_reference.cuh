#pragma once
// Plain reference for the grouped MoE GEMM and the dense weight-only GEMM: one thread per output
// element, a k loop that decodes every weight from the packed layout through the element
// accessors of moe_gemm_layout.cuh, fp32 accumulation. Slow on purpose: it is the readable
// definition of what moe_grouped_gemm.cuh computes (the tests also check it against a CPU double
// reference built from the unpacked weights), and the benchmark's "how far did tiling get us".
#include <cstdint>

#if !defined(EAGLESIM_MOE_EMULATE)
#include <cuda_bf16.h>
#endif

#include "moe_gemm_layout.cuh"
#include "moe_grouped_gemm.cuh"

namespace eaglesim::kernels::moe {

// Weight (n, k) of one expert, dequantised, with its block/group scale applied (the per-channel
// fp8 scale is applied to the sum, as in the fast kernel).
template <WFormat F>
__device__ float reference_weight(const std::uint8_t* w, const std::uint8_t* scales, int n_total, int k_total, int n,
                                  int k) {
  const PackedPos pos = packed_weight_pos(F, k_total, n, k);
  if constexpr (F == WFormat::bf16) {
    return bf16_bits_to_float(static_cast<std::uint16_t>(w[pos.byte] | (w[pos.byte + 1] << 8)));
  } else if constexpr (is_fp8(F)) {
    float v = e4m3_to_float(w[pos.byte]);
    if constexpr (F == WFormat::fp8_block) {
      const int kblocks = (k_total + 127) / 128;
      v *= reinterpret_cast<const float*>(scales)[(n / 128) * kblocks + k / 128];
    }
    return v;
  } else {
    (void)n_total;
    const int nibble = (w[pos.byte] >> pos.shift) & 15;
    const std::int64_t si = packed_int4_scale_index(F, k_total, n, k / int4_group(F));
    const float s = bf16_bits_to_float(reinterpret_cast<const std::uint16_t*>(scales)[si]);
    return static_cast<float>(nibble - 8) * s;
  }
}

// grid (ceil(n / blockDim.x), rows); rows past the last expert's end are left alone.
template <WFormat F>
__global__ void moe_gemm_reference_kernel(const GemmParams p) {
  const int row = blockIdx.y;
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= p.n) return;
  int e = 0;
  if (p.expert_offsets) {
    if (row >= p.expert_offsets[p.experts]) return;
    while (p.expert_offsets[e + 1] <= row) ++e;  // the expert whose row range holds `row`
  } else if (row >= p.dense_rows) {
    return;
  }
  const std::uint8_t* w = p.w + e * p.w_expert_bytes;
  const std::uint8_t* s = p.scales ? p.scales + e * p.s_expert_bytes : nullptr;
  const __nv_bfloat16* xr = p.x + static_cast<std::int64_t>(row) * p.k;
  float acc = 0.f;
  for (int k = 0; k < p.k; ++k) acc += __bfloat162float(xr[k]) * reference_weight<F>(w, s, p.n, p.k, n, k);
  if constexpr (F == WFormat::fp8_channel) acc *= reinterpret_cast<const float*>(s)[n];
  p.y[static_cast<std::int64_t>(row) * p.n + n] = __float2bfloat16(acc);
}

}  // namespace eaglesim::kernels::moe
