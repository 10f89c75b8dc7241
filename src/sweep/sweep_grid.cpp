#include "sweep/sweep_grid.hpp"

namespace eaglesim {

SweepGrid::SweepGrid(std::size_t m, std::size_t t, std::size_t d, std::size_t p, std::size_t b, std::size_t c,
                     std::size_t s, std::size_t a)
    : models(m), topologies(t), dtypes(d), layouts(p), batches(b), specs(c), strategies(s), acceptances(a) {}

std::size_t SweepGrid::rows() const {
  return models * topologies * dtypes * layouts * batches * specs * strategies * acceptances;
}

std::size_t SweepGrid::row(const GridPoint& g) const {
  std::size_t r = g.model;
  r = r * topologies + g.topology;
  r = r * dtypes + g.dtype;
  r = r * layouts + g.layout;
  r = r * batches + g.batch;
  r = r * specs + g.spec;
  r = r * strategies + g.strategy;
  return r * acceptances + g.acceptance;
}

GridPoint SweepGrid::point(std::size_t row) const {
  GridPoint g;
  g.acceptance = row % acceptances;
  row /= acceptances;
  g.strategy = row % strategies;
  row /= strategies;
  const std::size_t spec = row % specs;
  // What is left is the fit index of the row's (model, topology, dtype, layout, batch).
  GridPoint p = fit_point(row / specs);
  p.spec = spec;
  p.strategy = g.strategy;
  p.acceptance = g.acceptance;
  return p;
}

RowRange SweepGrid::model_rows(std::size_t model) const {
  const std::size_t per_model = rows() / (models ? models : 1);
  return {model * per_model, (model + 1) * per_model};
}

RowRange SweepGrid::model_topology_rows(std::size_t model, std::size_t topology) const {
  const std::size_t per_block = dtypes * layouts * batches * specs * strategies * acceptances;
  const std::size_t first = (model * topologies + topology) * per_block;
  return {first, first + per_block};
}

std::size_t SweepGrid::fits() const { return models * topologies * dtypes * layouts * batches; }

std::size_t SweepGrid::fit(std::size_t m, std::size_t t, std::size_t d, std::size_t p, std::size_t b) const {
  return (((m * topologies + t) * dtypes + d) * layouts + p) * batches + b;
}

GridPoint SweepGrid::fit_point(std::size_t fit) const {
  GridPoint g;
  std::size_t rest = fit;
  g.batch = rest % batches;
  rest /= batches;
  g.layout = rest % layouts;
  rest /= layouts;
  g.dtype = rest % dtypes;
  rest /= dtypes;
  g.topology = rest % topologies;
  g.model = rest / topologies;
  return g;
}

std::size_t SweepGrid::traces() const { return models * dtypes * layouts * batches * specs; }

std::size_t SweepGrid::trace(std::size_t m, std::size_t d, std::size_t p, std::size_t b, std::size_t c) const {
  return (((m * dtypes + d) * layouts + p) * batches + b) * specs + c;
}

}  // namespace eaglesim
