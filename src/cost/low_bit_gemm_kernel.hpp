#pragma once
// Which of the replay's kernels runs a dense GEMM over int4 or fp8 weights. Three kernels with
// three cost shapes run them: the GEMV kernel (a launch and one DRAM round trip, then the weight
// stream), the stream-K weight-only kernel (a longer fixed cost: pipeline fill, the split fix-up)
// and cuBLASLt: fp8 GEMMs the GEMV kernel does not take as engines run them, W8A8 on the fp8
// tensor cores (the activations quantised by the op before), int4 GEMMs above
// kWeightOnlyMaxRows rows over stand-in weights of the same bytes. The rule lives here, below
// both, so that the replay's plan (cuda/replay/rank_program) picks by it and the simulator's
// fitted models (cost/fitted_model) fit and price each kernel on its own.
#include <cstdint>

#include "trace/trace.hpp"

namespace eaglesim {

enum class LowBitGemmKernel { gemv, stream_k, cublas };

// Rows up to which a dense GEMM can run as the GEMV kernel, and up to which eaglesim's kernels
// run a dense low-bit GEMM at all (cuBLASLt above: these rows are compute-bound, and the
// mma.sync kernels lose to cuBLAS's wgmma there).
inline constexpr int kGemvMaxRows = 16;
inline constexpr std::int64_t kWeightOnlyMaxRows = 256;
// A dense fp8 GEMM runs on the GEMV kernel where gemv_picked (W8A16, at most kGemvMaxRows rows)
// and on cuBLASLt's fp8 GEMM otherwise, never on the stream-K kernel: measured on 1 x H100
// (bench_fp8_gemm, the Llama-3.1-70B TP8 projections, docs/kernels/fp8-gemm.md), cuBLASLt's block-scaled GEMM beat the stream-K kernel on every shape it
// ran (o at 16 rows 6.7 against 13.5 us, gate_up at 128 rows 27.8 against 110.3 us), while the
// GEMV kernel beat it at 1-16 rows on the shapes the GEMV kernel takes (qkv at 16 rows 11.6
// against 13.9 us, o at one row 5.1 against 6.7 us).

// Whether the plan picks the GEMV kernel for a dense GEMM of `rows` rows, `n` output channels and
// `packed_bytes` of weights plus scales, measured on 1 x H200 (bench_gemm's "GEMV kernel vs
// stream-K kernel" table, docs/kernels/gemv.md): up to 16 MB of int4 (its decode
// costs more issue slots per byte, which the stream-K kernel's deeper pipeline hides better) or
// 40 MB of fp8/bf16; above 8 rows half of that and at most 2048 channels (every CTA copies 9-16
// activation rows per block group, which costs more than it saves on wide outputs).
bool gemv_picked(bool int4, std::int64_t rows, std::int64_t n, double packed_bytes);

// The rows of one work item of the weight-only kernels for `rows` rows per item: the smallest of
// 8, 16, 32 and 64 that holds them (64-row items beyond: an op of more rows takes several).
int weight_only_row_tile(std::int64_t rows);

// The row tile of a dense int4 / fp8 GEMM on the stream-K weight-only kernel: at most 16 rows
// for int4 and, above 48 rows, 32 for fp8 (an op of more rows takes several items, each streaming
// its channels' weights). Measured on 1 x H200 (bench_gemm --filter dense over the Llama-3.1-70B
// TP1/TP8 and Kimi-K2 TP8 projections at 24-256 rows, docs/kernels/moe-and-quant-gemm.md): the
// 64-row tile was 1.5-2.1x slower than the best (geometric mean per row count; up to 3.7x on
// narrow outputs), the 16-row tile best for int4 at every row count, 32 for fp8 from 64 rows.
int dense_weight_only_row_tile(bool int4, std::int64_t rows);

// The packed bytes the replay's format of `op`'s weights takes (int4: group-32 bf16 scales; fp8:
// 128 x 128 fp32 block scales), up to the 16-channel padding of the packed layout.
double low_bit_packed_bytes(const Op& op);

// The kernel that runs a dense (gemm / lm_head) op of int4 or fp8 weights: the GEMV kernel where
// gemv_picked; else for fp8 cuBLASLt, for int4 cuBLASLt above kWeightOnlyMaxRows rows and the
// stream-K kernel up to them.
LowBitGemmKernel low_bit_gemm_kernel(const Op& op);

}  // namespace eaglesim
