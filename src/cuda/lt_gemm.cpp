#include "cuda/lt_gemm.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/median.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"

namespace eaglesim::cuda {

LtGemm::LtGemm(cublasLtHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
               std::size_t workspace_bytes, const float* a_scale, const float* b_scale)
    : handle_(handle), m_(m), n_(n), k_(k), dtype_(dtype), workspace_bytes_(workspace_bytes) {
  if (dtype != DType::bf16 && dtype != DType::fp8)
    throw InputError(fmt::format("cuBLASLt replay GEMM takes bf16 or fp8 weights, got {}", to_string(dtype)));
  const bool fp8 = dtype == DType::fp8;
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  try {
    EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    if (fp8) {
      if (!a_scale || !b_scale) throw DeviceError("fp8 GEMM needs device scale pointers");
      EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof(a_scale)));
      EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof(b_scale)));
      // Serving stacks run fp8 GEMMs with fast accumulation; so do we.
      const std::int8_t fast = 1;
      EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
    }
    // A = W stored [n, k] row-major = k x n column-major (ld k), used transposed.
    EAGLESIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, in_type, k, n, k));
    // B = x stored [m, k] row-major = k x m column-major (ld k).
    EAGLESIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, in_type, k, m, k));
    // C = D = y stored [m, n] row-major = n x m column-major (ld n).
    EAGLESIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c_, CUDA_R_16BF, n, m, n));

    cublasLtMatmulPreference_t pref = nullptr;
    EAGLESIM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    std::uint64_t ws = workspace_bytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    int found = 0;
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, c_, c_, pref, kCandidates, candidates_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
      throw DeviceError(fmt::format("cuBLASLt has no algorithm for GEMM m={} n={} k={} {} ({})", m, n, k,
                                    to_string(dtype), cublasLtGetStatusName(st)));
    candidate_count_ = found;
  } catch (...) {
    this->~LtGemm();
    throw;
  }
}

LtGemm::~LtGemm() {
  if (c_) cublasLtMatrixLayoutDestroy(c_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  c_ = b_ = a_ = nullptr;
  op_ = nullptr;
}

void LtGemm::run(const void* weight, const void* x, void* y, void* workspace, cudaStream_t stream) const {
  const float alpha = 1.f, beta = 0.f;
  EAGLESIM_CUBLAS_CHECK(cublasLtMatmul(handle_, op_, &alpha, weight, a_, x, b_, &beta, y, c_, y, c_,
                                       &candidates_[chosen_].algo, workspace, workspace_bytes_, stream));
}

void LtGemm::tune(const void* weight, const void* x, void* y, void* workspace) {
  tuned_ = true;
  if (candidate_count_ < 2) return;
  constexpr int kWarmup = 2, kRuns = 5;
  // Every timed run starts with a cold L2, as a replayed step's GEMMs do (the weights were last
  // read a layer ago): without this, a shape whose weights fit in L2 would be tuned on hot data
  // and pick algorithms that lose once the weights come from HBM.
  int device = 0, l2_bytes = 0;
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
  EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  const DeviceBuffer flush(2 * static_cast<std::size_t>(std::max(l2_bytes, 1 << 20)));
  Stream stream;
  Event start, stop;
  const float alpha = 1.f, beta = 0.f;
  float best_ms = 0;
  for (int c = 0; c < candidate_count_; ++c) {
    auto launch = [&] {
      return cublasLtMatmul(handle_, op_, &alpha, weight, a_, x, b_, &beta, y, c_, y, c_, &candidates_[c].algo,
                            workspace, workspace_bytes_, stream.get());
    };
    // A candidate the library proposed but cannot run here is skipped, not an error.
    if (launch() != CUBLAS_STATUS_SUCCESS) continue;
    for (int w = 1; w < kWarmup; ++w) EAGLESIM_CUBLAS_CHECK(launch());
    std::vector<double> ms;
    for (int r = 0; r < kRuns; ++r) {
      EAGLESIM_CUDA_CHECK(cudaMemsetAsync(flush.get(), r & 0xff, flush.bytes(), stream.get()));
      EAGLESIM_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
      EAGLESIM_CUBLAS_CHECK(launch());
      EAGLESIM_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
      EAGLESIM_CUDA_CHECK(cudaEventSynchronize(stop.get()));
      ms.push_back(elapsed_ms(start.get(), stop.get()));
    }
    const double t = median(ms);
    if (c == 0 || t < best_ms) {
      best_ms = static_cast<float>(t);
      chosen_ = c;
    }
  }
  EAGLESIM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
}

std::string LtGemm::describe() const {
  return fmt::format("cublasLt m={} n={} k={} {} ws={}{}", m_, n_, k_, to_string(dtype_),
                     candidates_[chosen_].workspaceSize,
                     tuned_ ? fmt::format(" (fastest of {} algorithms)", candidate_count_) : "");
}

}  // namespace eaglesim::cuda
