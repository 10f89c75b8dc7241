#include "backend/a2a_bench_prediction.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "backend/comm_bench_prediction.hpp"
#include "comm/all_to_all.hpp"
#include "core/errors.hpp"

namespace eaglesim {

namespace {

AllToAllBenchPhase priced(const AllToAllCost& c) {
  AllToAllBenchPhase ph;
  ph.us = c.us;
  ph.gbs = c.us > 0 ? c.counted_bytes / (c.us * 1e3) : 0.0;
  ph.detail = c.detail;
  return ph;
}

AllToAllBenchCell bench_cell(const std::string& strategy, AllToAllQuery q) {
  AllToAllBenchCell cell;
  cell.strategy = strategy;
  cell.runs_as = all_to_all_runs_as(strategy, q);
  // Either phase's problem refuses the pair: a MoE layer runs both.
  for (AllToAllPhase phase : {AllToAllPhase::dispatch, AllToAllPhase::combine}) {
    q.phase = phase;
    if (std::string why = all_to_all_problem(strategy, q); !why.empty()) {
      cell.supported = false;
      cell.reason = why;
      return cell;
    }
  }
  q.phase = AllToAllPhase::dispatch;
  const AllToAllCost d = all_to_all_cost(strategy, q);
  q.phase = AllToAllPhase::combine;
  q.dtype = DType::bf16;
  const AllToAllCost c = all_to_all_cost(strategy, q);
  cell.dispatch = priced(d);
  cell.combine = priced(c);
  cell.counted_as = d.counted_as;
  return cell;
}

}  // namespace

AllToAllBenchResult predict_all_to_all_bench(const AllToAllBenchPrediction& p) {
  if (!p.topo) throw std::logic_error("predict_all_to_all_bench: no topology");
  const Topology& topo = *p.topo;
  const int ranks = predicted_bench_ranks(topo, p.ranks);

  AllToAllBenchResult r;
  r.device = fmt::format("{} x {}", ranks, topo.gpu.name);
  r.topology = topo.name;
  r.ranks = ranks;
  r.nodes = topo.nodes_spanned(ranks);
  r.hidden = p.hidden;
  r.top_k = p.top_k;
  r.experts = p.experts;
  r.max_nodes_per_token = p.max_nodes_per_token;
  r.dispatch_dtype = p.dispatch_dtype;
  r.strategies = p.strategies;
  for (std::int64_t tokens : p.tokens) {
    AllToAllQuery q;
    q.topo = &topo;
    q.ranks = ranks;
    q.tokens = tokens;
    q.hidden = p.hidden;
    q.top_k = p.top_k;
    q.experts = p.experts;
    q.max_nodes_per_token = p.max_nodes_per_token;
    q.dtype = p.dispatch_dtype;
    AllToAllBenchRow row;
    row.tokens = tokens;
    double best = 0;
    for (const std::string& s : p.strategies) {
      AllToAllBenchCell cell = bench_cell(s, q);
      const double us = cell.dispatch.us + cell.combine.us;
      // A selector is not a contender of its own: it runs one of the others.
      if (cell.supported && cell.runs_as == s && (row.fastest.empty() || us < best)) {
        best = us;
        row.fastest = s;
      }
      row.cells.push_back(std::move(cell));
    }
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace eaglesim
