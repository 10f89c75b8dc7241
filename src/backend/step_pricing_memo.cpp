#include "backend/step_pricing_memo.hpp"

#include <algorithm>

namespace eaglesim {

std::size_t StepPricingMemo::CommKeyHash::operator()(const CommKey& k) const {
  return std::hash<std::int64_t>()((k.bytes * 8 + static_cast<std::int64_t>(k.dtype)) * 31 + k.rows);
}

const PricedComm* StepPricingMemo::find_comm(const CommKey& key) const {
  const std::size_t scanned = std::min(comms_.size(), kScannedComms);
  for (std::size_t e = 0; e < scanned; ++e)
    if (comms_[e].first == key) return &comms_[e].second;
  if (comms_.size() <= kScannedComms) return nullptr;
  auto it = comm_index_.find(key);
  return it == comm_index_.end() ? nullptr : &comms_[it->second].second;
}

const PricedComm& StepPricingMemo::remember_comm(const CommKey& key, PricedComm priced) {
  if (comms_.size() >= kScannedComms) comm_index_.emplace(key, comms_.size());
  comms_.emplace_back(key, std::move(priced));
  return comms_.back().second;
}

}  // namespace eaglesim
