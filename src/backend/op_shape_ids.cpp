#include "backend/op_shape_ids.hpp"

#include <cstring>

namespace eaglesim {

ShapeKey shape_key(const Op& op) {
  ShapeKey key{};
  double us = op.kind == OpKind::other && op.us ? *op.us : 0.0;
  std::int64_t us_bits;
  std::memcpy(&us_bits, &us, sizeof us_bits);
  std::int64_t m = op.m, n = op.n, k = op.k, experts = op.experts, hidden = op.hidden, kv = op.kv_len;
  switch (op.kind) {
    case OpKind::attention:
      // Op::kv_len_total, summed as integers: the same number (the trace's limits keep the total
      // below 2^53, where a double sums integers exactly), without a serial chain of double adds.
      if (op.kv_lens.empty()) {
        kv = op.batch * op.kv_len;
      } else {
        std::uint64_t total = 0;
        for (std::int64_t l : op.kv_lens) total += static_cast<std::uint64_t>(l);
        kv = static_cast<std::int64_t>(total);
      }
      hidden = op.batch | static_cast<std::int64_t>(op.mask) << 40;
      break;
    case OpKind::topk_select:
    case OpKind::sampling:
    case OpKind::tree_build:
      m = op.rows; n = op.vocab; k = op.topk; experts = op.candidates; hidden = op.batch;
      break;
    default: break;
  }
  std::int64_t fields[kShapeFields] = {static_cast<std::int64_t>(op.kind),
                                       m, n, k, op.tokens, experts, hidden, op.bytes,
                                       op.q_tokens, kv, op.heads, op.kv_heads, op.head_dim,
                                       static_cast<std::int64_t>(op.variant), op.kv_lora_rank * 65536 + op.rope_dim,
                                       static_cast<std::int64_t>(op.dtype), us_bits};
  std::memcpy(key.v, fields, sizeof fields);
  return key;
}

std::uint64_t shape_hash(const ShapeKey& key) {
  // Independent multiplies (no serial chain as in FNV) keep the per-op lookup cheap; the final
  // xor-shift spreads high bits into the slot index.
  std::uint64_t h = 0;
  for (int i = 0; i < kShapeFields; ++i)
    h += static_cast<std::uint64_t>(key.v[i]) * (0x9E3779B97F4A7C15ull + 2ull * static_cast<std::uint64_t>(i) * 0x632BE59BD9B4E019ull);
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 29);
}

// Room for the few dozen shapes a step has without regrowing.
ShapeIds::ShapeIds() : slots_(128, -1) {
  keys_.reserve(64);
  hashes_.reserve(64);
}

int ShapeIds::intern(const Op& op) {
  bool fresh;
  return intern(shape_key(op), fresh);
}

int ShapeIds::intern(const ShapeKey& key, bool& fresh) {
  const std::uint64_t h = shape_hash(key);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t s = h & mask;; s = (s + 1) & mask) {
    const int id = slots_[s];
    if (id < 0) {
      fresh = true;
      const int added = size();
      keys_.push_back(key);
      hashes_.push_back(h);
      slots_[s] = added;
      if (keys_.size() * 2 > slots_.size()) grow();
      return added;
    }
    if (hashes_[static_cast<std::size_t>(id)] == h && keys_[static_cast<std::size_t>(id)] == key) {
      fresh = false;
      return id;
    }
  }
}

void ShapeIds::grow() {
  std::vector<int> slots(slots_.size() * 2, -1);
  const std::size_t mask = slots.size() - 1;
  for (std::size_t id = 0; id < keys_.size(); ++id) {
    std::size_t s = hashes_[id] & mask;
    while (slots[s] >= 0) s = (s + 1) & mask;
    slots[s] = static_cast<int>(id);
  }
  slots_.swap(slots);
}

}  // namespace eaglesim
