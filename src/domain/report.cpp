#include "domain/report.hpp"

#include <algorithm>

namespace eaglesim {

VerifySplit verify_split(const StrategyResult& r) {
  double matmul_attention = 0;
  for (OpKind k : {OpKind::gemm, OpKind::grouped_gemm, OpKind::attention, OpKind::lm_head})
    matmul_attention += r.verify.kind_us[static_cast<std::size_t>(k)];
  VerifySplit s;
  // The three parts add up to verify_us by construction: "other" is the remainder.
  s.allreduce_us = r.comm_us;
  s.matmul_attention_us = std::min(matmul_attention, r.verify_us - r.comm_us);
  s.other_us = std::max(0.0, r.verify_us - r.comm_us - s.matmul_attention_us);
  return s;
}

}  // namespace eaglesim
