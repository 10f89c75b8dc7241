#include "sweep/step_fingerprint.hpp"

#include <cstring>
#include <functional>
#include <initializer_list>
#include <tuple>
#include <type_traits>

namespace eaglesim {

namespace {

// Word-at-a-time mixing (a multiply and a shift per field): hashing every op of every generated
// step must cost far less than pricing it. Strings go through std::hash; fingerprints only live
// for one process, so its per-implementation values are fine.
struct Mixer {
  std::uint64_t h = 0x243f6a8885a308d3ull;
  void word(std::uint64_t v) {
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  template <typename T>
  void value(const T& v) {
    if constexpr (std::is_floating_point_v<T>) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &v, sizeof v);
      word(bits);
    } else {
      word(static_cast<std::uint64_t>(v));
    }
  }
  void text(const std::string& s) { word(std::hash<std::string>{}(s)); }
};

// Every field an op carries, as a tuple, so hashing and equality cannot drift apart.
auto op_fields(const Op& op) {
  return std::tie(op.kind, op.name, op.layer, op.us, op.us_source, op.site, op.m, op.n, op.k, op.tokens, op.experts,
                  op.hidden, op.bytes, op.q_tokens, op.kv_len, op.heads, op.kv_heads, op.head_dim, op.variant,
                  op.kv_lora_rank, op.rope_dim, op.dtype, op.batch, op.kv_lens, op.mask, op.rows, op.vocab, op.topk,
                  op.candidates);
}

}  // namespace

std::uint64_t step_fingerprint(const Step& step) {
  Mixer f;
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
    for (std::int64_t v : std::initializer_list<std::int64_t>{op.m, op.n, op.k, op.tokens, op.experts, op.hidden,
                                                               op.bytes, op.q_tokens, op.kv_len, op.heads, op.kv_heads,
                                                               op.head_dim, op.kv_lora_rank, op.rope_dim, op.candidates,
                                                               op.batch, op.rows, op.vocab, op.topk})
      f.value(v);
    f.value(op.kv_lens.size());
    for (std::int64_t v : op.kv_lens) f.value(v);
    f.value(op.variant);
    f.value(op.mask);
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
