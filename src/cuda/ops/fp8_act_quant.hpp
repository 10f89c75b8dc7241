#pragma once
// The activation quantisation before a W8A8 fp8 GEMM (kernels/fp8_act_quant.cuh): bf16 rows to
// e4m3 with the scales the GEMM's mode reads (cuda/ops/fp8_scaling.hpp):
//   tensor   q = e4m3(x / s) with the given per-tensor scale s (scales: read, one float);
//   channel  one dynamic scale per row, fp32 [rows];
//   block    one dynamic scale per row and 1 x 128 group, fp32 [ceil(k/128)][rows_padded], rows
//            fastest; q and the scales cover fp8_gemm_rows(block, rows) rows, the ones past
//            `rows` zeros with scale 1.
// Stream-ordered and capturable; checks its arguments and its launch.
#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "cuda/ops/fp8_scaling.hpp"

namespace eaglesim::cuda {

struct Fp8QuantArgs {
  const void* x = nullptr;  // bf16 [rows][k], 16-byte aligned
  int rows = 0, k = 0;
  void* q = nullptr;        // e4m3 [fp8_gemm_rows(scaling, rows)][k], 16-byte aligned
  float* scales = nullptr;  // fp8_act_scale_floats(scaling, rows, k) floats, 16-byte aligned
};

// Empty when the kernels take the arguments, else why not (k % 8, alignment, sizes).
std::string fp8_act_quant_unsupported_reason(const Fp8QuantArgs& a);

// early_start: programmatic dependent launch (on an explicit stream), as the replay's row-wise
// kernels are launched.
void launch_fp8_act_quant(Fp8Scaling scaling, const Fp8QuantArgs& a, cudaStream_t stream, bool early_start = false);
// The plain reference kernel (kernels/fp8_act_quant_reference.cuh), same outputs bit for bit.
void launch_fp8_act_quant_reference(Fp8Scaling scaling, const Fp8QuantArgs& a, cudaStream_t stream);

}  // namespace eaglesim::cuda
