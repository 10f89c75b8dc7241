#pragma once
// The ways one GEMM shape (cuda::LtGemm: y[m, n] = x[m, k] . W[n, k]^T, bf16 or fp8 operands,
// bf16 output, fp32 accumulation) can be computed, which LtGemm::tune times against each other:
//   lt#r               cuBLASLt's heuristic, its r-th proposal (up to kHeuristicRequest of them);
//                      lt#0 is what an untuned GEMM runs;
//   lt#r splitK=s      a proposal whose output tiles leave the GPU partly idle (under one wave)
//                      with k split s ways, the partial sums reduced in fp32 where the algorithm
//                      allows it: the heuristic proposes few splits at the few rows of a verify step;
//   lt algo=a tile=t stages=s
//                      the algorithms cuBLASLt lists for the data types (cublasLtMatmulAlgoGetIds)
//                      in tile sizes the heuristic did not propose, the ones whose tiles fill the
//                      GPU's last wave best first;
//   cublas default     cublasGemmEx with CUBLAS_GEMM_DEFAULT_TENSOR_OP, the call PyTorch's
//                      at::cuda::blas::gemm makes for a bf16 torch.nn.functional.linear without bias
//                      (bf16 only), so the tuned choice is never slower than the library call
//                      PyTorch makes on the same shape.
// Every cuBLASLt configuration here has passed cublasLtMatmulAlgoCheck with the shape's
// descriptors and fits the workspace; whether it runs, and runs correctly, LtGemm::tune checks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cublasLt.h>

namespace eaglesim::cuda {

enum class GemmSource { heuristic, split_k, enumerated, cublas_default };

struct GemmCandidate {
  GemmSource source = GemmSource::heuristic;
  cublasLtMatmulAlgo_t algo{};  // cuBLASLt's configuration (unused by cublas_default)
  std::size_t workspace = 0;    // bytes of workspace it needs
  float waves = 0;              // cuBLASLt's estimate of the waves of CTAs it launches (0: none given)
  std::string name;             // unique within a shape's candidates: "lt#2 splitK=4", "cublas default"
};

// A GEMM shape as cuBLASLt describes it (the descriptors are LtGemm's).
struct GemmShapeDescriptors {
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // c serves as D as well
  cudaDataType_t in_type = CUDA_R_16BF;                          // A and B
  std::int64_t k = 0;
  std::size_t workspace_bytes = 0;
};

// Caps that keep a shape's tuning to a few dozen timed candidates (docs/kernels/dense-gemm.md).
constexpr int kHeuristicRequest = 32;
constexpr int kSplitKBases = 4;          // heuristic proposals split-K variants are made of
constexpr int kSplitKMax = 16;           // split-K variants in all
constexpr int kEnumeratedMax = 8;        // enumerated configurations kept
constexpr int kEnumerationChecks = 256;  // cublasLtMatmulAlgoCheck calls spent on finding them (shared out)

// cuBLASLt's heuristic proposals, best first; DeviceError when it has none for the shape.
std::vector<GemmCandidate> heuristic_candidates(const GemmShapeDescriptors& d);
// Split-K variants of the first proposals in `proposed` that run under one wave.
std::vector<GemmCandidate> split_k_candidates(const GemmShapeDescriptors& d, const std::vector<GemmCandidate>& proposed);
// Enumerated configurations not among `proposed`.
std::vector<GemmCandidate> enumerated_candidates(const GemmShapeDescriptors& d,
                                                 const std::vector<GemmCandidate>& proposed);
GemmCandidate cublas_default_candidate();

}  // namespace eaglesim::cuda
