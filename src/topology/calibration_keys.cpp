#include "topology/calibration_keys.hpp"

#include <cctype>

#include <fmt/format.h>

namespace eaglesim {

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

bool valid_transition_key(const std::string& key) {
  const std::size_t gt = key.find('>');
  if (gt == std::string::npos) return false;
  auto compute_kind = [](const std::string& name) {
    OpKind k{};
    return parse_op_kind(name, k) && k != OpKind::allreduce && k != OpKind::other;
  };
  return compute_kind(key.substr(0, gt)) && compute_kind(key.substr(gt + 1));
}

}  // namespace eaglesim
