#pragma once
// Questions cost models ask a topology: what does the path between two ranks look like, and how
// long does a set of simultaneous transfers take when they share links. Rank r runs on GPU r.
//
// Path model (docs/topology-format.md):
//   NVSwitch      every pair: links.nvlink (bandwidth is per GPU, shared by all its flows)
//   NVLink mesh   every pair has its own share of the GPU's links: nvlink.bw / (gpu_count - 1)
//   PCIe          GPU link (links.pcie); between switch groups, or between GPUs on root ports,
//                 the root complex (links.uplink: latency added, bandwidth per switch uplink or,
//                 without switches, shared by all traffic through the root complex); between
//                 sockets also links.inter_socket; with acs every pair crosses the root complex,
//                 GPUs behind one switch included (up and down their switch's uplink)
//   p2p false     every transfer is staged through pinned host memory (links.host_staging)
//   other node    NIC to NIC over the network (network.nic), GPUDirect RDMA; each NIC's bandwidth
//                 is shared by the flows through it (rail-optimised: the destination's rail)
#include <vector>

#include "topology/topology.hpp"

namespace eaglesim {

struct Path {
  double bw_gbs = 0;       // narrowest link on the path, per direction
  double latency_us = 0;   // one-way, summed over the hops
  bool root_complex = false;
  bool cross_socket = false;
  bool staged = false;     // through host memory (no P2P)
  bool network = false;    // between nodes, NIC to NIC
};

bool uses_nvlink(const Topology& t);
int switch_group_of(const Topology& t, int gpu);  // -1: the GPU is not behind a switch
int socket_of(const Topology& t, int gpu);
bool crosses_nodes(const Topology& t, int a, int b);
Path path_between(const Topology& t, int a, int b);
// The slowest (highest-latency) path between any two of ranks 0..ranks-1.
Path worst_path(const Topology& t, int ranks);
// µs for a P2P read by `reader` of `owner`'s memory to come back: twice the path's latency, or
// links.inter_socket.read_round_trip_us when the path crosses sockets and the topology gives it.
double read_round_trip_us(const Topology& t, int reader, int owner);

struct Flow {
  int src = 0, dst = 0;
  double bytes = 0;
};
// µs to complete all flows started together, each link dividing its bandwidth among the flows
// crossing it (bandwidth-bound part only; add path latency separately).
double flows_time_us(const Topology& t, const std::vector<Flow>& flows);
// Flows of every rank sending `bytes_per_pair` to every other rank of 0..ranks-1.
std::vector<Flow> all_to_all_flows(int ranks, double bytes_per_pair);
// Flows of a ring 0 -> 1 -> ... -> ranks-1 -> 0, `bytes` each.
std::vector<Flow> ring_flows(int ranks, double bytes);

}  // namespace eaglesim
