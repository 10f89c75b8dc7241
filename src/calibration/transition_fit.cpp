#include "calibration/transition_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "calibration/calibration_cases.hpp"
#include "calibration/layer_chain.hpp"
#include "cost/compute_model.hpp"
#include "domain/kind_marginals.hpp"
#include "backend/op_pricing.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology_limits.hpp"

namespace eaglesim {

namespace {

// One kernel of a layer copy: an op, or a residual_add and the rmsnorm after it run as one.
struct LayerKernel {
  const Op* first;
  const Op* last;  // == first unless fused
};

// The kernels one copy of the layer runs in a chain of copies, in order. With fuse_add_norm a
// residual_add and the rmsnorm after it are one kernel (fusable_add_norm), the layer's last op
// and the next copy's first included (the MLP's residual add and the next layer's input norm):
// that kernel ends the copy.
std::vector<LayerKernel> layer_kernels(const ComputeLayerCase& layer, bool fuse_add_norm) {
  const std::vector<Op>& ops = layer.ops;
  const std::size_t n = ops.size();
  const bool wraps = fuse_add_norm && n > 1 && fusable_add_norm({ops[n - 1], ops[0]}, 0);
  std::vector<LayerKernel> out;
  for (std::size_t i = wraps ? 1 : 0; i < n; ++i) {
    if (wraps && i == n - 1) {
      out.push_back({&ops[n - 1], &ops[0]});
    } else if (fuse_add_norm && fusable_add_norm(ops, i)) {
      out.push_back({&ops[i], &ops[i + 1]});
      ++i;
    } else {
      out.push_back({&ops[i], &ops[i]});
    }
  }
  return out;
}

// The consecutive compute-op pairs a step charges a transition for per copy of the layer: into
// each kernel from the one before (a fused kernel's first op after the previous kernel's last),
// the last kernel into the next copy's first included.
std::vector<std::pair<const Op*, const Op*>> layer_pairs(const std::vector<LayerKernel>& kernels) {
  std::vector<std::pair<const Op*, const Op*>> pairs;
  const std::size_t n = kernels.size();
  for (std::size_t i = 0; i < n && n > 1; ++i) {
    const Op& a = *kernels[(i + n - 1) % n].last;
    const Op& b = *kernels[i].first;
    if (transition_kind(a.kind) && transition_kind(b.kind)) pairs.emplace_back(&a, &b);
  }
  return pairs;
}

double pairs_sum(const std::map<std::string, double>& table, const std::vector<std::pair<const Op*, const Op*>>& pairs) {
  double sum = 0;
  for (const auto& [a, b] : pairs) sum += find_transition(table, *a, *b).value_or(0.0);
  return sum;
}

using OpPairs = std::vector<std::pair<const Op*, const Op*>>;
using WantedEntries = std::map<std::string, std::pair<double, int>>;  // shape key -> (sum wanted, layers)

// One layer against its measured chain: its ops by the tables and its transitions. When the tables
// price every op (else that op's model error would land in the transitions) and the chain was
// measured, each of `shifted` (some of the layer's pairs) wants its entry moved, all by one amount,
// so that the layer's ops and transitions add up to the chain; `wanted` collects that.
LayerTransitionFit fit_layer(const ComputeLayerCase& layer, const std::vector<LayerKernel>& kernels,
                             double measured_us, const Topology& topo, const OpPairs& pairs, const OpPairs& shifted,
                             WantedEntries& wanted) {
  const std::map<std::string, double>& table = topo.calibration.transition_us;
  LayerTransitionFit f;
  f.where = layer.where;
  f.measured_us = measured_us;
  bool by_tables = true;
  for (const LayerKernel& k : kernels) {
    const OpCost c = k.first == k.last ? compute_cost(*k.first, topo) : add_rmsnorm_cost(*k.last, topo);
    f.ops_us += c.us;
    by_tables = by_tables && c.calibrated;
  }
  f.pairs_us = pairs_sum(table, pairs);
  f.pairs = static_cast<int>(pairs.size());
  f.fitted = by_tables && std::isfinite(measured_us) && measured_us > 0 && !shifted.empty();
  if (f.fitted) {
    const double shift = (measured_us - f.ops_us - f.pairs_us) / static_cast<double>(shifted.size());
    for (const auto& [a, b] : shifted) {
      auto& [sum, count] = wanted[transition_key(*a, *b)];
      sum += find_transition(table, *a, *b).value_or(0.0) + shift;
      ++count;
    }
  }
  return f;
}

// Every wanted entry becomes the mean of what its layers want (clamped to the table's range).
void set_wanted_means(const WantedEntries& wanted, std::map<std::string, double>& table) {
  for (const auto& [key, acc] : wanted)
    table[key] = std::clamp(acc.first / acc.second, -kMaxSequenceOverheadUs, kMaxSequenceOverheadUs);
}

// The shape keys of every pair the layers charge a transition for.
std::set<std::string> pair_keys_of(const std::vector<ComputeLayerCase>& layers, bool fuse_add_norm) {
  std::set<std::string> keys;
  for (const ComputeLayerCase& layer : layers)
    for (const auto& [a, b] : layer_pairs(layer_kernels(layer, fuse_add_norm))) keys.insert(transition_key(*a, *b));
  return keys;
}

// The kind a kernel's time is reported under: its op's, rmsnorm for a fused add + RMSNorm.
OpKind reported_kind(const LayerKernel& k) { return k.first == k.last ? k.first->kind : OpKind::rmsnorm; }

// The stripped layers of the verify steps' allreduce layers (fit_transitions_to_stripped_layers).
std::vector<ComputeLayerCase> verify_stripped_layers(const CalibrationRequest& q) {
  std::vector<ComputeLayerCase> out;
  for (const AllreduceLayerCase& layer : q.allreduce_layers)
    if (layer.step == "verify") out.push_back(stripped_layer(layer));
  return out;
}

// Layers that run pairs the earlier fits did not set (`fitted_before`), fitted on those pairs
// only: each measured layer (measured_us parallel to layers) with such pairs shifts their entries
// by one amount so that its ops and transitions add up to its chain; an entry several layers
// share takes the mean. One fit per layer with pairs of its own; `own_keys` (if given) receives
// the keys set.
std::vector<LayerTransitionFit> fit_own_pairs(const std::vector<ComputeLayerCase>& layers,
                                              const std::vector<double>& measured_us,
                                              const std::set<std::string>& fitted_before, bool fuse_add_norm,
                                              Topology& topo, std::set<std::string>* own_keys) {
  std::vector<LayerTransitionFit> fits;
  std::vector<const ComputeLayerCase*> fitted;
  WantedEntries wanted;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::vector<LayerKernel> kernels = layer_kernels(layers[l], fuse_add_norm);
    const OpPairs pairs = layer_pairs(kernels);
    OpPairs own;
    for (const auto& p : pairs)
      if (!fitted_before.count(transition_key(*p.first, *p.second))) own.push_back(p);
    if (own.empty()) continue;
    fits.push_back(fit_layer(layers[l], kernels, measured_us[l], topo, pairs, own, wanted));
    fitted.push_back(&layers[l]);
  }
  set_wanted_means(wanted, topo.calibration.transition_us);
  if (own_keys)
    for (const auto& [key, acc] : wanted) own_keys->insert(key);
  for (std::size_t l = 0; l < fits.size(); ++l)
    fits[l].fitted_us = pairs_sum(topo.calibration.transition_us, layer_pairs(layer_kernels(*fitted[l], fuse_add_norm)));
  return fits;
}

}  // namespace

