#pragma once
// The acceptance rate a table of measured accept lengths implies: for each entry, the per-position
// rate at which the tree acceptance model (default decay, tree_acceptance.hpp) gives its accept
// length for its configuration; their median is the rate configurations without a measurement
// are priced at, so that they are priced on the user's basis rather than on an assumed default.
#include <optional>
#include <string>

#include "domain/acceptance_table.hpp"

namespace eaglesim {

struct FittedAcceptanceRate {
  double rate = 0;                 // the median of the entries' rates
  double min_rate = 0, max_rate = 0;
  int entries = 0;                 // entries that gave a rate
  std::string file;
  // "a=0.62 fitted to acc.json's 6 measured entries (0.55-0.71)"
  std::string describe() const;
};

// None when no entry gives a rate (every accept length at a configuration's maximum).
std::optional<FittedAcceptanceRate> fit_acceptance_rate(const AcceptanceTable& table);

}  // namespace eaglesim
