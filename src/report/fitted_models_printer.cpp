#include "report/fitted_models_printer.hpp"

#include <fmt/format.h>

namespace eaglesim {

namespace {

bool has_geometry_terms(const FittedModel& f) {
  return f.wave_us > 0 || f.block_bw_gbs > 0 || f.block_tflops > 0 || f.combine_us > 0 || f.combine_gbs > 0 || f.step_us > 0;
}

}  // namespace

std::string format_fitted_models(const Topology& topo) {
  const auto& fitted = topo.calibration.fitted;
  if (fitted.empty()) return "";
  std::string out = fmt::format("fitted models of {} (us = fixed + max(bytes / GB/s, flops / TFLOP/s); residual = "
                                "fit / measured - 1 over the fitted points):\n",
                                topo.name);
  out += fmt::format("{:<26} {:>9} {:>8} {:>8} {:>7} {:>9} {:>9}\n", "kind", "fixed us", "GB/s", "TFLOP/s", "points",
                     "rms res", "max res");
  for (const auto& [key, f] : fitted)
    out += fmt::format("{:<26} {:>9.2f} {:>8.0f} {:>8} {:>7} {:>8.1f}% {:>8.1f}%\n", key, f.fixed_us, f.bw_gbs,
                       f.tflops > 0 ? fmt::format("{:.0f}", f.tflops) : "-", f.points, 100 * f.rms_residual,
                       100 * f.max_residual);
  // The attention models' launch-geometry terms (cost/fitted_model.hpp), one line each.
  for (const auto& [key, f] : fitted)
    if (has_geometry_terms(f))
      out += fmt::format("  {}: + waves x {:.2f} us, busiest CTA's {}bytes / {:.1f} GB/s + its tile FLOPs / {:.2f} "
                         "TFLOP/s inside the max, + {:.2f} us + partials / {:.0f} GB/s when splits are combined\n",
                         key, f.wave_us, f.step_us > 0 ? fmt::format("KV steps x {:.2f} us + ", f.step_us) : "",
                         f.block_bw_gbs, f.block_tflops, f.combine_us, f.combine_gbs);
  return out;
}

nlohmann::json fitted_models_json(const Topology& topo) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, f] : topo.calibration.fitted) {
    nlohmann::json e{{"fixed_us", f.fixed_us}, {"bw_gbs", f.bw_gbs}, {"points", f.points},
                     {"rms_residual", f.rms_residual}, {"max_residual", f.max_residual}};
    if (f.tflops > 0) e["tflops"] = f.tflops;
    if (has_geometry_terms(f)) {
      e["wave_us"] = f.wave_us;
      e["block_bw_gbs"] = f.block_bw_gbs;
      e["block_tflops"] = f.block_tflops;
      e["combine_us"] = f.combine_us;
      e["combine_gbs"] = f.combine_gbs;
      if (f.step_us > 0) e["step_us"] = f.step_us;
    }
    j[key] = e;
  }
  return j;
}

}  // namespace eaglesim
