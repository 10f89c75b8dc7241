#include "comm/modelled_cost_model.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cost/table_interpolation.hpp"

namespace eaglesim {

CommSupport ModelledCostModel::supports(const Topology& topo, int ranks, std::int64_t bytes) const {
  if (ranks < 1) return {false, fmt::format("needs at least 1 rank, got {}", ranks)};
  if (bytes <= 0) return {false, fmt::format("needs a positive message size, got {} B", bytes)};
  if (ranks > topo.gpu_count)
    return {false, fmt::format("needs {} GPUs; topology {} has {}", ranks, topo.name, topo.gpu_count)};
  if (std::string why = ranks_placement_problem(topo, ranks); !why.empty()) return {false, why};
  if (ranks == 1) return {};
  return strategy_supports(topo, ranks, bytes);
}

CommCost ModelledCostModel::cost(const CommQuery& q) const {
  if (!q.topo) throw std::invalid_argument("CommQuery without a topology");
  CommSupport s = supports(*q.topo, q.ranks, q.bytes);
  if (!s.ok)
    throw InputError(fmt::format("strategy {} cannot run a {} B allreduce on {} ranks of {}: {}", name(), q.bytes,
                                 q.ranks, q.topo->name, s.reason));
  if (q.ranks == 1) return {0.0, "1 rank: no allreduce", false, false};

  const Calibration& cal = q.topo->calibration;
  TableLookup lookup;
  auto it = cal.allreduce.find(name());
  if (is_calibratable(name()) && it != cal.allreduce.end() && (cal.ranks == 0 || cal.ranks == q.ranks))
    lookup = interpolate_table(it->second, static_cast<double>(q.bytes));
  if (lookup.inside) return {lookup.us, "calibrated", true, false};

  CommCost c = model(q);
  if (lookup.has_table) {
    c.extrapolated = true;
    c.detail += ", outside calibration";
  }
  return c;
}

CommSupport p2p_kernel_support(const Topology& topo, int ranks, std::int64_t bytes) {
  if (topo.nodes_spanned(ranks) > 1)
    return {false, fmt::format("needs every rank in one node (P2P loads and stores); {} ranks span {} nodes of {}",
                               ranks, topo.nodes_spanned(ranks), topo.name)};
  return p2p_kernel_support(topo.p2p, ranks, bytes);
}

CommSupport p2p_kernel_support(bool p2p, int ranks, std::int64_t bytes) {
  if (!p2p) return {false, "needs P2P between GPUs; this topology has P2P off"};
  if (ranks != 2 && ranks != 4 && ranks != 8)
    return {false, fmt::format("custom P2P kernels are built for 2, 4 or 8 ranks, not {}", ranks)};
  if (bytes > kMaxCustomBytes)
    return {false, fmt::format("message of {} B exceeds the {} B registered buffer", bytes, kMaxCustomBytes)};
  if (bytes % kCustomByteMultiple != 0)
    return {false, fmt::format("message of {} B is not a multiple of {} B (packed loads)", bytes, kCustomByteMultiple)};
  return {};
}

}  // namespace eaglesim
