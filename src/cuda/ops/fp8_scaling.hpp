#pragma once
// How the replay's fp8 (e4m3) GEMMs on cuBLASLt scale their operands, what each mode needs of the
// shape and of the buffers, and the replay's two settings for dense fp8 GEMMs. Host code only.
//
// The three modes are how fp8 checkpoints ship and how engines run them as W8A8 on Hopper
// (docs/kernels/fp8-gemm.md):
//   tensor   one fp32 scale per operand (ModelOpt-style static scales; cuBLASLt SCALAR_32F);
//   channel  one per output channel of W and one per row of x, the rows quantised per token at
//            run time (RedHat / neuralmagic FP8-dynamic checkpoints; OUTER_VEC_32F on both);
//   block    one per 128 x 128 block of W and per 1 x 128 group of each row of x
//            (DeepSeek-V3 / Kimi-K2 checkpoints, per_token_group_quant_fp8; BLK128x128_32F on
//            W, VEC128_32F on x). cuBLASLt takes this mode for row counts that are multiples of
//            4, so a GEMM of m rows computes fp8_gemm_rows(block, m) rows (zeros past m).
// Scale layouts: kernels/fp8_quant_layout.cuh.
#include <cstddef>
#include <cstdint>
#include <string>

namespace eaglesim::cuda {

enum class Fp8Scaling { tensor, channel, block };

const char* to_string(Fp8Scaling s);
bool parse_fp8_scaling(const std::string& name, Fp8Scaling& out);  // "tensor", "channel", "block"
// What the mode scales, for notes and details: "128x128 weight blocks, 1x128 activation groups".
const char* describe_scaling(Fp8Scaling s);

// Rows a GEMM of `m` activation rows computes in this mode (x and y must hold that many rows).
std::int64_t fp8_gemm_rows(Fp8Scaling s, std::int64_t m);
// Floats of the weights' scales of an [n, k] weight, and of the activations' scales of m rows.
std::size_t fp8_weight_scale_floats(Fp8Scaling s, std::int64_t n, std::int64_t k);
std::size_t fp8_act_scale_floats(Fp8Scaling s, std::int64_t m, std::int64_t k);

// Empty when cuBLASLt's fp8 GEMMs take the shape in this mode, else why not: operands and output
// rows on 16-byte boundaries (k a multiple of 16, n of 8), the block mode's output width a
// multiple of 4, every dimension within int range.
std::string fp8_lt_unsupported_reason(Fp8Scaling s, std::int64_t m, std::int64_t n, std::int64_t k);

// The replay's settings for dense fp8 GEMMs, from the environment (read on every call; an
// unknown value is an InputError naming the variable):
//   EAGLESIM_FP8_GEMM     rule (default): the rule of cost/low_bit_gemm_kernel.hpp, which the
//                         simulator's fitted models follow too; weight_only: the replay before
//                         cuBLASLt's fp8 path (eaglesim's weight-only kernels up to 256 rows,
//                         cuBLASLt per-tensor above, `act_quant_fp8` streamed as bytes), for A/B
//                         runs; cublas: cuBLASLt for every dense fp8 GEMM;
//   EAGLESIM_FP8_SCALING  block (default: the checkpoints the replay's packed fp8 weights model),
//                         channel or tensor: the mode of the cuBLASLt fp8 GEMMs and of the
//                         activation quantisation before them.
enum class Fp8GemmPath { rule, weight_only, cublas };
const char* to_string(Fp8GemmPath p);
Fp8GemmPath fp8_gemm_path_from_env();
Fp8Scaling fp8_scaling_from_env();
inline constexpr const char* kFp8GemmEnv = "EAGLESIM_FP8_GEMM";
inline constexpr const char* kFp8ScalingEnv = "EAGLESIM_FP8_SCALING";

}  // namespace eaglesim::cuda
