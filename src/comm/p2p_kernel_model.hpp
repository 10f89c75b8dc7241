#pragma once
// Cost of our custom P2P allreduce kernels (kernels/), shared by oneshot, twoshot, fused and
// quant. One kernel launch, flag barriers over the interconnect, then the data movement:
//   one-shot: every rank gets all n-1 peers' whole buffers and reduces locally
//             = launch gap + 2 barriers + 1 data latency + transfer(all-to-all of `wire` B)
//   two-shot: reduce-scatter then all-gather, each moving wire/n per pair
//             = launch gap + 3 barriers + 2 data latencies + 2 x transfer(all-to-all of wire/n B)
// A barrier is one one-way flag write on the slowest path (all ranks signal at once). Over
// NVLink the kernels pull (loads from peers: a round trip); over PCIe they push (posted writes:
// one way) because PCIe reads are non-posted and stall. Transfers share links (flows_time_us).
#include <string>

#include "topology/topology.hpp"

namespace eaglesim {

struct KernelEstimate {
  double us = 0;
  std::string detail;
};

// `wire_bytes`: bytes each rank contributes on the wire; `local_bytes`: the bf16/fp16 buffer
// size each rank reads/writes in its own memory.
KernelEstimate oneshot_estimate(const Topology& t, int ranks, double wire_bytes, double local_bytes);
KernelEstimate twoshot_estimate(const Topology& t, int ranks, double wire_bytes, double local_bytes);
// Time to stream `bytes` through the GPU's own memory inside a running kernel.
double local_memory_us(const Topology& t, double bytes);

}  // namespace eaglesim
