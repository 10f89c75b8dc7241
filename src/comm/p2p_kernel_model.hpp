#pragma once
// Cost of our custom P2P allreduce kernels (kernels/), shared by oneshot, twoshot, fused and
// quant. One kernel launch, flag barriers over the interconnect, then the data movement:
//   one-shot: every rank gets all n-1 peers' whole buffers and reduces locally
//             = launch gap + 2 barriers + 1 data phase of the all-to-all of `wire` B
//   two-shot: reduce-scatter then all-gather, each moving wire/n per pair
//             = launch gap + 3 barriers + 2 data phases of the all-to-all of wire/n B
// A barrier is one one-way flag write on the slowest path (all ranks signal at once).
//
// How the data crosses the interconnect is the kernel's choice, and over PCIe it matters:
//   pull  every rank loads its peers' buffers. A load is a non-posted PCIe read: the data comes
//         back a round trip later, and a GPU keeps only a bounded number of read requests in
//         flight, so its read rate is (bytes in flight) / (round trip) per path, whatever the
//         links could carry. Over NVLink loads are cheap; the phase costs one round trip. A read
//         that crosses sockets comes back after links.inter_socket.read_round_trip_us where the
//         topology gives it (paths.hpp, read_round_trip_us).
//   push  every rank stores its buffer into each peer's receive area. Stores are posted writes:
//         one one-way latency, then the links' bandwidth.
// Either way the bytes share links (flows_time_us): per GPU in and out, and every switch
// uplink or root-complex crossing the transfer takes.
#include <string>

#include "topology/topology.hpp"

namespace eaglesim {

enum class P2pAccess { pull, push };
const char* to_string(P2pAccess a);

struct KernelEstimate {
  double us = 0;
  std::string detail;  // "oneshot pull", "twoshot push": the form priced
};

// `wire_bytes`: bytes each rank contributes on the wire; `local_bytes`: the bf16/fp16 buffer
// size each rank reads/writes in its own memory.
KernelEstimate oneshot_estimate(const Topology& t, int ranks, double wire_bytes, double local_bytes, P2pAccess access);
KernelEstimate twoshot_estimate(const Topology& t, int ranks, double wire_bytes, double local_bytes, P2pAccess access);
// µs of one data phase: every rank of 0..ranks-1 moving `bytes_per_pair` to or from every peer.
double p2p_phase_us(const Topology& t, int ranks, double bytes_per_pair, P2pAccess access);
// Time to stream `bytes` through the GPU's own memory inside a running kernel.
double local_memory_us(const Topology& t, double bytes);

}  // namespace eaglesim
