// NCCL's ring search over a PCIe topology (comm/nccl_channels.hpp says what it reproduces and
// from which NCCL files). The ring is the model's ring 0 -> 1 -> ... -> n-1 -> 0, which crosses
// each switch uplink and the socket link once per direction, as the best ring NCCL finds does.
#include "comm/nccl_channels.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "topology/paths.hpp"

namespace eaglesim::nccl {

namespace {

// Ring speeds NCCL's search tries within one node, fastest first (src/graph/search.cc,
// speedArrayIntra / sm90SpeedArrayIntra / sm100SpeedArrayIntra).
const std::vector<double> kSpeedsSm100 = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
const std::vector<double> kSpeedsSm90 = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
const std::vector<double> kSpeedsOlder = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};

constexpr int kMaxRings = 32;                 // ring graph's maxChannels: MAXCHANNELS (64) / 2 (src/init.cc)
constexpr int kMaxChannels = 64;              // MAXCHANNELS (src/include/device.h)
constexpr double kFallbackRingGbs = 0.1;      // bwIntra of the rank-order fallback (search.cc)
constexpr double kPciBwGbs = 12.0;            // PCI_BW (src/graph/topo.h): below it Simple runs 256 threads
constexpr double kIntelP2pOverhead = 6.0 / 5; // INTEL_P2P_OVERHEAD (topo.h), PCIe links of a hop through an Intel root complex
constexpr double kDupMinGbs = 25.0;           // ncclTopoDupChannels doubles rings found at >= 25 GB/s ...
constexpr double kDupKeepGbs = 50.0;          // ... unless SM > 8.0, below 50 GB/s and more than 4 rings
constexpr double kWalkDownRatio = 0.49;       // the search walks to the next speed while next / best > 0.49

const std::vector<double>& speeds_for(int cc) {
  return cc >= 100 ? kSpeedsSm100 : cc >= 90 ? kSpeedsSm90 : kSpeedsOlder;
}

// One directed link the ring crosses: what NCCL rates it at and how much of a ring's speed each
// crossing takes (1, or 1.2 for a PCIe link of a hop through an Intel root complex), summed.
struct LinkLoad {
  double rated_gbs = 0;
  double per_ring = 0;
};

std::map<std::string, LinkLoad> ring_loads(const Topology& t, int n) {
  const double pci = nccl_pci_gbs(t);
  const bool intel = t.cpu == CpuKind::intel_broadwell || t.cpu == CpuKind::intel_skylake ||
                     t.cpu == CpuKind::intel_sapphire_rapids || t.cpu == CpuKind::intel_emerald_rapids;
  std::map<std::string, LinkLoad> loads;
  auto cross = [&](const std::string& key, double rated, double weight) {
    LinkLoad& l = loads[key];
    l.rated_gbs = rated;
    l.per_ring += weight;
  };
  for (int a = 0; a < n; ++a) {
    const int b = (a + 1) % n;
    const int ga = switch_group_of(t, a), gb = switch_group_of(t, b);
    const bool same_switch = ga >= 0 && ga == gb;  // NCCL does not see ACS: it routes by the tree
    const bool cross_socket = socket_of(t, a) != socket_of(t, b);
    // A P2P hop between root ports of one socket is NCCL's PATH_PHB, the one it charges extra
    // through an Intel CPU (search.cc, followPath).
    const double pcie_weight = intel && !same_switch && !cross_socket ? kIntelP2pOverhead : 1.0;
    cross("gpu" + std::to_string(a) + ">", pci, pcie_weight);
    cross(">gpu" + std::to_string(b), pci, pcie_weight);
    if (same_switch) continue;
    if (ga >= 0) cross("switch" + std::to_string(ga) + ">", pci, pcie_weight);
    if (gb >= 0) cross(">switch" + std::to_string(gb), pci, pcie_weight);
    if (cross_socket)
      cross("socket" + std::to_string(socket_of(t, a)) + ">" + std::to_string(socket_of(t, b)), nccl_socket_gbs(t), 1.0);
  }
  return loads;
}

int rings_at(const std::map<std::string, LinkLoad>& loads, double speed) {
  int rings = kMaxRings;
  for (const auto& [key, l] : loads)
    rings = std::min(rings, static_cast<int>(std::floor(l.rated_gbs / (l.per_ring * speed) + 1e-9)));
  return rings;
}

}  // namespace

