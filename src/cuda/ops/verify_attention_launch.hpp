#pragma once
// Verify/decode attention for a batch of requests with ragged KV lengths: the launch parameters
// (device pointers, strides, mask) and the compiled entry points. Host C++ only (no CUDA
// headers). The plan (kernel variant, splits, work list, workspace) is made by the planner of
// cost/verify_attention_plan.hpp, which the cost model reads too; its names are re-declared
// here in eaglesim::cuda for the CUDA code.
//
// Use: plan = plan_verify_attention(shape, kv_len_host); allocate plan.workspace_bytes of device
// memory; upload the plan once (before any graph capture); launch as often as needed
// (graph-capturable): verify_attention_upload / verify_attention_launch below, or the inline
// upload_verify_attention_plan / launch_verify_attention of kernels/verify_attention.cuh.
#include <cstdint>

#include "cost/verify_attention_plan.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*; named here so this header needs no CUDA headers

namespace eaglesim::cuda {

namespace verify_attention_config = ::eaglesim::verify_attention_config;
using ::eaglesim::AttentionMaskKind;
using ::eaglesim::chain_mask_words;
using ::eaglesim::choose_verify_attention_kernel;
using ::eaglesim::combine_warps_per_row;
using ::eaglesim::describe;
using ::eaglesim::plan_verify_attention;
using ::eaglesim::tree_mask_from_parents;
using ::eaglesim::validate_verify_attention_shape;
using ::eaglesim::variant_name;
using ::eaglesim::verify_attention_flops;
using ::eaglesim::verify_attention_min_bytes;
using ::eaglesim::VerifyAttentionCombineItem;
using ::eaglesim::VerifyAttentionDevice;
using ::eaglesim::VerifyAttentionKernelConfig;
using ::eaglesim::VerifyAttentionKind;
using ::eaglesim::VerifyAttentionPlan;
using ::eaglesim::VerifyAttentionPlanOptions;
using ::eaglesim::VerifyAttentionShape;
using ::eaglesim::VerifyAttentionVariant;
using ::eaglesim::VerifyAttentionWorkItem;

// Device pointers and strides of one launch. Strides are in elements; 0 picks the packed value.
struct VerifyAttentionParams {
  const void* q = nullptr;  // bf16
  const void* k = nullptr;  // bf16
  const void* v = nullptr;  // bf16; MLA: must equal k (V is read from the K rows)
  void* out = nullptr;      // bf16
  std::int64_t q_token_stride = 0;    // default heads * head_dim_qk
  std::int64_t out_token_stride = 0;  // default heads * head_dim_v
  std::int64_t k_token_stride = 0;    // default kv_heads * head_dim_qk
  std::int64_t k_head_stride = 0;     // default head_dim_qk
  std::int64_t v_token_stride = 0;    // default kv_heads * head_dim_v
  std::int64_t v_head_stride = 0;     // default head_dim_v
  const std::int32_t* kv_indptr = nullptr;  // device [batch + 1] (only [0, batch) is read)
  const std::int32_t* kv_len = nullptr;     // device [batch]; must equal what the plan was made from
  AttentionMaskKind mask_kind = AttentionMaskKind::chain;
  const std::uint32_t* mask = nullptr;  // device, tree only: [q_tokens] or [batch * q_tokens]
  bool mask_per_request = false;
  float scale = 0;  // softmax scale; 0 means 1 / sqrt(head_dim_qk)
};

// How the op's kernels are launched on an explicit stream (the legacy NULL stream gets plain
// launches: it synchronises implicitly with every other stream, which neither overlap relaxes).
//   early_start: the attention kernel with programmatic stream serialization (PDL). Its blocks
//     start while the previous kernel finishes and load the work list, kv_indptr, kv_len and the
//     KV tiles wholly below the draft positions before they wait for it; Q, the mask words and
//     the draft positions' KV are read after. So those first inputs must not be written by
//     kernels still running on the stream (in a serving step they are not: the cache append
//     writes only the draft positions).
//   overlap_combine: the combine with PDL, launched while the attention grid runs.
struct VerifyAttentionLaunchOptions {
  bool early_start = true;
  bool overlap_combine = true;
};

// Fills in what params leaves to defaults (strides, MLA's V, the scale) and says whether the
// kernels can take it: every row must start on 16 bytes (pointers 16-byte aligned, strides
// multiples of 8 elements), MLA reads V from the K rows, a tree mask needs its words.
enum class VerifyAttentionCheck : int { ok = 0, invalid_value = 1, misaligned = 2 };
VerifyAttentionCheck resolve_verify_attention_params(const VerifyAttentionShape& shape, VerifyAttentionParams& params);

// Compiled entry points (src/cuda/ops/verify_attention.cu, part of the CUDA library) for host code
// that is not compiled by nvcc; CUDA code may call kernels/verify_attention.cuh directly. Each
// returns a cudaError_t value (0 = cudaSuccess).
//   upload: the plan's work list into the workspace; once per plan, before launches and outside
//           graph capture. launch: the op (graph-capturable). reference: the plain kernel.
int verify_attention_upload(const VerifyAttentionPlan& plan, void* workspace, CUstream_st* stream);
int verify_attention_launch(const VerifyAttentionParams& params, const VerifyAttentionPlan& plan, void* workspace,
                            CUstream_st* stream, const VerifyAttentionLaunchOptions& options = {});
int verify_attention_reference_launch(const VerifyAttentionParams& params, const VerifyAttentionShape& shape,
                                      CUstream_st* stream);

}  // namespace eaglesim::cuda
