#pragma once
// The tensors every verify-attention kernel reads and writes (the optimised ones and the plain
// reference): device pointers, strides in elements, the ragged batch and the mask, taken from
// resolved launch parameters (resolve_verify_attention_params) in one place.
#if !defined(EAGLESIM_VA_EMULATE)
#include <cuda_bf16.h>  // the CPU emulator (tools/verify_attention_emulate.cpp) brings its own
#endif

#include "cuda/ops/verify_attention_launch.hpp"

namespace eaglesim::kernels::verify {

struct AttentionTensors {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  __nv_bfloat16* out;
  long long q_token_stride, out_token_stride, k_token_stride, k_head_stride, v_token_stride, v_head_stride;
  const int* kv_indptr;
  const int* kv_len;
  const unsigned* mask;
  int mask_tree, mask_per_request;
};

inline AttentionTensors attention_tensors(const ::eaglesim::cuda::VerifyAttentionParams& p) {
  AttentionTensors t{};
  t.q = static_cast<const __nv_bfloat16*>(p.q);
  t.k = static_cast<const __nv_bfloat16*>(p.k);
  t.v = static_cast<const __nv_bfloat16*>(p.v);
  t.out = static_cast<__nv_bfloat16*>(p.out);
  t.q_token_stride = p.q_token_stride;
  t.out_token_stride = p.out_token_stride;
  t.k_token_stride = p.k_token_stride;
  t.k_head_stride = p.k_head_stride;
  t.v_token_stride = p.v_token_stride;
  t.v_head_stride = p.v_head_stride;
  t.kv_indptr = p.kv_indptr;
  t.kv_len = p.kv_len;
  t.mask = p.mask;
  t.mask_tree = p.mask_kind == ::eaglesim::cuda::AttentionMaskKind::tree ? 1 : 0;
  t.mask_per_request = p.mask_per_request ? 1 : 0;
  return t;
}

}  // namespace eaglesim::kernels::verify
