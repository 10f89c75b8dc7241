#include "cuda/measure/l2_rotation.hpp"

#include <algorithm>
#include <cmath>

namespace eaglesim::cuda {

double streamed_bytes(const Op& op) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head: {
      const double w = static_cast<double>(op.n) * static_cast<double>(op.k);
      return op.dtype == DType::fp8 ? w : op.dtype == DType::int4 ? w * 0.5625 : 2 * w;
    }
    case OpKind::attention:
      if (op.variant == AttentionVariant::mla)
        return static_cast<double>(op.kv_len) * static_cast<double>(op.kv_lora_rank + op.rope_dim) * 2;
      return 2.0 * static_cast<double>(op.kv_len) * static_cast<double>(op.kv_heads * op.head_dim) * 2;
    default:
      return 0;
  }
}

int rotation_copies(const Op& op, double l2_bytes, int min_copies, int max_copies) {
  const double bytes = streamed_bytes(op);
  if (bytes <= 0) return 1;
  const double want = std::ceil(kL2Multiple * l2_bytes / bytes);
  return static_cast<int>(std::clamp(want, double(min_copies), double(max_copies)));
}

}  // namespace eaglesim::cuda
