#include "topology/paths.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace eaglesim {

bool uses_nvlink(const Topology& t) {
  return t.interconnect == Interconnect::nvswitch || t.interconnect == Interconnect::nvlink_mesh;
}

int switch_group_of(const Topology& t, int gpu) {
  const int local = t.local_index(gpu);
  for (std::size_t g = 0; g < t.switch_groups.size(); ++g)
    for (int member : t.switch_groups[g])
      if (member == local) return static_cast<int>(g);
  return -1;
}

int socket_of(const Topology& t, int gpu) {
  return t.socket_of_gpu.empty() ? 0 : t.socket_of_gpu[static_cast<std::size_t>(t.local_index(gpu))];
}

bool crosses_nodes(const Topology& t, int a, int b) { return t.node_of(a) != t.node_of(b); }

namespace {

double nvlink_pair_bw(const Topology& t) {
  // A mesh splits each GPU's links among its peers; a switch gives any pair the full injection rate.
  const int n = t.gpus_per_node();
  if (t.interconnect == Interconnect::nvlink_mesh && n > 2) return t.nvlink.bw_gbs / (n - 1);
  return t.nvlink.bw_gbs;
}

}  // namespace

Path path_between(const Topology& t, int a, int b) {
  Path p;
  if (a == b) return p;
  if (crosses_nodes(t, a, b)) {
    // GPUDirect RDMA: NIC to NIC over the fabric; P2P inside the nodes does not matter.
    p.network = true;
    p.bw_gbs = t.network.nic.bw_gbs;
    p.latency_us = t.network.nic.latency_us;
    return p;
  }
  if (!t.p2p) {
    p.staged = true;
    p.bw_gbs = t.host_staging.bw_gbs;
    p.latency_us = t.host_staging.latency_us;
    return p;
  }
  if (uses_nvlink(t)) {
    p.bw_gbs = nvlink_pair_bw(t);
    p.latency_us = t.nvlink.latency_us;
    return p;
  }
  p.bw_gbs = t.pcie.bw_gbs;
  p.latency_us = t.pcie.latency_us;
  int ga = switch_group_of(t, a), gb = switch_group_of(t, b);
  p.root_complex = t.acs || ga < 0 || gb < 0 || ga != gb;
  p.cross_socket = socket_of(t, a) != socket_of(t, b);
  if (p.root_complex) {
    p.latency_us += t.uplink.latency_us;
    if (t.uplink.present()) p.bw_gbs = std::min(p.bw_gbs, t.uplink.bw_gbs);
  }
  if (p.cross_socket) {
    p.latency_us += t.inter_socket.latency_us;
    if (t.inter_socket.present()) p.bw_gbs = std::min(p.bw_gbs, t.inter_socket.bw_gbs);
  }
  return p;
}

Path worst_path(const Topology& t, int ranks) {
  Path worst;
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b)
      if (a != b) {
        Path p = path_between(t, a, b);
        if (p.latency_us > worst.latency_us || worst.bw_gbs == 0) worst = p;
      }
  return worst;
}

double read_round_trip_us(const Topology& t, int reader, int owner) {
  const Path p = path_between(t, owner, reader);
  if (p.cross_socket && t.inter_socket.read_round_trip_us > 0) return t.inter_socket.read_round_trip_us;
  return 2.0 * p.latency_us;
}

double flows_time_us(const Topology& t, const std::vector<Flow>& flows) {
  // Bytes per directed link resource, and that resource's bandwidth (GB/s = 1e3 B/µs).
  std::map<std::string, std::pair<double, double>> load;
  auto add = [&](const std::string& key, double bw, double bytes) {
    auto& e = load[key];
    e.first += bytes;
    e.second = bw;
  };
  for (const auto& f : flows) {
    if (f.src == f.dst || f.bytes <= 0) continue;
    const std::string s = std::to_string(f.src), d = std::to_string(f.dst);
    if (crosses_nodes(t, f.src, f.dst)) {
      // Out of the sending node's NIC, into the receiving node's. On a rail-optimised fabric the
      // flow takes the destination's rail, reached over the sending node's own links first (PXN)
      // when the sender sits on another rail.
      const int rail = t.network.rail_optimized ? t.nic_of(f.dst) : t.nic_of(f.src);
      const std::string out_nic = std::to_string(t.node_of(f.src)) + "." + std::to_string(rail);
      const std::string in_nic = std::to_string(t.node_of(f.dst)) + "." +
                                 std::to_string(t.network.rail_optimized ? rail : t.nic_of(f.dst));
      add("nic_out" + out_nic, t.network.nic.bw_gbs, f.bytes);
      add("nic_in" + in_nic, t.network.nic.bw_gbs, f.bytes);
      if (t.network.rail_optimized && t.nic_of(f.src) != rail && uses_nvlink(t) && t.p2p) {
        const int relay = t.node_of(f.src) * t.gpus_per_node() + t.local_index(f.dst);
        add("out" + s, t.nvlink.bw_gbs, f.bytes);
        add("in" + std::to_string(relay), t.nvlink.bw_gbs, f.bytes);
      }
      continue;
    }
    if (!t.p2p) {
      // Device -> host copy on the sender, host -> device copy on the receiver.
      add("stage_out" + s, t.host_staging.bw_gbs, f.bytes);
      add("stage_in" + d, t.host_staging.bw_gbs, f.bytes);
      continue;
    }
    if (uses_nvlink(t)) {
      if (t.interconnect == Interconnect::nvlink_mesh) {
        add("pair" + s + ">" + d, nvlink_pair_bw(t), f.bytes);
      } else {
        add("out" + s, t.nvlink.bw_gbs, f.bytes);
        add("in" + d, t.nvlink.bw_gbs, f.bytes);
      }
      continue;
    }
    add("out" + s, t.pcie.bw_gbs, f.bytes);
    add("in" + d, t.pcie.bw_gbs, f.bytes);
    Path p = path_between(t, f.src, f.dst);
    if (p.root_complex && t.uplink.present()) {
      int gs = switch_group_of(t, f.src), gd = switch_group_of(t, f.dst);
      if (gs < 0 || gd < 0) {
        add("root_complex" + std::to_string(socket_of(t, f.src)), t.uplink.bw_gbs, f.bytes);
      } else {
        add("up" + std::to_string(gs), t.uplink.bw_gbs, f.bytes);
        add("down" + std::to_string(gd), t.uplink.bw_gbs, f.bytes);
      }
    }
    if (p.cross_socket && t.inter_socket.present())
      add("socket" + std::to_string(socket_of(t, f.src)) + ">" + std::to_string(socket_of(t, f.dst)),
          t.inter_socket.bw_gbs, f.bytes);
  }
  double worst = 0;
  for (const auto& [key, e] : load)
    if (e.second > 0) worst = std::max(worst, e.first / (e.second * 1e3));
  return worst;
}

std::vector<Flow> all_to_all_flows(int ranks, double bytes_per_pair) {
  std::vector<Flow> flows;
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b)
      if (a != b) flows.push_back({a, b, bytes_per_pair});
  return flows;
}

std::vector<Flow> ring_flows(int ranks, double bytes) {
  std::vector<Flow> flows;
  if (ranks < 2) return flows;
  for (int a = 0; a < ranks; ++a) flows.push_back({a, (a + 1) % ranks, bytes});
  return flows;
}

}  // namespace eaglesim
