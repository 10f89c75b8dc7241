#include "import/collective_aligner.hpp"

#include <algorithm>
#include <limits>

#include "core/median.hpp"

namespace eaglesim {

CollectiveAlignment align_collectives(const std::vector<std::vector<CollectiveTiming>>& timings) {
  CollectiveAlignment a;
  const std::size_t ranks = timings.size();
  const std::size_t n = ranks ? timings[0].size() : 0;
  a.clock_offset_us.assign(ranks, 0.0);
  for (std::size_t r = 1; r < ranks; ++r) {
    std::vector<double> diffs;
    diffs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) diffs.push_back(timings[r][i].end - timings[0][i].end);
    a.clock_offset_us[r] = median(std::move(diffs));
  }
  a.cost_us.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    double latest_start = -std::numeric_limits<double>::infinity();
    double earliest_end = std::numeric_limits<double>::infinity();
    double shortest = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < ranks; ++r) {
      const CollectiveTiming& t = timings[r][i];
      latest_start = std::max(latest_start, t.start - a.clock_offset_us[r]);
      earliest_end = std::min(earliest_end, t.end - a.clock_offset_us[r]);
      shortest = std::min(shortest, t.end - t.start);
    }
    double cost = earliest_end - latest_start;
    if (cost <= 0) {
      // The window closed before it opened: residual clock error larger than the collective.
      // The last rank to arrive did not wait, so the shortest duration is the best estimate.
      cost = shortest;
      ++a.clamped;
    }
    a.cost_us.push_back(cost);
  }
  return a;
}

}  // namespace eaglesim
