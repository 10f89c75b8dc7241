#pragma once
// One GEMM shape prepared for cuBLASLt: y[m, n] = x[m, k] . W[n, k]^T with the weights in
// bf16 or fp8 (e4m3, per-tensor scales), bf16 output, fp32 accumulation. cuBLASLt's heuristic
// proposes up to kCandidates algorithms for exactly this shape and the shared workspace; tune()
// times each on the real buffers and keeps the fastest, as serving stacks' autotuned GEMMs do
// (the heuristic's first choice is often not the fastest at the few rows of a verify step).
// Layout: cuBLASLt is column-major, so W (row-major [n, k]) is A transposed and x (row-major
// [m, k]) is B: the "TN" form, which is also the one Hopper's fp8 GEMMs require.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/dtype.hpp"

namespace eaglesim::cuda {

class LtGemm {
 public:
  // dtype: bf16 or fp8. For fp8, a_scale/b_scale are device pointers to one float each.
  LtGemm(cublasLtHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
         std::size_t workspace_bytes, const float* a_scale = nullptr, const float* b_scale = nullptr);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  static constexpr int kCandidates = 8;

  void run(const void* weight, const void* x, void* y, void* workspace, cudaStream_t stream) const;
  // Times every candidate (median of a few runs after a warm-up, on a stream of its own) with
  // these buffers and keeps the fastest. Outside any graph capture; synchronises the device.
  void tune(const void* weight, const void* x, void* y, void* workspace);
  std::string describe() const;

 private:
  cublasLtHandle_t handle_;
  std::int64_t m_, n_, k_;
  DType dtype_;
  std::size_t workspace_bytes_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulHeuristicResult_t candidates_[kCandidates]{};
  int candidate_count_ = 0;
  int chosen_ = 0;
  bool tuned_ = false;
};

}  // namespace eaglesim::cuda
