#pragma once
// Dense ids for the distinct op shapes of a step. A trace repeats the same few shapes once per
// layer (61 times for Kimi-K2), so pricing looks each op's shape up once and keeps what it learns
// about a shape (its cost, a transition, an allreduce between two shapes) in flat arrays or small
// maps indexed by id instead of maps keyed by the whole shape.
#include <cstdint>
#include <vector>

#include "trace/op.hpp"

namespace eaglesim {

// The fields a compute cost can depend on. Slots a kind does not use carry its other inputs: an
// attention op's KV slot holds its KV positions over all requests (its kv_len at batch 1) and its
// hidden slot the batch and mask; the per-cycle kinds' rows, vocab, topk and candidates (and
// tree_build's batch) sit in the m, n, k, experts (and hidden) slots.
constexpr int kShapeFields = 17;
struct ShapeKey {
  std::int64_t v[kShapeFields];
  bool operator==(const ShapeKey& o) const {
    // One pass of xors, no early exit: almost every comparison is between equal keys.
    std::uint64_t diff = 0;
    for (int i = 0; i < kShapeFields; ++i) diff |= static_cast<std::uint64_t>(v[i] ^ o.v[i]);
    return diff == 0;
  }
};

ShapeKey shape_key(const Op& op);
std::uint64_t shape_hash(const ShapeKey& key);

// Interns shape keys: the first distinct key gets id 0, the next 1, and so on. Open addressing
// over a power-of-two slot array, so a lookup is one hash, a mask and (almost always) one key
// comparison.
class ShapeIds {
 public:
  ShapeIds();
  // The id of `key`; a key not seen before gets the next id and sets `fresh`.
  int intern(const ShapeKey& key, bool& fresh);
  int intern(const Op& op);
  int size() const { return static_cast<int>(keys_.size()); }

 private:
  void grow();
  std::vector<ShapeKey> keys_;        // by id
  std::vector<std::uint64_t> hashes_; // by id
  std::vector<int> slots_;            // ids; -1: empty
};

}  // namespace eaglesim
