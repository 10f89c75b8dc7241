#include "sweep/layout_best.hpp"

namespace eaglesim {

std::vector<SweepLayoutBest> best_per_layout(const SweepGrid& grid, const std::vector<int>& batches,
                                             const std::vector<RowSpeeds>& rows) {
  std::vector<SweepLayoutBest> out;
  const std::size_t A = grid.acceptances, B = grid.batches, L = grid.layouts;
  for (std::size_t m = 0; m < grid.models; ++m)
    for (std::size_t t = 0; t < grid.topologies; ++t) {
      std::vector<SweepLayoutBest> block(A * B * L);
      for (std::size_t a = 0; a < A; ++a)
        for (std::size_t b = 0; b < B; ++b)
          for (std::size_t l = 0; l < L; ++l) {
            SweepLayoutBest& e = block[(a * B + b) * L + l];
            e.model = m, e.topology = t, e.acceptance = a, e.layout = l, e.batch = batches[b];
          }
      // Plain decoding does not depend on the acceptance: one pick per (batch, layout).
      std::vector<std::optional<std::size_t>> plain(B * L);
      const RowRange range = grid.model_topology_rows(m, t);
      for (std::size_t i = range.first; i < range.last; ++i) {
        const RowSpeeds& r = rows[i];
        if (!r.deployable) continue;
        const GridPoint g = grid.point(i);
        SweepLayoutBest& e = block[(g.acceptance * B + g.batch) * L + g.layout];
        if (!e.row || r.total_tokens_per_s > rows[*e.row].total_tokens_per_s) e.row = i;
        std::optional<std::size_t>& p = plain[g.batch * L + g.layout];
        if (r.decode_total_tokens_per_s > 0 && (!p || r.decode_total_tokens_per_s > rows[*p].decode_total_tokens_per_s))
          p = i;
      }
      for (std::size_t i = 0; i < block.size(); ++i) {
        SweepLayoutBest& e = block[i];
        e.plain_row = plain[(i / L % B) * L + e.layout];
        if (e.row) e.total_tokens_per_s = rows[*e.row].total_tokens_per_s;
        if (e.plain_row) e.plain_total_tokens_per_s = rows[*e.plain_row].decode_total_tokens_per_s;
        out.push_back(e);
      }
    }
  return out;
}

}  // namespace eaglesim
