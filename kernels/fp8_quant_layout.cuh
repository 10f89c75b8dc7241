#pragma once
// The fp8 (e4m3) activation quantisation an engine runs before a W8A8 GEMM, and the scale
// layouts cuBLASLt's fp8 GEMMs read on Hopper. Plain C++ (host-compilable) with __host__
// __device__ helpers: the quantisation kernels (fp8_act_quant.cuh and its reference), the GEMM's
// host side (src/cuda/ops/lt_gemm.cpp, fp8_scaling.hpp) and the tests share one definition.
//
// Quantisation of a set of bf16 values (a row for per-token scales, 128 values of a row for
// per-group scales), as SGLang's per_token_group_quant_fp8 and vLLM's dynamic per-token quant do:
//   scale = max(amax, kAmaxFloor) / 448      (448: the largest finite e4m3)
//   q     = e4m3(x * (1 / scale))            (round to nearest even, saturated to +-448)
// so that x ~ q * scale; the GEMM multiplies the scales back in. A static per-tensor scale
// (ModelOpt-style checkpoints) skips the amax: scale is given.
//
// Scale layouts (cuBLAS docs, "128-element 1D and 128x128 2D block scaling for FP8 data types" and
// "outer vector scaling"; cuBLAS calls the weights A, with M = n output channels, and the
// activations B, with N = m rows, in the "TN" form lt_gemm.hpp describes):
//   per-token (OUTER_VEC_32F on x):   fp32 [m], one per row;
//   per-channel (OUTER_VEC_32F on W): fp32 [n], one per output channel;
//   per-group (VEC128_32F on x):      fp32 [L][m4], L = ceil(k / 128) groups along k, rows
//                                     fastest ("N-major"), m4 = m rounded up to a multiple of 4
//                                     (cuBLASLt takes M and N multiples of 4 in this mode, so a
//                                     GEMM of m rows computes m4, the rows past m being zeros);
//   per-block (BLK128x128_32F on W):  fp32 [ceil(n / 128)][L4], k-blocks fastest ("K-major"),
//                                     L4 = L rounded up to a multiple of 4 (the stride between
//                                     consecutive channel blocks must be one).
// A partial last group or block (k or n not a multiple of 128) has its own scale like any other.
// Every scale tensor starts on a 16-byte boundary.
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define EAGLESIM_FP8_HD __host__ __device__ __forceinline__
#else
#define EAGLESIM_FP8_HD inline
#endif

namespace eaglesim::kernels::fp8 {

constexpr float kE4m3Max = 448.0f;
// The least amax a scale is computed from: an all-zero row or group gets a tiny, finite scale
// (SGLang's eps), so 1 / scale stays finite and its values quantise to zero.
constexpr float kAmaxFloor = 1e-10f;
constexpr int kGroupK = 128;  // values per group along k (and per block side of the weights)
constexpr int kRowAlign = 4;  // rows of a per-group-scaled GEMM are a multiple of this

// How the activations are scaled.
enum class ActScaling : int {
  tensor_static = 0,  // one given fp32 scale for the whole tensor
  per_token = 1,      // one per row (dynamic)
  per_group = 2,      // one per row and 128 values of k (dynamic)
};

EAGLESIM_FP8_HD int groups_along_k(int k) { return (k + kGroupK - 1) / kGroupK; }
EAGLESIM_FP8_HD int round_up4(int v) { return (v + kRowAlign - 1) / kRowAlign * kRowAlign; }

// The rows a GEMM over `rows` activation rows computes with these activation scales.
EAGLESIM_FP8_HD int gemm_rows(ActScaling s, int rows) { return s == ActScaling::per_group ? round_up4(rows) : rows; }

// Where the scale of row `row`, group `group` sits (per-group layout, `gemm_rows` rows).
EAGLESIM_FP8_HD std::size_t group_scale_index(int row, int group, int rows_padded) {
  return static_cast<std::size_t>(group) * static_cast<std::size_t>(rows_padded) + static_cast<std::size_t>(row);
}

// Floats of the activation scales for `rows` rows of k values.
EAGLESIM_FP8_HD std::size_t act_scale_count(ActScaling s, int rows, int k) {
  switch (s) {
    case ActScaling::per_token: return static_cast<std::size_t>(rows);
    case ActScaling::per_group:
      return static_cast<std::size_t>(groups_along_k(k)) * static_cast<std::size_t>(round_up4(rows));
    default: return 1;
  }
}

// Where the scale of the 128 x 128 weight block (n_block, k_block) sits, and how many floats the
// per-block tensor of an [n, k] weight takes.
EAGLESIM_FP8_HD std::size_t block_scale_index(int n_block, int k_block, int k) {
  return static_cast<std::size_t>(n_block) * static_cast<std::size_t>(round_up4(groups_along_k(k))) +
         static_cast<std::size_t>(k_block);
}
EAGLESIM_FP8_HD std::size_t block_scale_count(int n, int k) {
  return static_cast<std::size_t>((n + kGroupK - 1) / kGroupK) * static_cast<std::size_t>(round_up4(groups_along_k(k)));
}

// The dynamic scale of values whose largest magnitude is `amax`.
EAGLESIM_FP8_HD float scale_from_amax(float amax) { return (amax > kAmaxFloor ? amax : kAmaxFloor) / kE4m3Max; }

}  // namespace eaglesim::kernels::fp8