bool plans_pcie_rings(const Topology& t) { return !uses_nvlink(t) && t.p2p && t.pcie.present(); }

double nccl_pci_gbs(const Topology& t) {
  // x16 line rates per direction (63, 31.5, 15.75 GB/s for Gen5, 4, 3) and NCCL's figure for each.
  if (t.pcie.bw_gbs > 31.5) return 48.0;
  if (t.pcie.bw_gbs > 15.75) return 24.0;
  return 12.0;
}

double nccl_socket_gbs(const Topology& t) {
  switch (t.cpu) {
    case CpuKind::amd: return 16.0;                    // AMD_BW
    case CpuKind::intel_broadwell: return 6.0;         // BDW_QPI_BW
    case CpuKind::intel_skylake: return 10.0;          // SKL_QPI_BW
    case CpuKind::intel_sapphire_rapids: return 22.0;  // SRP_QPI_BW
    case CpuKind::intel_emerald_rapids: return 40.0;   // ERP_QPI_BW
    case CpuKind::arm: return 6.0;                     // ARM_BW
    case CpuKind::power9: return 32.0;                 // P9_BW
    case CpuKind::unknown: break;
  }
  return t.inter_socket.bw_gbs;
}

RingPlan plan_pcie_rings(const Topology& t, int ranks) {
  const std::map<std::string, LinkLoad> loads = ring_loads(t, ranks);
  const int cc = t.gpu.capability().as_int();
  const std::vector<double>& speeds = speeds_for(cc);
  // The GPU's own rate bounds the search from above (system->maxBw and totalBw: its PCIe link).
  const double gpu_gbs = nccl_pci_gbs(t);

  RingPlan best;
  best.rings = 0;
  auto better = [&](int rings, double speed) { return rings * speed > best.rings * best.ring_gbs; };
  // Pass 1: from the fastest speed the GPU's link can carry, down.
  std::size_t i = 0;
  while (i + 1 < speeds.size() && speeds[i] > gpu_gbs) ++i;
  for (;; ++i) {
    const int rings = rings_at(loads, speeds[i]);
    if (rings > 0 && better(rings, speeds[i])) {
      best.rings = rings;
      best.ring_gbs = speeds[i];
    }
    if (best.rings > 0 && best.rings * best.ring_gbs >= gpu_gbs) break;
    if (i + 1 >= speeds.size()) break;
    if (best.rings > 0 && speeds[i + 1] / best.ring_gbs <= kWalkDownRatio) break;
  }
  if (best.rings == 0) {
    best.rings = 1;
    best.ring_gbs = kFallbackRingGbs;
    best.fallback = true;
  } else {
    if (best.ring_gbs >= kDupMinGbs && !(cc > 80 && best.ring_gbs < kDupKeepGbs && best.rings > 4)) {
      const int dup = std::min(best.rings * 2, kMaxRings);
      best.ring_gbs /= static_cast<double>((dup + best.rings - 1) / best.rings);
      best.rings = dup;
    }
    // Pass 2: faster speeds that keep at least as many rings.
    for (std::size_t j = 0; j < speeds.size() && speeds[j] > best.ring_gbs; ++j) {
      const int rings = rings_at(loads, speeds[j]);
      if (rings >= best.rings && better(rings, speeds[j])) {
        best.rings = rings;
        best.ring_gbs = speeds[j];
      }
    }
  }
  best.channels = std::min(kMaxChannels, 2 * best.rings);
  best.simple_threads = best.rings * best.ring_gbs <= kPciBwGbs ? 256 : 512;
  return best;
}

}  // namespace eaglesim::nccl