std::vector<LayerTransitionFit> fit_transitions_to_layers(const CalibrationRequest& q,
                                                          const CalibrationMeasurements& m, Topology& topo) {
  if (!m.compute_layer_us.empty() && m.compute_layer_us.size() != q.compute_layers.size())
    throw std::invalid_argument("fit_transitions_to_layers: measurements do not match the request");
  std::vector<LayerTransitionFit> fits;
  WantedEntries wanted;
  std::vector<std::vector<LayerKernel>> kernels;
  for (std::size_t l = 0; l < m.compute_layer_us.size(); ++l) {
    kernels.push_back(layer_kernels(q.compute_layers[l], q.fuse_add_norm));
    const OpPairs pairs = layer_pairs(kernels.back());
    fits.push_back(fit_layer(q.compute_layers[l], kernels.back(), m.compute_layer_us[l], topo, pairs, pairs, wanted));
  }
  set_wanted_means(wanted, topo.calibration.transition_us);
  // What each layer's transitions come to now (shared entries are means, so not exactly the fit).
  for (std::size_t l = 0; l < fits.size(); ++l)
    fits[l].fitted_us = pairs_sum(topo.calibration.transition_us, layer_pairs(kernels[l]));
  return fits;
}

ComputeLayerCase stripped_layer(const AllreduceLayerCase& layer) {
  // The second copy of a two-copy chain without its allreduces is what every copy after the first
  // runs in the chain calibrate times (its head ops went to the copy before it).
  const LayerChain chain = layer_chain(layer, 2);
  ComputeLayerCase out;
  out.where = layer.where;
  for (std::size_t j : chain.without)
    if (j >= layer.layer_size && j < 2 * layer.layer_size && !chain.ops[j].is_comm()) out.ops.push_back(chain.ops[j]);
  return out;
}

