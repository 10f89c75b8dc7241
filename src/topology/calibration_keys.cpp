#include "topology/calibration_keys.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"

namespace eaglesim {

const std::vector<std::string>& fitted_model_keys() {
  static const std::vector<std::string> keys{"gemm:bf16",           "gemm:fp8",
                                             "gemm:int4",           "gemm:fp8:gemv",
                                             "gemm:int4:gemv",      "gemm:fp8:cublas",
                                             "gemm:int4:cublas",    "attention:gqa",
                                             "attention:mla",       "elementwise:rmsnorm",
                                             "elementwise:residual_add", "elementwise:act",
                                             "elementwise:embedding",    std::string("elementwise:") + kAddRmsnormTable,
                                             "attention:gqa:batch",      "attention:mla:batch",
                                             "attention:gqa:decode",     "attention:mla:decode",
                                             "grouped_gemm:bf16",        "grouped_gemm:fp8",
                                             "grouped_gemm:int4",
                                             "elementwise:elementwise",  kPersistentAttentionKey};
  return keys;
}

bool fitted_model_has_flops(const std::string& key) { return key.rfind("elementwise:", 0) != 0; }
bool fitted_model_has_geometry(const std::string& key) { return key.rfind("attention:", 0) == 0; }

std::string attention_calibration_key(const Op& op) {
  if (op.variant == AttentionVariant::mla)
    return fmt::format("mla:{}:{}:{}", op.heads, op.kv_lora_rank, op.rope_dim);
  return fmt::format("gqa:{}:{}:{}", op.heads, op.kv_heads, op.head_dim);
}

std::string attention_calibration_key_q(const Op& op) {
  return attention_calibration_key(op) + fmt::format(":q{}", op.q_tokens);
}

bool valid_attention_key(const std::string& key) {
  if (key.rfind("gqa:", 0) != 0 && key.rfind("mla:", 0) != 0) return false;
  // Three positive integers separated by ':' after the variant, then optionally ":q" and a
  // positive integer (the query-token count the table was measured at).
  int fields = 0;
  std::size_t i = 4;
  while (i <= key.size()) {
    std::size_t j = key.find(':', i);
    if (j == std::string::npos) j = key.size();
    if (fields == 3) {
      if (key[i] != 'q') return false;
      ++i;
    }
    if (j == i || j - i > 9 || key[i] == '0') return false;
    for (std::size_t c = i; c < j; ++c)
      if (!std::isdigit(static_cast<unsigned char>(key[c]))) return false;
    ++fields;
    i = j + 1;
  }
  return fields == 3 || fields == 4;
}

std::string transition_key(OpKind from, OpKind to) { return std::string(to_string(from)) + ">" + to_string(to); }

std::string transition_shape(const Op& op) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head:
    case OpKind::grouped_gemm:
      return fmt::format("{}:{}:{}:{}", to_string(op.kind), op.n, op.k, to_string(op.dtype));
    case OpKind::attention: return "attention:" + attention_calibration_key(op);
    default: return fmt::format("{}:{}", to_string(op.kind), op.hidden);
  }
}

std::string transition_key(const Op& from, const Op& to) { return transition_shape(from) + ">" + transition_shape(to); }

namespace {

bool weight_side(OpKind k) { return k == OpKind::gemm || k == OpKind::lm_head || k == OpKind::grouped_gemm; }

std::string family_side(const Op& op) {
  return weight_side(op.kind) ? fmt::format("{}:{}", to_string(op.kind), to_string(op.dtype)) : to_string(op.kind);
}

std::vector<std::string> split_fields(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (std::size_t j; (j = s.find(':', i)) != std::string::npos; i = j + 1) out.push_back(s.substr(i, j - i));
  out.push_back(s.substr(i));
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string transition_family_key(const Op& from, const Op& to) { return family_side(from) + ">" + family_side(to); }

TransitionLevels transition_levels_of(const std::string& key) {
  const std::size_t gt = key.find('>');
  if (gt == std::string::npos) return {};
  TransitionLevels out;
  for (const std::string& side : {key.substr(0, gt), key.substr(gt + 1)}) {
    const std::vector<std::string> f = split_fields(side);
    if (f.size() < 2 || !std::any_of(f.begin() + 1, f.end(), all_digits)) return {};
    OpKind kind{};
    if (!parse_op_kind(f[0], kind)) return {};
    const bool sep = !out.kinds.empty();
    out.kinds += (sep ? ">" : "") + f[0];
    // KIND:N:K:DTYPE for the GEMMs: the family side carries the DTYPE.
    out.family += (sep ? ">" : "") + (weight_side(kind) && f.size() == 4 ? f[0] + ":" + f[3] : f[0]);
  }
  return out;
}

bool valid_transition_key(const std::string& key) {
  const std::size_t gt = key.find('>');
  if (gt == std::string::npos) return false;
  auto side = [](const std::string& s) {
    const std::size_t colon = s.find(':');
    OpKind k{};
    if (!parse_op_kind(s.substr(0, colon), k) || k == OpKind::allreduce || k == OpKind::other) return false;
    if (colon == std::string::npos) return true;
    if (colon + 1 == s.size()) return false;
    for (std::size_t i = colon + 1; i < s.size(); ++i)
      if (!std::isalnum(static_cast<unsigned char>(s[i])) && s[i] != '_' && s[i] != ':') return false;
    return true;
  };
  return side(key.substr(0, gt)) && side(key.substr(gt + 1));
}

std::string allreduce_context_key(const std::string& strategy, std::int64_t bytes, const Op& from, const Op& to) {
  return fmt::format("{}:{}@{}", strategy, bytes, transition_key(from, to));
}

bool valid_allreduce_context_key(const std::string& key) {
  const std::size_t at = key.find('@');
  if (at == std::string::npos) return false;
  const std::string head = key.substr(0, at), tail = key.substr(at + 1);
  const std::size_t colon = head.find(':');
  if (colon == std::string::npos || colon + 1 == head.size() || colon + 19 < head.size()) return false;
  if (!is_calibratable(head.substr(0, colon))) return false;
  if (head[colon + 1] == '0') return false;
  for (std::size_t i = colon + 1; i < head.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(head[i]))) return false;
  const std::size_t gt = tail.find('>');
  if (gt == std::string::npos) return false;
  // Both sides carry a shape (a kind alone would match any op of that kind).
  if (tail.substr(0, gt).find(':') == std::string::npos || tail.substr(gt + 1).find(':') == std::string::npos)
    return false;
  return valid_transition_key(tail);
}

}  // namespace eaglesim
