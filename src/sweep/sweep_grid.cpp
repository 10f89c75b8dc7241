#include "sweep/sweep_grid.hpp"

namespace eaglesim {

SweepGrid::SweepGrid(std::size_t m, std::size_t t, std::size_t d, std::size_t p, std::size_t n, std::size_t s,
                     std::size_t a)
    : models(m), topologies(t), dtypes(d), tps(p), draft_tokens(n), strategies(s), acceptances(a) {}

std::size_t SweepGrid::rows() const { return models * topologies * dtypes * tps * draft_tokens * strategies * acceptances; }

std::size_t SweepGrid::row(const GridPoint& g) const {
  return (((((g.model * topologies + g.topology) * dtypes + g.dtype) * tps + g.tp) * draft_tokens + g.draft_tokens) *
              strategies +
          g.strategy) *
             acceptances +
         g.acceptance;
}

GridPoint SweepGrid::point(std::size_t row) const {
  GridPoint g;
  g.acceptance = row % acceptances;
  row /= acceptances;
  g.strategy = row % strategies;
  row /= strategies;
  g.draft_tokens = row % draft_tokens;
  row /= draft_tokens;
  g.tp = row % tps;
  row /= tps;
  g.dtype = row % dtypes;
  row /= dtypes;
  g.topology = row % topologies;
  g.model = row / topologies;
  return g;
}

RowRange SweepGrid::model_rows(std::size_t model) const {
  const std::size_t per_model = rows() / (models ? models : 1);
  return {model * per_model, (model + 1) * per_model};
}

RowRange SweepGrid::model_topology_rows(std::size_t model, std::size_t topology) const {
  const std::size_t per_block = dtypes * tps * draft_tokens * strategies * acceptances;
  const std::size_t first = (model * topologies + topology) * per_block;
  return {first, first + per_block};
}

std::size_t SweepGrid::fits() const { return models * topologies * dtypes * tps; }

std::size_t SweepGrid::fit(std::size_t m, std::size_t t, std::size_t d, std::size_t p) const {
  return ((m * topologies + t) * dtypes + d) * tps + p;
}

std::size_t SweepGrid::traces() const { return models * dtypes * tps * draft_tokens; }

std::size_t SweepGrid::trace(std::size_t m, std::size_t d, std::size_t p, std::size_t n) const {
  return ((m * dtypes + d) * tps + p) * draft_tokens + n;
}

}  // namespace eaglesim
