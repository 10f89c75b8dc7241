#include "trace/op.hpp"

#include <fmt/format.h>

namespace eaglesim {

const std::vector<std::string>& op_kind_names() {
  static const std::vector<std::string> names{"gemm",         "grouped_gemm", "attention", "allreduce",
                                              "rmsnorm",      "residual_add", "act",       "embedding",
                                              "lm_head",      "other"};
  return names;
}

const char* to_string(OpKind k) { return op_kind_names()[static_cast<int>(k)].c_str(); }

bool parse_op_kind(const std::string& name, OpKind& out) {
  const auto& names = op_kind_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) { out = static_cast<OpKind>(i); return true; }
  return false;
}

const char* to_string(AttentionVariant v) { return v == AttentionVariant::mla ? "mla" : "gqa"; }
const char* to_string(UsSource s) { return s == UsSource::aligned ? "aligned" : "measured"; }

double Op::flops() const {
  switch (kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return 2.0 * m * n * k;
    case OpKind::grouped_gemm: return 2.0 * tokens * n * k;
    case OpKind::attention:
      if (variant == AttentionVariant::mla)  // absorbed MLA: QK over latent+rope, PV over latent
        return 2.0 * q_tokens * kv_len * heads * (2.0 * kv_lora_rank + rope_dim);
      return 4.0 * q_tokens * kv_len * heads * head_dim;
    default: return 0.0;
  }
}

double Op::weight_bytes() const {
  switch (kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return static_cast<double>(n) * k * bytes_per_element(dtype);
    case OpKind::grouped_gemm: return static_cast<double>(experts) * n * k * bytes_per_element(dtype);
    case OpKind::embedding: return static_cast<double>(tokens) * hidden * 2.0;
    default: return 0.0;
  }
}

double Op::io_bytes() const {
  const double a = 2.0;  // activations are bf16
  switch (kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return a * (static_cast<double>(m) * k + static_cast<double>(m) * n);
    case OpKind::grouped_gemm: return a * static_cast<double>(tokens) * (k + n);
    case OpKind::attention: {
      double kv = variant == AttentionVariant::mla
                      ? static_cast<double>(kv_len) * (kv_lora_rank + rope_dim) * a
                      : static_cast<double>(kv_len) * kv_heads * head_dim * 2.0 * a;
      double qo = variant == AttentionVariant::mla
                      ? static_cast<double>(q_tokens) * heads * (2.0 * kv_lora_rank + rope_dim) * a
                      : 2.0 * q_tokens * heads * head_dim * a;
      return kv + qo;
    }
    case OpKind::allreduce: return static_cast<double>(bytes);
    case OpKind::rmsnorm: return 2.0 * a * tokens * hidden;
    case OpKind::residual_add: return 3.0 * a * tokens * hidden;
    case OpKind::act: return 3.0 * a * tokens * hidden;
    case OpKind::embedding: return a * tokens * hidden;
    case OpKind::other: return 0.0;
  }
  return 0.0;
}

std::string Op::shape_string() const {
  switch (kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return fmt::format("m={} n={} k={} {}", m, n, k, to_string(dtype));
    case OpKind::grouped_gemm:
      return fmt::format("tokens={} experts={} n={} k={} {}", tokens, experts, n, k, to_string(dtype));
    case OpKind::attention:
      if (variant == AttentionVariant::mla)
        return fmt::format("mla q={} kv={} heads={} lora={} rope={}", q_tokens, kv_len, heads,
                           kv_lora_rank, rope_dim);
      return fmt::format("q={} kv={} heads={}/{} dim={}", q_tokens, kv_len, heads, kv_heads, head_dim);
    case OpKind::allreduce: return fmt::format("{} B {}", bytes, to_string(dtype));
    case OpKind::rmsnorm:
    case OpKind::residual_add:
    case OpKind::act:
    case OpKind::embedding: return fmt::format("{}x{}", tokens, hidden);
    case OpKind::other: return us ? fmt::format("{:.1f} us", *us) : std::string("-");
  }
  return "";
}

}  // namespace eaglesim
