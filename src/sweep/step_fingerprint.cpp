#include "sweep/step_fingerprint.hpp"

#include <cstring>
#include <tuple>

namespace eaglesim {

namespace {

// FNV-1a: simple, fast enough for a few thousand ops, and stable across runs.
struct Fnv {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 1099511628211ull;
    }
  }
  template <typename T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  void text(const std::string& s) {
    value(s.size());
    bytes(s.data(), s.size());
  }
};

// Every field an op carries, as a tuple, so hashing and equality cannot drift apart.
auto op_fields(const Op& op) {
  return std::tie(op.kind, op.name, op.layer, op.us, op.us_source, op.site, op.m, op.n, op.k, op.tokens, op.experts,
                  op.hidden, op.bytes, op.q_tokens, op.kv_len, op.heads, op.kv_heads, op.head_dim, op.variant,
                  op.kv_lora_rank, op.rope_dim, op.dtype);
}

}  // namespace

std::uint64_t step_fingerprint(const Step& step) {
  Fnv f;
  f.text(step.name);
  f.value(step.measured_us.has_value());
  if (step.measured_us) f.value(*step.measured_us);
  f.value(step.ops.size());
  for (const Op& op : step.ops) {
    f.value(op.kind);
    f.text(op.name);
    f.value(op.layer);
    f.value(op.us.has_value());
    if (op.us) f.value(*op.us);
    f.value(op.us_source);
    f.text(op.site);
    for (std::int64_t v : {op.m, op.n, op.k, op.tokens, op.experts, op.hidden, op.bytes, op.q_tokens, op.kv_len,
                           op.heads, op.kv_heads, op.head_dim, op.kv_lora_rank, op.rope_dim})
      f.value(v);
    f.value(op.variant);
    f.value(op.dtype);
  }
  return f.h;
}

bool same_step_content(const Step& a, const Step& b) {
  if (a.name != b.name || a.measured_us != b.measured_us || a.ops.size() != b.ops.size()) return false;
  for (std::size_t i = 0; i < a.ops.size(); ++i)
    if (op_fields(a.ops[i]) != op_fields(b.ops[i])) return false;
  return true;
}

}  // namespace eaglesim
