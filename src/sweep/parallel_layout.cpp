#include "sweep/parallel_layout.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

std::string layout_label(const ParallelLayout& l) {
  std::string s = fmt::format("TP{}", l.tp);
  if (l.ep > 1) s += fmt::format(" EP{}", l.ep);
  if (l.dp_attention) s += " DPA";
  return s;
}

std::vector<ParallelLayout> tp_layouts(const std::vector<int>& tps) {
  std::vector<ParallelLayout> out;
  for (int tp : tps) out.push_back({tp, 1, false});
  return out;
}

bool tensor_parallel_only(const std::vector<ParallelLayout>& layouts) {
  for (const ParallelLayout& l : layouts)
    if (l.ep > 1 || l.dp_attention) return false;
  return true;
}

LayoutAxis build_layout_axis(const std::vector<int>& tps, const std::vector<int>& eps,
                             const std::vector<bool>& dp_attention) {
  LayoutAxis axis;
  for (int tp : tps)
    for (int ep : eps)
      for (bool dp : dp_attention) {
        const ParallelLayout l{tp, ep, dp};
        std::string why;
        if (ep > tp || tp % ep != 0)
          why = fmt::format("EP {} does not divide TP {} (the experts split over groups of TP / EP ranks)", ep, tp);
        else if (dp && tp < 2)
          why = "data-parallel attention needs at least 2 ranks";
        else if (dp && ep != tp)
          why = fmt::format("data-parallel attention needs EP = TP ({}), got EP {}", tp, ep);
        if (why.empty())
          axis.layouts.push_back(l);
        else
          axis.skipped.push_back({l, why});
      }
  if (axis.layouts.empty()) {
    const SkippedLayout& first = axis.skipped.front();
    throw InputError(fmt::format("--ep / --dp-attention: no combination with --tp is a layout ({}: {})",
                                 layout_label(first.layout), first.reason));
  }
  return axis;
}

std::string layout_problem(const ModelConfig& model, const ParallelLayout& layout) {
  if (layout.ep > 1 && !model.is_moe())
    return fmt::format("{} has no routed experts: EP {} needs a MoE model", model.name, layout.ep);
  if (layout.ep > 1 && model.routed_experts % layout.ep != 0)
    return fmt::format("EP {} does not divide the {} routed experts of {}", layout.ep, model.routed_experts,
                       model.name);
  if (layout.dp_attention && !model.is_moe())
    return fmt::format("{} has no routed experts: data-parallel attention here needs a MoE model", model.name);
  return "";
}

}  // namespace eaglesim
