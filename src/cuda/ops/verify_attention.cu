// The verify-attention kernels compiled once into the CUDA library, behind the host-only
// declarations of cuda/ops/verify_attention_launch.hpp (so .cpp code can launch them).
#include "cuda/ops/verify_attention_launch.hpp"
#include "verify_attention.cuh"
#include "verify_attention_reference.cuh"

namespace eaglesim::cuda {

int verify_attention_upload(const VerifyAttentionPlan& plan, void* workspace, CUstream_st* stream) {
  return static_cast<int>(kernels::verify::upload_verify_attention_plan(plan, workspace, stream));
}

int verify_attention_launch(const VerifyAttentionParams& params, const VerifyAttentionPlan& plan, void* workspace,
                            CUstream_st* stream, const VerifyAttentionLaunchOptions& options) {
  return static_cast<int>(kernels::verify::launch_verify_attention(params, plan, workspace, stream, options));
}

int verify_attention_reference_launch(const VerifyAttentionParams& params, const VerifyAttentionShape& shape,
                                      CUstream_st* stream) {
  return static_cast<int>(kernels::verify::launch_verify_attention_reference(params, shape, stream));
}

}  // namespace eaglesim::cuda
