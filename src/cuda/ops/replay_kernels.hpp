#pragma once
// Host entry points of the replay op kernels (kernels/replay_*.cuh, row_norm.cuh,
// pointwise_bf16.cuh): random fills, RMSNorm (alone and fused with the residual add before it),
// residual add, SiLU*mul, embedding gather, timed spin and split-KV decode attention (for the
// shapes the verify-attention kernel does not take). Every launcher is stream-ordered and
// capturable, and checks its launch.
#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "core/dtype.hpp"

namespace eaglesim::cuda {

// Uniform values in [-scale, scale) for bf16/fp16-sized bf16, fp8 (e4m3) and fp32 buffers;
// random bytes for int4 (every nibble is a valid weight). `count` is in elements (int4: bytes).
// The replay's fill: fp16 data is replayed as bf16.
void fill_random(void* p, std::size_t count, DType dtype, std::uint64_t seed, float scale, cudaStream_t stream);
// The same values in the element type itself (fp16 as fp16), for buffers read back as that type
// (bench-comm's inputs, checked against a host reference).
void fill_uniform(void* p, std::size_t count, DType dtype, std::uint64_t seed, float scale, cudaStream_t stream);
void fill_random_ids(int* p, std::size_t count, int rows, std::uint64_t seed, cudaStream_t stream);

// The memory-bound glue of a decoder layer, bf16 rows of `hidden` elements (kernels/row_norm.cuh,
// kernels/pointwise_bf16.cuh; geometry in cuda/ops/elementwise_plan.hpp). 16-byte loads where the
// width and the pointers allow, scalar ones otherwise; fp32 arithmetic.
//   rmsnorm:      out = x * rsqrt(mean(x^2) + eps) * weight, per row (InputError beyond
//                 kRowNormMaxHidden elements per row)
//   add_rmsnorm:  residual = x + residual (written back), out = rmsnorm(residual) * weight: SGLang's
//                 and vLLM's fused_add_rmsnorm, one kernel; `out` may be `x`
//   residual_add: residual += x over `count` elements
//   silu_mul:     out[t, h] = silu(gate_up[t, h]) * gate_up[t, hidden + h], gate_up [tokens, 2 * hidden]
// early_start (on an explicit stream): launched with programmatic dependent launch, the kernel
// starts while the kernel ahead of it finishes (the row norms load their weight meanwhile) and
// waits for it before touching x, the residual or out, as FlashInfer's norms with enable_pdl do;
// it lets the next kernel launch at once (kernels that start early wait for it in turn).
void launch_rmsnorm(const void* x, const void* weight, void* out, int tokens, int hidden, float eps,
                    cudaStream_t stream, bool early_start = false);
void launch_add_rmsnorm(const void* x, void* residual, const void* weight, void* out, int tokens, int hidden,
                        float eps, cudaStream_t stream, bool early_start = false);
void launch_residual_add(void* residual, const void* x, std::size_t count, cudaStream_t stream,
                         bool early_start = false);
void launch_silu_mul(const void* gate_up, void* out, int tokens, int hidden, cudaStream_t stream,
                     bool early_start = false);
void launch_embedding(const void* table, const int* ids, void* out, int tokens, int hidden, cudaStream_t stream);
void launch_spin(double us, cudaStream_t stream);

struct AttentionShape {
  int q_tokens = 1, kv_len = 1, heads = 1, kv_heads = 1;
  int dk = 128;            // GQA: head_dim; MLA: kv_lora_rank + rope_dim
  int dv = 128;            // GQA: head_dim; MLA: kv_lora_rank
  bool shared_kv = false;  // MLA: one latent cache serves as K and V
};

struct AttentionPlan {
  int splits = 1, split_len = 1, row_blocks = 1;
  std::size_t part_acc_floats = 0, part_ml_floats = 0;  // scratch the launch needs
};

// Empty when the kernel has an instantiation for this shape, else why not.
std::string attention_unsupported_reason(const AttentionShape& shape);
// Chooses the split count for `sm_count` SMs and prepares the kernel (shared-memory opt-in) on
// the current device. Call at setup, not during graph capture.
AttentionPlan plan_attention(const AttentionShape& shape, int sm_count);
// q [q_tokens, heads, dk]; k/v rows of pitch k_pitch/v_pitch elements at (pos*kv_heads + kvh);
// out [q_tokens, heads, dv] bf16.
void launch_attention(const AttentionShape& shape, const AttentionPlan& plan, const void* q, const void* k,
                      const void* v, std::int64_t k_pitch, std::int64_t v_pitch, float* part_acc, float* part_ml,
                      void* out, cudaStream_t stream);

}  // namespace eaglesim::cuda
