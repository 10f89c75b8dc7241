#include "calibration/base_preset.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

namespace eaglesim {

std::string base_preset_for(const std::string& gpu_name, int count) {
  std::string up;
  for (char c : gpu_name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto has = [&](const char* s) { return up.find(s) != std::string::npos; };
  if (has("H200")) return count <= 2 ? "2x-h200-nvlink" : "8x-h200-nvswitch";
  if (has("H100")) return "8x-h100-nvswitch";
  if (has("B200")) return "8x-b200-nvswitch";
  if (has("A100")) return "8x-a100-nvswitch";
  if (has("L40S")) return "8x-l40s-pcie4";
  if (has("RTX PRO 6000")) return count <= 4 ? "4x-rtx-pro-6000-pcie5" : "8x-rtx-pro-6000-pcie5";
  return "";
}

Topology calibrated_topology(const Topology& base, const CalibrationMeasurements& m, Calibration cal) {
  Topology t = base;
  const int ranks = std::max(1, m.ranks);
  if (ranks < t.gpu_count) {
    // A calibration on fewer GPUs describes a machine of that many: keep the first `ranks`.
    t.gpu_count = ranks;
    std::vector<std::vector<int>> groups;
    for (const auto& g : t.switch_groups) {
      std::vector<int> kept;
      for (int gpu : g)
        if (gpu < ranks) kept.push_back(gpu);
      if (!kept.empty()) groups.push_back(kept);
    }
    t.switch_groups = groups;
    if (static_cast<int>(t.socket_of_gpu.size()) > ranks) t.socket_of_gpu.resize(static_cast<std::size_t>(ranks));
  }
  t.name = fmt::format("{}-calibrated-{}gpu", base.name, t.gpu_count);
  t.description = fmt::format("{} (static fields from preset {}), calibrated on {}", base.description, base.name,
                              m.device);
  t.file.clear();
  t.calibration = std::move(cal);
  if (t.calibration.ranks > t.gpu_count) t.calibration.ranks = t.gpu_count;
  return t;
}

}  // namespace eaglesim
