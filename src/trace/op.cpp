#include "trace/op.hpp"

#include <fmt/format.h>

namespace eaglesim {

const std::vector<std::string>& op_kind_names() {
  static const std::vector<std::string> names{"gemm",         "grouped_gemm", "attention", "allreduce",
                                              "rmsnorm",      "residual_add", "act",       "embedding",
                                              "lm_head",      "other",        "topk_select", "tree_build",
                                              "sampling",     "host_sync",  "elementwise", "all_to_all"};
  return names;
}

bool is_version1_kind(OpKind k) { return static_cast<int>(k) < static_cast<int>(OpKind::topk_select); }

const char* to_string(OpKind k) { return op_kind_names()[static_cast<int>(k)].c_str(); }

bool parse_op_kind(const std::string& name, OpKind& out) {
  const auto& names = op_kind_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) { out = static_cast<OpKind>(i); return true; }
  return false;
}

const char* to_string(AttentionVariant v) { return v == AttentionVariant::mla ? "mla" : "gqa"; }
const char* to_string(UsSource s) { return s == UsSource::aligned ? "aligned" : "measured"; }

const std::vector<std::string>& attention_mask_names() {
  static const std::vector<std::string> names{"causal", "tree", "branches"};
  return names;
}

const char* to_string(AttentionMask m) { return attention_mask_names()[static_cast<int>(m)].c_str(); }

double Op::kv_len_total() const {
  if (kv_lens.empty()) return static_cast<double>(batch) * static_cast<double>(kv_len);
  double total = 0;
  for (std::int64_t l : kv_lens) total += static_cast<double>(l);
  return total;
}

double Op::kv_element_bytes() const { return dtype == DType::fp8 ? 1.0 : 2.0; }

bool Op::has_version2_fields() const {
  return !is_version1_kind(kind) || batch != 1 || !kv_lens.empty() || mask != AttentionMask::causal ||
         (kind == OpKind::attention && dtype == DType::fp8);
}

double Op::flops() const {
  switch (kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return 2.0 * m * n * k;
    case OpKind::grouped_gemm: return 2.0 * tokens * n * k;
    case OpKind::attention:
      // Summed over the requests: each request's q_tokens against its own KV.
      if (variant == AttentionVariant::mla)  // absorbed MLA: QK over latent+rope, PV over latent
        return 2.0 * q_tokens * kv_len_total() * heads * (2.0 * kv_lora_rank + rope_dim);
      return 4.0 * q_tokens * kv_len_total() * heads * head_dim;
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
      // Every request's KV is read once; queries and outputs of all requests.
      const double positions = kv_len_total();
      const double q = static_cast<double>(q_tokens) * static_cast<double>(batch);
      const double e = kv_element_bytes();
      double kv = variant == AttentionVariant::mla ? positions * (kv_lora_rank + rope_dim) * e
                                                   : positions * kv_heads * head_dim * 2.0 * e;
      double qo = variant == AttentionVariant::mla ? q * heads * (2.0 * kv_lora_rank + rope_dim) * a
                                                   : 2.0 * q * heads * head_dim * a;
      return kv + qo;
    }
    case OpKind::allreduce: return static_cast<double>(bytes);
    case OpKind::rmsnorm: return 2.0 * a * tokens * hidden;
    case OpKind::residual_add: return 3.0 * a * tokens * hidden;
    case OpKind::act: return 3.0 * a * tokens * hidden;
    case OpKind::embedding: return a * tokens * hidden;
    case OpKind::other: return 0.0;
    // fp32 logits: softmax reads them and writes probabilities, top-k reads those and writes
    // topk (probability, int64 index) pairs per row.
    case OpKind::topk_select:
      return 3.0 * 4.0 * static_cast<double>(rows) * vocab + 12.0 * static_cast<double>(rows) * topk;
    // Per request: the candidates' fp32 scores read by the top-k, then the tree's tokens x tokens
    // mask (bytes) and four int64 arrays per token (positions, retrieve index, next token, next
    // sibling) written.
    case OpKind::tree_build:
      return static_cast<double>(batch) *
             (4.0 * candidates + static_cast<double>(tokens) * tokens + 32.0 * static_cast<double>(tokens));
    // Greedy acceptance: one pass of the target's argmax over the fp32 logits.
    case OpKind::sampling: return 4.0 * static_cast<double>(rows) * vocab;
    case OpKind::host_sync: return 0.0;
    case OpKind::elementwise: return a * operands * static_cast<double>(tokens) * hidden;
    // What leaves the rank: one payload per routed expert at most (the strategy decides how many).
    case OpKind::all_to_all: return static_cast<double>(tokens) * topk * hidden * bytes_per_element(dtype);
  }
  return 0.0;
}

std::string Op::shape_string() const {
  switch (kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return fmt::format("m={} n={} k={} {}", m, n, k, to_string(dtype));
    case OpKind::grouped_gemm:
      return fmt::format("tokens={} experts={} n={} k={} {}", tokens, experts, n, k, to_string(dtype));
    case OpKind::attention: {
      std::string s = variant == AttentionVariant::mla
                          ? fmt::format("mla q={} kv={} heads={} lora={} rope={}", q_tokens, kv_len, heads,
                                        kv_lora_rank, rope_dim)
                          : fmt::format("q={} kv={} heads={}/{} dim={}", q_tokens, kv_len, heads, kv_heads, head_dim);
      if (batch != 1) s += fmt::format(" batch={}", batch);
      if (!kv_lens.empty()) s += fmt::format(" kv_sum={:.0f}", kv_len_total());
      if (mask != AttentionMask::causal) s += fmt::format(" {}", to_string(mask));
      if (dtype == DType::fp8) s += " kv fp8";
      return s;
    }
    case OpKind::allreduce: return fmt::format("{} B {}", bytes, to_string(dtype));
    case OpKind::rmsnorm:
    case OpKind::residual_add:
    case OpKind::act:
    case OpKind::embedding: return fmt::format("{}x{}", tokens, hidden);
    case OpKind::other: return us ? fmt::format("{:.1f} us", *us) : std::string("-");
    case OpKind::topk_select: return fmt::format("rows={} vocab={} topk={}", rows, vocab, topk);
    case OpKind::tree_build: return fmt::format("batch={} candidates={} tokens={}", batch, candidates, tokens);
    case OpKind::sampling: return fmt::format("rows={} vocab={}", rows, vocab);
    case OpKind::host_sync: return us ? fmt::format("{:.1f} us", *us) : std::string("-");
    case OpKind::elementwise: return fmt::format("{}x{} x{}", tokens, hidden, operands);
    case OpKind::all_to_all:
      return fmt::format("{} tokens={} hidden={} top{} of {} {}", combine ? "combine" : "dispatch", tokens, hidden,
                         topk, experts, to_string(dtype));
  }
  return "";
}

}  // namespace eaglesim
