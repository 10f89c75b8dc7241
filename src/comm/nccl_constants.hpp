#pragma once
// NCCL's own tuning constants (facts, not code), from NVIDIA/nccl src/graph/tuning.cc
// (ncclTunerConstantsDefaults / baseLat / hwLat, NCCL 2.19-2.28) and src/include/device.h,
// src/enqueue.cc (per-thread work thresholds before NCCL adds channels).
// Units: µs and GB/s. Index order: algorithm {tree, ring} x protocol {LL, LL128, Simple}.
#include "topology/topology.hpp"

namespace eaglesim::nccl {

enum Algo { kTree = 0, kRing = 1 };
enum Proto { kLL = 0, kLL128 = 1, kSimple = 2 };
enum Hw { kNvlink = 0, kPci = 1, kNet = 2 };

// Fixed cost of one collective launch per algorithm/protocol ("baseLat").
constexpr double kBaseLatUs[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
// Latency of one step (one hop of the ring / tree) per link class ("hwLat").
constexpr double kHwLatUs[3][2][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // NVLink:  tree, ring
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // PCI:     tree, ring
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},  // network: tree, ring (a step between nodes)
};

// What posting a network send costs the host, µs ("getNetOverhead": 1 on Intel and other CPUs,
// 2 on AMD; x3 for Simple): an inter-node ring's intra-node steps cost at least that.
inline double net_overhead_us(CpuKind cpu) { return cpu == CpuKind::amd ? 2.0 : 1.0; }

// Per-architecture caps ("llMaxBws", "perChMaxRingLL128Bws", "perChMaxTreeBws",
// "perChMaxTreeLL128Bws"), each for 1 node, 2 nodes and more than 2 (NCCL's index2). NCCL indexes
// them by compute capability: 7.x volta, 8.x (incl. Ada 8.9) ampere, 9.0 hopper, >= 10.0
// blackwell (RTX PRO 6000 Blackwell is 12.0); across nodes the LL cap goes by the host CPU
// instead (AMD, else Intel's row).
struct ArchCaps {
  double ll_max_bw;
  double ring_ll128_per_ch;
  double tree_per_ch;
  double tree_ll128_per_ch;
};
inline ArchCaps arch_caps(GpuArch a, int nodes = 1, CpuKind cpu = CpuKind::unknown) {
  const int col = nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
  int row = 1;  // ampere and ada
  if (a == GpuArch::volta) row = 0;
  if (a == GpuArch::hopper) row = 2;
  if (a == GpuArch::blackwell) row = 3;
  static constexpr double kLLMax[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
  static constexpr double kRingLL128[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
  static constexpr double kTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
  static constexpr double kTreeLL128[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
  const double ll = col == 0 ? kLLMax[row][0] : kLLMax[cpu == CpuKind::amd ? 1 : 0][col];
  return {ll, kRingLL128[row][col], kTree[row][col], kTreeLL128[row][col]};
}

// Protocol efficiencies applied to the bus bandwidth: LL moves 8 B of data per 16 B line
// (ring: x0.5), LL128 120 of 128 B (x0.92), the tree's LL x1/3.8 and LL128 x7/9 on one node,
// 120/128 across nodes.
constexpr double kRingLLFactor = 0.5;
constexpr double kRingLL128Factor = 0.92;
constexpr double kTreeFactor = 0.92;
constexpr double kTreeLLFactor = 1.0 / 3.8;
constexpr double kTreeLL128Factor = 7.0 / 9.0;
constexpr double kTreeLL128FactorMultiNode = 120.0 / 128.0;

// NCCL's correction of the tree's bandwidth for medium sizes, per protocol, indexed by
// log2(bytes / 64) for 64 B .. 256 MiB ("treeCorrectionFactor", applied by ncclTopoGetAlgoTime to
// allreduce trees, logSize 0..22): the tree runs slower than its model there.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

// NCCL launches fewer channels while a message is small: it drops channels as long as
// bytes < channels * threads * threshold (enqueue.cc). Threads per channel and per-thread
// thresholds (device.h): LL 512 threads x 8 B (ring: x nRanks), LL128 640 x 8 B, Simple 512 x 64 B.
constexpr int kThreads[3] = {512, 640, 512};
constexpr double kThreadThresholdBytes[3] = {8, 8, 64};

}  // namespace eaglesim::nccl
