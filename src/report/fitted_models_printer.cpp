#include "report/fitted_models_printer.hpp"

#include <fmt/format.h>

namespace eaglesim {

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
  return out;
}

nlohmann::json fitted_models_json(const Topology& topo) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, f] : topo.calibration.fitted) {
    nlohmann::json e{{"fixed_us", f.fixed_us}, {"bw_gbs", f.bw_gbs}, {"points", f.points},
                     {"rms_residual", f.rms_residual}, {"max_residual", f.max_residual}};
    if (f.tflops > 0) e["tflops"] = f.tflops;
    j[key] = e;
  }
  return j;
}

}  // namespace eaglesim
