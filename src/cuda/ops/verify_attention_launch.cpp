#include "cuda/ops/verify_attention_launch.hpp"

#include <cmath>
#include <cstdint>

namespace eaglesim::cuda {

VerifyAttentionCheck resolve_verify_attention_params(const VerifyAttentionShape& s, VerifyAttentionParams& p) {
  const bool mla = s.kind == VerifyAttentionKind::mla;
  if (mla && p.v == nullptr) p.v = p.k;
  if (p.q == nullptr || p.k == nullptr || p.v == nullptr || p.out == nullptr || p.kv_indptr == nullptr ||
      p.kv_len == nullptr)
    return VerifyAttentionCheck::invalid_value;
  if (mla && p.v != p.k) return VerifyAttentionCheck::invalid_value;
  if (p.mask_kind == AttentionMaskKind::tree && p.mask == nullptr) return VerifyAttentionCheck::invalid_value;
  if (p.q_token_stride == 0) p.q_token_stride = static_cast<std::int64_t>(s.heads) * s.head_dim_qk;
  if (p.out_token_stride == 0) p.out_token_stride = static_cast<std::int64_t>(s.heads) * s.head_dim_v;
  if (p.k_token_stride == 0) p.k_token_stride = static_cast<std::int64_t>(s.kv_heads) * s.head_dim_qk;
  if (p.k_head_stride == 0) p.k_head_stride = s.head_dim_qk;
  if (p.v_token_stride == 0) p.v_token_stride = static_cast<std::int64_t>(s.kv_heads) * s.head_dim_v;
  if (p.v_head_stride == 0) p.v_head_stride = s.head_dim_v;
  if (mla) {  // one latent row per token serves as K and V
    p.v_token_stride = p.k_token_stride;
    p.v_head_stride = p.k_head_stride;
  }
  if (!(p.scale > 0.f)) p.scale = 1.f / std::sqrt(static_cast<float>(s.head_dim_qk));
  auto aligned = [](const void* x) { return (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0; };
  if (!aligned(p.q) || !aligned(p.k) || !aligned(p.v) || !aligned(p.out) || p.q_token_stride % 8 ||
      p.out_token_stride % 8 || p.k_token_stride % 8 || p.k_head_stride % 8 || p.v_token_stride % 8 ||
      p.v_head_stride % 8)
    return VerifyAttentionCheck::misaligned;
  return VerifyAttentionCheck::ok;
}

}  // namespace eaglesim::cuda
