#include "domain/acceptance_fit.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/median.hpp"
#include "domain/tree_acceptance.hpp"

namespace eaglesim {

std::string FittedAcceptanceRate::describe() const {
  const std::string range = entries > 1 ? fmt::format(" ({:.2f}-{:.2f})", min_rate, max_rate) : "";
  return fmt::format("a={:.2f} fitted to {}'s {} measured entr{}{}", rate, file, entries, entries == 1 ? "y" : "ies",
                     range);
}

std::optional<FittedAcceptanceRate> fit_acceptance_rate(const AcceptanceTable& table) {
  std::vector<double> rates;
  // An entry at its configuration's most (every draft accepted) bounds the rate from below only.
  for (const MeasuredAcceptance& e : table.entries)
    if (e.accept_len < max_tokens_per_cycle(e.config) - 1e-9)
      if (const std::optional<double> a = tree_accept_rate_for_tokens(e.accept_len, e.config)) rates.push_back(*a);
  if (rates.empty()) return std::nullopt;
  FittedAcceptanceRate f;
  f.rate = median(rates);
  f.min_rate = *std::min_element(rates.begin(), rates.end());
  f.max_rate = *std::max_element(rates.begin(), rates.end());
  f.entries = static_cast<int>(rates.size());
  f.file = table.file;
  return f;
}

}  // namespace eaglesim
