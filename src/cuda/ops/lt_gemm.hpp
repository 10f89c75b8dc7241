#pragma once
// One GEMM shape prepared for cuBLAS: y[m, n] = x[m, k] . W[n, k]^T with the weights in bf16 or
// fp8 (e4m3 weights and activations, scaled per tensor, per channel and token, or per 128 x 128
// block and 1 x 128 group: cuda/ops/fp8_scaling.hpp), bf16 output, fp32 accumulation. Untuned, it runs cuBLASLt's
// heuristic first choice. tune() times every candidate of gemm_candidates.hpp (cuBLASLt's
// heuristic proposals, split-K variants, enumerated tile sizes, and the cublasGemmEx call PyTorch
// makes) the way the replay runs them, in a CUDA graph with a cold L2, after checking each one's
// output against the reference's; the fastest is kept and remembered for the shape for the rest
// of the process, as serving stacks' autotuned GEMMs are (the heuristic's first choice is often
// not the fastest at the few rows of a verify step). docs/kernels/dense-gemm.md has the method.
// Layout: cuBLAS is column-major, so W (row-major [n, k]) is A transposed and x (row-major
// [m, k]) is B: the "TN" form, which is also the one Hopper's fp8 GEMMs require.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/dtype.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "cuda/ops/fp8_scaling.hpp"
#include "cuda/ops/gemm_candidates.hpp"

namespace eaglesim::cuda {

// cuBLASLt (12.9.1 onwards) refuses an fp8 GEMM whose scale pointers are not 16-byte aligned
// with CUBLAS_STATUS_NOT_SUPPORTED at launch, after its heuristic proposed algorithms for it:
// every candidate would fail. LtGemm checks the alignment when it is made.
constexpr std::size_t kLtScaleAlignment = 16;

// Per-tensor fp8 scales of 1 for A and B (the replay's fp8 operands are random e4m3 values, not
// quantised from a wider range), each on its own kLtScaleAlignment boundary, on the current device.
class UnitFp8Scales {
 public:
  UnitFp8Scales();
  const float* a() const { return buffer_.as<const float>(); }
  const float* b() const { return buffer_.as<const float>() + kLtScaleAlignment / sizeof(float); }

 private:
  DeviceBuffer buffer_;
};

// What tune() did for the shape.
struct GemmTuning {
  bool done = false;
  bool remembered = false;  // taken from an earlier tune() of the same shape in this process
  int timed = 0;            // candidates timed
  int skipped = 0;          // candidates left untimed when the shape's time budget ran out
  std::vector<std::string> rejected;  // "name: why" for the candidates that did not run or computed something else
  double us = 0;            // the chosen one, per call in a graph, cold L2 (0 when nothing was timed)
  double seconds = 0;       // wall time tune() took
};

// The scales of one fp8 GEMM call: device pointers, each on a kLtScaleAlignment boundary, laid out
// as the GEMM's Fp8Scaling says (kernels/fp8_quant_layout.cuh). Null: the ones the LtGemm was
// made with.
struct LtScales {
  const float* weight = nullptr;  // cuBLASLt's A scales
  const float* act = nullptr;     // cuBLASLt's B scales
};

class LtGemm {
 public:
  // dtype: bf16 or fp8. For fp8, a_scale (the weights') and b_scale (the activations') are device
  // pointers aligned to kLtScaleAlignment, laid out as `scaling` says (tensor: one float each;
  // UnitFp8Scales holds such a pair); they serve tune() and every call that gives none of its own.
  // In the block mode the GEMM computes rows() = fp8_gemm_rows(block, m) rows: x and y hold that
  // many. A shape or mode cuBLASLt does not take is an InputError (fp8_lt_unsupported_reason),
  // one it proposes no algorithm for a DeviceError naming the mode.
  // blas: the handle of the cublasGemmEx candidate (bf16 only); null leaves that candidate out.
  LtGemm(cublasLtHandle_t lt, cublasHandle_t blas, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
         std::size_t workspace_bytes, const float* a_scale = nullptr, const float* b_scale = nullptr,
         Fp8Scaling scaling = Fp8Scaling::tensor);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  std::int64_t rows() const { return m_; }
  Fp8Scaling scaling() const { return scaling_; }

  // The chosen candidate (the heuristic's first before tune()). Capturable. `scales` (fp8): this
  // call's scales, checked for alignment.
  void run(const void* weight, const void* x, void* y, void* workspace, cudaStream_t stream,
           const LtScales& scales = {}) const;
  // Times the candidates on these buffers (a cold L2 each time, on a stream of its own) and keeps
  // the fastest whose output matches the reference's, or the one an earlier tune() of the same
  // shape, device and handles' kinds chose. Outside any graph capture; synchronises the device.
  void tune(const void* weight, const void* x, void* y, void* workspace);

  // The candidates: the heuristic's before tune(), all of them after a tune() that timed them.
  int candidate_count() const { return static_cast<int>(candidates_.size()); }
  const GemmCandidate& candidate(int c) const { return candidates_[c]; }
  int chosen() const { return chosen_; }
  // One candidate's run (tests check each against a reference); the library's status, not thrown
  // (a misaligned scale pointer is CUBLAS_STATUS_INVALID_VALUE).
  cublasStatus_t run_candidate(int c, const void* weight, const void* x, void* y, void* workspace,
                               cudaStream_t stream, const LtScales& scales = {}) const;
  // Adds the candidates beyond the heuristic's (what tune() times); once.
  void add_all_candidates();
  const GemmTuning& tuning() const { return tuning_; }
  std::string describe() const;

 private:
  // The candidate the output of every other is checked against: cuBLAS's default where it is a
  // candidate, else the heuristic's first choice.
  int reference_candidate() const;
  void time_candidates(const void* weight, const void* x, void* y, void* workspace);
  void release() noexcept;
  // Sets the fp8 scale modes and the fast-accumulation flag on the descriptor.
  void set_fp8_scaling(bool fast_accumulation);
  // Points the descriptor at `scales` (the defaults where null); false when one is misaligned.
  bool point_scales(const LtScales& scales) const;

  cublasLtHandle_t handle_;
  cublasHandle_t blas_;
  std::int64_t m_, n_, k_;
  DType dtype_;
  Fp8Scaling scaling_ = Fp8Scaling::tensor;
  std::size_t workspace_bytes_;
  LtScales default_scales_;
  // The scale pointers the descriptor holds now: calls with other scales set them first (each
  // LtGemm is used by one thread).
  mutable LtScales current_scales_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  std::vector<GemmCandidate> candidates_;
  bool all_candidates_ = false;
  int chosen_ = 0;
  GemmTuning tuning_;
};

}  // namespace eaglesim::cuda
