#include "comm/p2p_kernel_model.hpp"

#include "topology/paths.hpp"

namespace eaglesim {

namespace {

// Share of peak memory bandwidth a small reduction kernel streams at; same ceiling the compute
// model uses for large memory-bound kernels (cost/compute_model.cpp, kMaxBwEfficiency).
constexpr double kLocalBwEfficiency = 0.78;

bool pulls(const Topology& t) { return uses_nvlink(t); }

double data_latency(const Topology& t, const Path& worst) {
  return pulls(t) ? 2.0 * worst.latency_us : worst.latency_us;
}

}  // namespace

double local_memory_us(const Topology& t, double bytes) {
  return bytes / (t.gpu.mem_bw_gbs * 1e3 * kLocalBwEfficiency);
}

KernelEstimate oneshot_estimate(const Topology& t, int n, double wire_bytes, double local_bytes) {
  Path worst = worst_path(t, n);
  double us = t.gpu.launch_gap_us + 2.0 * worst.latency_us + data_latency(t, worst) +
              flows_time_us(t, all_to_all_flows(n, wire_bytes)) +
              local_memory_us(t, (n + 1) * local_bytes);  // n inputs reduced, one output written
  return {us, pulls(t) ? "oneshot pull" : "oneshot push"};
}

KernelEstimate twoshot_estimate(const Topology& t, int n, double wire_bytes, double local_bytes) {
  Path worst = worst_path(t, n);
  double chunk = wire_bytes / n;
  double us = t.gpu.launch_gap_us + 3.0 * worst.latency_us + 2.0 * data_latency(t, worst) +
              2.0 * flows_time_us(t, all_to_all_flows(n, chunk)) +
              local_memory_us(t, (2.0 * n + 1) * local_bytes / n);  // reduce n chunks, gather n chunks
  return {us, pulls(t) ? "twoshot pull" : "twoshot push"};
}

}  // namespace eaglesim
