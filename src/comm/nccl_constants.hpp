#pragma once
// NCCL's own tuning constants (facts, not code), from NVIDIA/nccl src/graph/tuning.cc
// (ncclTunerConstantsDefaults / baseLat / hwLat, NCCL 2.19-2.28) and src/include/device.h,
// src/enqueue.cc (per-thread work thresholds before NCCL adds channels).
// Units: µs and GB/s. Index order: algorithm {tree, ring} x protocol {LL, LL128, Simple}.
#include "topology/topology.hpp"

namespace eaglesim::nccl {

enum Algo { kTree = 0, kRing = 1 };
enum Proto { kLL = 0, kLL128 = 1, kSimple = 2 };
enum Hw { kNvlink = 0, kPci = 1 };

// Fixed cost of one collective launch per algorithm/protocol ("baseLat").
constexpr double kBaseLatUs[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
// Latency of one step (one hop of the ring / tree) per link class ("hwLat").
constexpr double kHwLatUs[2][2][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},  // NVLink: tree, ring
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},   // PCI:    tree, ring
};

// Per-architecture caps, single node ("llMaxBws", "perChMaxRingLL128Bws", "perChMaxTreeBws",
// "perChMaxTreeLL128Bws"). NCCL indexes them by compute capability: 7.x volta, 8.x (incl. Ada
// 8.9) ampere, 9.0 hopper, >= 10.0 blackwell (RTX PRO 6000 Blackwell is 12.0).
struct ArchCaps {
  double ll_max_bw;
  double ring_ll128_per_ch;
  double tree_per_ch;
  double tree_ll128_per_ch;
};
inline ArchCaps arch_caps(GpuArch a) {
  switch (a) {
    case GpuArch::volta: return {39.0, 20.0, 26.5, 20.0};
    case GpuArch::ampere:
    case GpuArch::ada: return {87.7, 20.0, 24.0, 20.0};
    case GpuArch::hopper: return {141.0, 36.7, 38.7, 36.7};
    case GpuArch::blackwell: return {282.0, 40.0, 70.0, 55.6};
  }
  return {87.7, 20.0, 24.0, 20.0};
}

// Protocol efficiencies applied to the bus bandwidth: LL moves 8 B of data per 16 B line
// (ring: x0.5), LL128 120 of 128 B (x0.92), the tree's LL x1/3.8 and LL128 x7/9 single-node.
constexpr double kRingLLFactor = 0.5;
constexpr double kRingLL128Factor = 0.92;
constexpr double kTreeFactor = 0.92;
constexpr double kTreeLLFactor = 1.0 / 3.8;
constexpr double kTreeLL128Factor = 7.0 / 9.0;

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