std::vector<LayerTransitionFit> fit_transitions_to_stripped_layers(const CalibrationRequest& q,
                                                                   const CalibrationMeasurements& m, Topology& topo) {
  if (!m.allreduce_layer_baseline_us.empty() && m.allreduce_layer_baseline_us.size() != q.allreduce_layers.size())
    throw std::invalid_argument("fit_transitions_to_stripped_layers: measurements do not match the request");
  std::vector<ComputeLayerCase> layers;
  std::vector<double> measured;
  std::set<std::string> seen;  // one fit per stripped layer (several strategies may share it)
  for (std::size_t l = 0; l < m.allreduce_layer_baseline_us.size(); ++l) {
    // Verify steps only, as for compute layers: entries pool token counts.
    if (q.allreduce_layers[l].step != "verify") continue;
    ComputeLayerCase layer = stripped_layer(q.allreduce_layers[l]);
    std::string signature;
    for (const Op& op : layer.ops) signature += op_signature(op);
    if (!seen.insert(signature).second) continue;
    layer.where += " without its allreduces (" + q.allreduce_layers[l].strategy + ")";
    layers.push_back(std::move(layer));
    measured.push_back(m.allreduce_layer_baseline_us[l]);
  }
  // The pairs only stripped layers have.
  return fit_own_pairs(layers, measured, pair_keys_of(q.compute_layers, q.fuse_add_norm), q.fuse_add_norm, topo,
                       nullptr);
}

std::vector<ComputeLayerCase> kind_reduced_layers(const std::vector<ComputeLayerCase>& layers, bool fuse_add_norm) {
  const std::set<std::string> existing = pair_keys_of(layers, fuse_add_norm);
  std::vector<ComputeLayerCase> out;
  for (const ComputeLayerCase& layer : layers) {
    const std::vector<LayerKernel> kernels = layer_kernels(layer, fuse_add_norm);
    std::vector<OpKind> reported;
    for (const LayerKernel& k : kernels) reported.push_back(reported_kind(k));
    for (OpKind kind : marginal_kinds(reported, std::vector<bool>(reported.size(), false))) {
      std::vector<bool> dropped(layer.ops.size(), false);
      for (const LayerKernel& k : kernels)
        if (reported_kind(k) == kind) {
          dropped[static_cast<std::size_t>(k.first - layer.ops.data())] = true;
          dropped[static_cast<std::size_t>(k.last - layer.ops.data())] = true;
        }
      ComputeLayerCase reduced;
      reduced.where = layer.where + " without " + to_string(kind);
      reduced.gpus = layer.gpus;
      for (std::size_t i = 0; i < layer.ops.size(); ++i)
        if (!dropped[i]) reduced.ops.push_back(layer.ops[i]);
      if (reduced.ops.size() < 2) continue;
      bool new_pair = false;
      for (const auto& [a, b] : layer_pairs(layer_kernels(reduced, fuse_add_norm)))
        new_pair = new_pair || !existing.count(transition_key(*a, *b));
      if (new_pair) out.push_back(std::move(reduced));
    }
  }
  return out;
}

std::vector<LayerTransitionFit> fit_transitions_to_kind_reduced_layers(const CalibrationRequest& q,
                                                                       const CalibrationMeasurements& m, Topology& topo,
                                                                       std::set<std::string>& own_keys) {
  if (!m.kind_reduced_layer_us.empty() && m.kind_reduced_layer_us.size() != q.kind_reduced_layers.size())
    throw std::invalid_argument("fit_transitions_to_kind_reduced_layers: measurements do not match the request");
  if (m.kind_reduced_layer_us.empty()) return {};  // not measured
  std::set<std::string> fitted_before = pair_keys_of(q.compute_layers, q.fuse_add_norm);
  for (const std::string& key : pair_keys_of(verify_stripped_layers(q), q.fuse_add_norm)) fitted_before.insert(key);
  // The pairs only layers without some kind have.
  return fit_own_pairs(q.kind_reduced_layers, m.kind_reduced_layer_us, fitted_before, q.fuse_add_norm, topo, &own_keys);
}

std::vector<KindTransition> kind_transitions_from_shapes(std::map<std::string, double>& table,
                                                         const std::set<std::string>& secondary) {
  // family or kind key -> (sum, count), from the primary shape entries and from the secondary ones
  std::map<std::string, std::pair<double, int>> primary, fallback;
  for (const auto& [key, us] : table) {
    const TransitionLevels up = transition_levels_of(key);
    if (up.kinds.empty()) continue;  // not a shape key
    auto& means = secondary.count(key) ? fallback : primary;
    for (const std::string* level : {&up.family, &up.kinds}) {
      if (level == &up.family && up.family == up.kinds) continue;  // no GEMM side: one level
      auto& [sum, n] = means[*level];
      sum += us;
      ++n;
    }
  }
  std::map<std::string, std::pair<double, int>> means = primary;
  for (const auto& [key, acc] : fallback) means.emplace(key, acc);  // only where no primary entry is
  std::vector<KindTransition> out;
  for (const auto& [key, acc] : means) {
    KindTransition k;
    k.key = key;
    auto it = table.find(key);
    k.before_us = it == table.end() ? std::nan("") : it->second;
    k.after_us = std::clamp(acc.first / acc.second, -kMaxSequenceOverheadUs, kMaxSequenceOverheadUs);
    k.shapes = acc.second;
    table[key] = k.after_us;
    out.push_back(k);
  }
  return out;
}

}  // namespace eaglesim
