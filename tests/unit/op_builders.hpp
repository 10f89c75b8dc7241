#pragma once
// Ops of one kind and shape for the cost-model unit tests (every other field at its default).
#include <cstdint>

#include "trace/op.hpp"

namespace eaglesim::test_support {

inline Op gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dt = DType::bf16) {
  Op op;
  op.kind = OpKind::gemm;
  op.name = "g";
  op.m = m; op.n = n; op.k = k; op.dtype = dt;
  return op;
}

inline Op rowwise(OpKind kind, std::int64_t tokens, std::int64_t hidden) {
  Op op;
  op.kind = kind;
  op.name = "r";
  op.tokens = tokens;
  op.hidden = hidden;
  return op;
}

inline Op gqa(std::int64_t q, std::int64_t kv, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim) {
  Op op;
  op.kind = OpKind::attention;
  op.name = "attn";
  op.q_tokens = q; op.kv_len = kv; op.heads = heads; op.kv_heads = kv_heads; op.head_dim = dim;
  return op;
}

}  // namespace eaglesim::test_support
