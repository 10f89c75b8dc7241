#pragma once
// Host side of the dense int4 GEMM on wgmma (kernels/int4_wgmma_gemm.cuh): its tile and split
// choice and shared memory (int4_wgmma_plan.cpp, host-only) and the launch (int4_wgmma_gemm.cu). plan_grouped_gemm (moe_gemm_plan.hpp) fills a
// GroupedGemmPlan with these for dense int4 GEMMs of kInt4WgmmaMinRows rows or more, and
// launch_grouped_gemm / prepare_grouped_gemm call the functions below for such a plan; callers
// need nothing else. The kernel is compiled for sm_90a only.
#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "cuda/ops/moe_gemm_plan.hpp"

namespace eaglesim::cuda {

// Rows from which a dense int4 GEMM runs on wgmma (below, the weight stream sets the time and
// the stream-K / GEMV kernels serve it).
constexpr int kInt4WgmmaMinRows = 33;
constexpr int kInt4WgmmaTileN = 192;  // output channels per CTA
constexpr int kInt4WgmmaThreads = 416;

// The replay's setting, from the environment (read on every call): EAGLESIM_INT4_GEMM=wgmma runs
// dense int4 GEMMs of kInt4WgmmaMinRows+ rows on the wgmma kernel (compute capability 9.0), unset
// or `stream_k` on the stream-K kernel. Another value is an InputError naming the variable.
inline constexpr const char* kInt4GemmEnv = "EAGLESIM_INT4_GEMM";
bool int4_wgmma_requested();

// Empty when the wgmma kernel can run the dense shape, else why not.
std::string int4_wgmma_unsupported_reason(GemmWeightFormat format, int m, int n, int k);
// Fills the wgmma fields of a dense int4 plan (rows tile, splits, grid, shared memory, workspace).
void plan_int4_wgmma(GroupedGemmPlan& plan, int sm_count);

// Shared-memory opt-in for the plan's instance on the current device; InputError on a GPU other
// than compute capability 9.0. prepare_grouped_gemm calls it once per device and instance.
void prepare_int4_wgmma_gemm(const GroupedGemmPlan& plan);
// One launch, stream-ordered and capturable, of a prepared plan (launch_grouped_gemm prepares it).
void launch_int4_wgmma_gemm(const GroupedGemmPlan& plan, const GroupedGemmArgs& args, void* workspace,
                            cudaStream_t stream);

}  // namespace eaglesim::cuda
