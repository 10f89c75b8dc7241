#pragma once
// The plain reference of fp8_act_quant.cuh: one thread per scale (a row, or a row's 128-value
// group), its values read one by one, converted one at a time. Same rule, same layouts
// (fp8_quant_layout.cuh); the GPU tests hold both kernels to a host reference bit for bit.
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "fp8_quant_layout.cuh"

namespace eaglesim::kernels::fp8 {

struct ReferenceQuantParams {
  const __nv_bfloat16* x = nullptr;  // [rows][k]
  std::uint8_t* q = nullptr;         // e4m3 [rows_padded][k]
  float* scales = nullptr;
  int rows = 0, rows_padded = 0, k = 0;
  ActScaling scaling = ActScaling::per_group;
};

__global__ void quant_reference_kernel(ReferenceQuantParams p) {
  const bool grouped = p.scaling == ActScaling::per_group;
  const int units = grouped ? groups_along_k(p.k) : 1;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(p.rows_padded) * units) return;
  const int row = static_cast<int>(t / units), unit = static_cast<int>(t % units);
  const int c0 = grouped ? unit * kGroupK : 0;
  const int c1 = grouped ? min(p.k, c0 + kGroupK) : p.k;
  const bool live = row < p.rows;
  auto value = [&](int c) {
    return live ? __bfloat162float(p.x[static_cast<std::size_t>(row) * p.k + c]) : 0.0f;
  };
  float scale = 1.0f;
  if (p.scaling == ActScaling::tensor_static) {
    scale = p.scales[0];
  } else if (live) {
    float amax = 0.0f;
    for (int c = c0; c < c1; ++c) amax = fmaxf(amax, fabsf(value(c)));
    scale = scale_from_amax(amax);
  }
  const float inv = 1.0f / scale;
  for (int c = c0; c < c1; ++c)
    p.q[static_cast<std::size_t>(row) * p.k + c] = __nv_cvt_float_to_fp8(value(c) * inv, __NV_SATFINITE, __NV_E4M3);
  if (p.scaling == ActScaling::per_token) p.scales[row] = scale;
  if (grouped) p.scales[group_scale_index(row, unit, p.rows_padded)] = scale;
}

}  // namespace eaglesim::kernels::fp8
