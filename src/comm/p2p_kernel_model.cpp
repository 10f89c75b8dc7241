#include "comm/p2p_kernel_model.hpp"

#include <algorithm>

#include "topology/paths.hpp"

namespace eaglesim {

namespace {

// Share of peak memory bandwidth a small reduction kernel streams at; same ceiling the compute
// model uses for large memory-bound kernels (cost/compute_model.cpp, kMaxBwEfficiency).
constexpr double kLocalBwEfficiency = 0.78;

// Bytes of PCIe read requests one GPU keeps outstanding. PCIe caps a requester's outstanding
// non-posted requests by its tags (256 with 8-bit tags, 768 with 10-bit tags, PCIe 4.0+), and an
// SM's remote load is a request of at most 128 B; 512 x 128 B is an assumption of that order. It
// is what makes a pull kernel slower than a push kernel over PCIe at equal link bandwidth (the
// read rate of a 2.5 us round trip is 26 GB/s, under a Gen5 x16 link's 54). NVLink keeps far
// more in flight: not a limit there.
constexpr double kPcieReadBytesInFlight = 64.0 * 1024;

bool pcie_p2p(const Topology& t) { return t.p2p && !uses_nvlink(t); }

// Little's law per reader: with a window of bytes in flight shared by all its reads, a rank
// that reads b_p from peer p over a round trip rtt_p takes sum(b_p * rtt_p) / window.
double read_window_us(const Topology& t, int n, double bytes_per_pair) {
  double worst = 0;
  for (int reader = 0; reader < n; ++reader) {
    double byte_us = 0;
    for (int peer = 0; peer < n; ++peer)
      if (peer != reader) byte_us += bytes_per_pair * read_round_trip_us(t, reader, peer);
    worst = std::max(worst, byte_us / kPcieReadBytesInFlight);
  }
  return worst;
}

}  // namespace

const char* to_string(P2pAccess a) { return a == P2pAccess::pull ? "pull" : "push"; }

double local_memory_us(const Topology& t, double bytes) {
  return bytes / (t.gpu.mem_bw_gbs * 1e3 * kLocalBwEfficiency);
}

double p2p_phase_us(const Topology& t, int n, double bytes_per_pair, P2pAccess access) {
  const Path worst = worst_path(t, n);
  const double links = flows_time_us(t, all_to_all_flows(n, bytes_per_pair));
  if (access == P2pAccess::push) return worst.latency_us + links;
  double round_trip = 2.0 * worst.latency_us;
  if (!pcie_p2p(t)) return round_trip + links;
  for (int reader = 0; reader < n; ++reader)
    for (int peer = 0; peer < n; ++peer)
      if (peer != reader) round_trip = std::max(round_trip, read_round_trip_us(t, reader, peer));
  return round_trip + std::max(links, read_window_us(t, n, bytes_per_pair));
}

KernelEstimate oneshot_estimate(const Topology& t, int n, double wire_bytes, double local_bytes, P2pAccess access) {
  const Path worst = worst_path(t, n);
  double us = t.gpu.launch_gap_us + 2.0 * worst.latency_us + p2p_phase_us(t, n, wire_bytes, access) +
              local_memory_us(t, (n + 1) * local_bytes);  // n inputs reduced, one output written
  return {us, std::string("oneshot ") + to_string(access)};
}

KernelEstimate twoshot_estimate(const Topology& t, int n, double wire_bytes, double local_bytes, P2pAccess access) {
  const Path worst = worst_path(t, n);
  double chunk = wire_bytes / n;
  double us = t.gpu.launch_gap_us + 3.0 * worst.latency_us + 2.0 * p2p_phase_us(t, n, chunk, access) +
              local_memory_us(t, (2.0 * n + 1) * local_bytes / n);  // reduce n chunks, gather n chunks
  return {us, std::string("twoshot ") + to_string(access)};
}

}  // namespace eaglesim
