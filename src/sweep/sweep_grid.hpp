#pragma once
// The sweep's grid: model x topology x weight dtype x layout x batch x speculative configuration x
// strategy x acceptance, rows in that order (acceptance varies fastest). The index arithmetic
// lives here, once: a row's position, the point a row stands for, and the smaller grids the
// sweep works on before it has rows — feasibility per (model, topology, dtype, layout, batch) and
// one trace per (model, dtype, layout, batch, configuration).
#include <cstddef>

namespace eaglesim {

struct GridPoint {
  std::size_t model = 0, topology = 0, dtype = 0, layout = 0, batch = 0, spec = 0, strategy = 0, acceptance = 0;
};

// A half-open range of row indices.
struct RowRange {
  std::size_t first = 0, last = 0;
};

class SweepGrid {
 public:
  SweepGrid(std::size_t models, std::size_t topologies, std::size_t dtypes, std::size_t layouts, std::size_t batches,
            std::size_t specs, std::size_t strategies, std::size_t acceptances);

  std::size_t rows() const;
  std::size_t row(const GridPoint& p) const;
  GridPoint point(std::size_t row) const;

  // Every row of one model, and of one (model, topology).
  RowRange model_rows(std::size_t model) const;
  RowRange model_topology_rows(std::size_t model, std::size_t topology) const;

  std::size_t fits() const;
  std::size_t fit(std::size_t model, std::size_t topology, std::size_t dtype, std::size_t tp, std::size_t batch) const;
  // The (model, topology, dtype, layout, batch) of a fit index; the other coordinates 0.
  GridPoint fit_point(std::size_t fit) const;
  std::size_t traces() const;
  std::size_t trace(std::size_t model, std::size_t dtype, std::size_t tp, std::size_t batch, std::size_t spec) const;

  const std::size_t models, topologies, dtypes, layouts, batches, specs, strategies, acceptances;
};

}  // namespace eaglesim
