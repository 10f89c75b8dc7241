#pragma once
// How many channels NCCL runs a ring allreduce on over PCIe with P2P, found the way NCCL's
// topology search finds them (facts from NVIDIA/nccl, not its code):
//   - NCCL sees each GPU's PCIe link and each switch uplink at its line rate, width x speed / 80
//     GB/s (src/graph/topo.cc, ncclTopoAddPci: Gen5 x16 48, Gen4 x16 24, Gen3 x16 12), and the
//     link between sockets at its own rating of the CPU (src/graph/topo.h: AMD_BW 16,
//     SKL_QPI_BW 10, ...), whatever the link really carries.
//   - The search (src/graph/search.cc, ncclTopoCompute) tries ring speeds from a per-generation
//     list (compute capability >= 10.0: 90 ... 18 GB/s; 9.x: 60 ... 3; older: 40 ... 3), each
//     ring taking its speed from every link it crosses (through an Intel root complex 1.2 x that
//     from the PCIe links), keeps the speed x rings that is largest, stops as soon as that reaches
//     the GPU's own PCIe rate, and walks down only while the next speed is above 0.49 of the best.
//     Found at >= 25 GB/s per ring, the rings are doubled at half the speed (ncclTopoDupChannels);
//     a second pass then tries faster speeds with at least as many rings.
//   - When no ring fits even at the list's slowest speed, NCCL falls back to one ring in rank
//     order planned at 0.1 GB/s ("Could not find a path ... falling back to simple order").
//   - It runs twice the rings it found as channels (src/graph/connect.cc, ncclTopoPostset), at
//     most 64; NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS clamp that (--nccl-channels sets both).
//   - The Simple protocol runs 256 threads per channel instead of 512 when the rings found carry
//     no more than PCI_BW (12 GB/s) in all (src/graph/tuning.cc, ncclTopoTuneModel).
// On two AMD sockets with GPUs of compute capability >= 10.0 no ring fits (16 GB/s rated against
// a slowest speed of 18): NCCL runs 2 channels of 256 threads, which is why all_reduce_perf there
// reaches 22.2 GB/s busBW with its defaults and 37.6 with NCCL_MIN_NCHANNELS=8.
#include "topology/topology.hpp"

namespace eaglesim::nccl {

struct RingPlan {
  int rings = 1;              // rings NCCL's search found (its graph's nChannels)
  double ring_gbs = 0;        // the speed it planned each ring at (its graph's bwIntra)
  bool fallback = false;      // no ring fitted: one ring in rank order at 0.1 GB/s
  int channels = 2;           // channels NCCL runs: twice the rings, at most 64
  int simple_threads = 512;   // threads per channel of the Simple protocol
};

// Whether NCCL's search decides the channel count in this model: PCIe machines with P2P. Over
// NVLink and through host memory the model keeps its own channel rule (comm/nccl.cpp).
bool plans_pcie_rings(const Topology& t);
// The rings NCCL builds for ranks 0..ranks-1 of a PCIe topology with P2P (ranks >= 2).
RingPlan plan_pcie_rings(const Topology& t, int ranks);
// What NCCL rates a PCIe link at: the line rate of the smallest x16 generation that carries
// links.pcie.bw_gbs (the presets give measured rates, below the line rate).
double nccl_pci_gbs(const Topology& t);
// What NCCL rates the link between sockets at: its figure for t.cpu, or, where the file does
// not name the CPU, links.inter_socket.bw_gbs.
double nccl_socket_gbs(const Topology& t);

}  // namespace eaglesim::nccl
