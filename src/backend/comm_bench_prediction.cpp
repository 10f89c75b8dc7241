#include "backend/comm_bench_prediction.hpp"

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"

namespace eaglesim {

std::vector<std::string> predicted_bench_strategies() {
  std::vector<std::string> out;
  for (const std::string& s : priced_strategy_names())
    if (!is_lower_bound(s)) out.push_back(s);
  return out;
}

int predicted_bench_ranks(const Topology& topo, int requested) {
  const int ranks = requested > 0 ? requested : topo.gpu_count;
  if (ranks < 2 || ranks > topo.gpu_count)
    throw SettingError(Setting::ranks, fmt::format("topology {} has {} GPUs; expected 2..{}, got {}", topo.name,
                                                   topo.gpu_count, topo.gpu_count, ranks));
  if (std::string why = ranks_placement_problem(topo, ranks); !why.empty()) throw SettingError(Setting::ranks, why);
  return ranks;
}

CommBenchResult predict_comm_bench(const CommBenchPrediction& p) {
  if (!p.topo) throw std::logic_error("predict_comm_bench: no topology");
  const Topology& topo = *p.topo;
  const int ranks = predicted_bench_ranks(topo, p.ranks);
  Topology uncalibrated = topo;
  uncalibrated.calibration = Calibration{};

  CommBenchResult r;
  r.predicted = true;
  r.topology = topo.name;
  r.nccl_channels = p.nccl.channels;
  r.device = fmt::format("{} x {}", ranks, topo.gpu.name);
  r.ranks = ranks;
  r.dtype = p.dtype;
  r.strategies = p.strategies;
  const auto elem = static_cast<std::int64_t>(bytes_per_element(p.dtype));
  for (std::int64_t bytes : p.sizes) {
    CommBenchRow row;
    row.bytes = bytes;
    row.count = bytes / elem;
    double best = 0;
    for (const std::string& s : p.strategies) {
      const CommCostModel& comm = find_priced_cost_model(s);
      CommBenchCell cell;
      cell.strategy = s;
      const CommSupport sup = comm.supports(topo, ranks, bytes);
      if (!sup.ok) {
        cell.supported = false;
        cell.note = sup.reason;
        row.cells.push_back(std::move(cell));
        continue;
      }
      CommCall call;
      call.query.topo = &topo;
      call.query.ranks = ranks;
      call.query.bytes = bytes;
      call.query.dtype = p.dtype;
      call.query.nccl = p.nccl;
      call.query.engine = p.engine;
      const CommPlan in_step = comm.plan(call);
      call.query.topo = &uncalibrated;
      const CommPlan alone = comm.plan(call);
      cell.graph_us = alone.cost.us;
      cell.context_us = in_step.cost.us;
      cell.algbw_gbs = static_cast<double>(bytes) / (cell.graph_us * 1e-6) / 1e9;
      cell.busbw_gbs = cell.algbw_gbs * 2.0 * (ranks - 1) / ranks;
      cell.note = in_step.cost.detail;
      cell.path = in_step.path;
      if (!in_step.path.empty()) cell.runs_as = in_step.model;
      cell.reason = in_step.reason;
      if (competes_as_plain_allreduce(s) && (row.fastest.empty() || cell.graph_us < best)) {
        best = cell.graph_us;
        row.fastest = s;
      }
      row.cells.push_back(std::move(cell));
    }
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace eaglesim
