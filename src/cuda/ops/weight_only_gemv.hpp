#pragma once
// Launch of the dense weight-only GEMV kernel (kernels/weight_only_gemv.cuh) for plans with
// plan.gemv set; launch_grouped_gemm routes those plans here.
#include <cuda_runtime.h>

#include "cuda/ops/moe_gemm_plan.hpp"

namespace eaglesim::cuda {

// One kernel launch (a cluster launch when plan.gemv_split > 1), capturable. args as for
// launch_grouped_gemm with expert_offsets = nullptr.
void launch_weight_only_gemv(const GroupedGemmPlan& plan, const GroupedGemmArgs& args, cudaStream_t stream);

}  // namespace eaglesim::cuda
