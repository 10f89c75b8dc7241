#pragma once
// What pricing one step has already worked out. A trace repeats the same few op shapes and
// allreduce calls once per layer (61 times for Kimi-K2), and every answer behind a price is dear
// next to the event loop: a cost model's evaluation, a communicator's plan, or a calibration
// lookup that builds its key strings. The memo asks each distinct question once per step plan
// and hands the same answer to every op that asks it again; it never changes an answer, so a
// step prices the same with or without it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "cost/compute_model.hpp"
#include "backend/op_shape_ids.hpp"
#include "trace/op.hpp"

namespace eaglesim {

// An allreduce as a strategy that decides per call sees it: its size, and the RMSNorm after it.
struct CommKey {
  std::int64_t bytes;
  DType dtype;
  std::int64_t rows;  // the following RMSNorm's tokens; -1: no RMSNorm follows
  bool operator==(const CommKey& o) const { return bytes == o.bytes && dtype == o.dtype && rows == o.rows; }
};

// What the memo keeps of one CommKey's plan.
struct PricedComm {
  double us = 0;
  int detail = -1;          // index into StepPlan::details
  bool fuses = false;
  std::string model;        // the strategy that ran it (the allreduce-in-context key)
  int dispatch_group = -1;  // index into StepPlan::dispatch; -1: not an engine strategy
};

class StepPricingMemo {
 public:
  // The dense id of the op's shape (ShapeIds): the key of every per-shape answer below.
  int shape_id(const Op& op) { return shapes_.intern(op); }

  // The cost of the op of shape id `shape`, from `price()` the first time that shape is asked
  // for. The fused add+norm kernels, keyed by their norm's shape, are remembered apart.
  template <class Price>
  const OpCost& compute_cost(int shape, bool fused_add_norm, Price price) {
    std::vector<std::optional<OpCost>>& memo = fused_add_norm ? add_norm_costs_ : compute_costs_;
    const std::size_t slot = static_cast<std::size_t>(shape);
    if (slot >= memo.size()) memo.resize(2 * slot + 1);
    if (!memo[slot]) memo[slot] = price();
    return *memo[slot];
  }

  // The plan of the allreduce call `key`, from `plan()` the first time that call is asked for.
  template <class Plan>
  const PricedComm& comm(const CommKey& key, Plan plan) {
    if (const PricedComm* found = find_comm(key)) return *found;
    return remember_comm(key, plan());
  }
  // True once an allreduce has been planned.
  bool has_comms() const { return !comms_.empty(); }

  // The kernel transition from a compute op of shape id `from` into one of shape id `to`, from
  // `lookup()` the first time that pair is asked for.
  template <class Lookup>
  const std::optional<double>& transition(int from, int to, Lookup lookup) {
    auto [t, fresh] = transitions_.try_emplace(shape_pair(from, to));
    if (fresh) t->second = lookup();
    return t->second;
  }

  // The in-context cost of a `bytes` allreduce run by `model` between compute ops of shape ids
  // `from` and `to`, from `lookup()` the first time it is asked for.
  template <class Lookup>
  const std::optional<double>& in_context(std::int64_t bytes, int from, int to, const std::string& model,
                                          Lookup lookup) {
    auto [c, fresh] = contexts_.try_emplace(ContextKey{bytes, shape_pair(from, to), model});
    if (fresh) c->second = lookup();
    return c->second;
  }

 private:
  // Two consecutive compute ops' shapes (ShapeIds): the kernel-transition lookup builds two key
  // strings, so each pair is looked up once per step plan, not once per op.
  static std::uint64_t shape_pair(int from, int to) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(from)) << 32 | static_cast<std::uint32_t>(to);
  }

  // An allreduce between two compute ops' shapes: the in-context lookup builds a key string, so
  // each (size, pair) is looked up once per step plan.
  struct ContextKey {
    std::int64_t bytes;
    std::uint64_t pair;  // shape_pair
    std::string model;   // the strategy that runs it (an engine strategy picks per call)
    bool operator==(const ContextKey& o) const { return bytes == o.bytes && pair == o.pair && model == o.model; }
  };
  struct ContextKeyHash {
    std::size_t operator()(const ContextKey& k) const {
      return (std::hash<std::uint64_t>()(k.pair) * 31 ^ std::hash<std::int64_t>()(k.bytes)) * 31 ^
             std::hash<std::string>()(k.model);
    }
  };
  struct CommKeyHash {
    std::size_t operator()(const CommKey& k) const;
  };

  const PricedComm* find_comm(const CommKey& key) const;
  const PricedComm& remember_comm(const CommKey& key, PricedComm priced);

  ShapeIds shapes_;
  std::vector<std::optional<OpCost>> compute_costs_ = std::vector<std::optional<OpCost>>(64);   // by shape id
  std::vector<std::optional<OpCost>> add_norm_costs_ = std::vector<std::optional<OpCost>>(64);  // by the norm's shape id
  // A step carries a handful of distinct allreduce calls (one per size and following norm), so a
  // short scan of the first few finds almost every one without hashing; a map indexes the rest.
  static constexpr std::size_t kScannedComms = 8;
  std::vector<std::pair<CommKey, PricedComm>> comms_;
  std::unordered_map<CommKey, std::size_t, CommKeyHash> comm_index_;  // entries from kScannedComms on
  std::unordered_map<std::uint64_t, std::optional<double>> transitions_;  // by shape_pair
  std::unordered_map<ContextKey, std::optional<double>, ContextKeyHash> contexts_;
};

}  // namespace eaglesim
