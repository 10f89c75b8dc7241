#include "sweep/batch_best.hpp"

namespace eaglesim {

BatchVerdicts best_per_batch(const SweepGrid& grid, const std::vector<int>& batches,
                             const std::vector<RowSpeeds>& rows) {
  BatchVerdicts out;
  const std::size_t A = grid.acceptances, B = grid.batches;
  for (std::size_t m = 0; m < grid.models; ++m)
    for (std::size_t t = 0; t < grid.topologies; ++t) {
      std::vector<SweepBatchBest> block(A * B);
      for (std::size_t a = 0; a < A; ++a)
        for (std::size_t b = 0; b < B; ++b) {
          SweepBatchBest& e = block[a * B + b];
          e.model = m, e.topology = t, e.acceptance = a, e.batch = batches[b];
        }
      std::vector<std::optional<std::size_t>> plain(B);
      const RowRange range = grid.model_topology_rows(m, t);
      for (std::size_t i = range.first; i < range.last; ++i) {
        const RowSpeeds& r = rows[i];
        if (!r.deployable) continue;
        const GridPoint g = grid.point(i);
        SweepBatchBest& e = block[g.acceptance * B + g.batch];
        if (!e.row || r.total_tokens_per_s > rows[*e.row].total_tokens_per_s) e.row = i;
        std::optional<std::size_t>& p = plain[g.batch];
        if (r.decode_total_tokens_per_s > 0 && (!p || r.decode_total_tokens_per_s > rows[*p].decode_total_tokens_per_s))
          p = i;
      }
      for (std::size_t a = 0; a < A; ++a) {
        SweepPayLimit limit;
        limit.model = m, limit.topology = t, limit.acceptance = a;
        for (std::size_t b = 0; b < B; ++b) {
          SweepBatchBest& e = block[a * B + b];
          e.plain_row = plain[b];
          if (plain[b]) e.plain_total_tokens_per_s = rows[*plain[b]].decode_total_tokens_per_s;
          if (e.row && e.plain_row && e.plain_total_tokens_per_s > 0)
            e.speedup_vs_plain = rows[*e.row].total_tokens_per_s / e.plain_total_tokens_per_s;
          if (!e.row || !e.plain_row) continue;
          ++limit.batches_run;
          if (!e.pays() && !limit.stops_at_batch) limit.stops_at_batch = e.batch;
        }
        out.limits.push_back(limit);
      }
      for (SweepBatchBest& e : block) out.best.push_back(e);
    }
  return out;
}

}  // namespace eaglesim
