#pragma once
// A described GPU machine: the GPU, how many, and how they connect. Read from
// models/topologies/*.json (docs/topology-format.md). Cost models ask it questions
// (peak rates, the path between two ranks, which links a set of flows shares) rather than
// reading raw fields, so the interconnect kinds stay behind one interface.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "trace/op.hpp"

namespace eaglesim {

// GPU generation: NCCL picks some of its tuning constants by it (LL/LL128 bandwidth caps).
enum class GpuArch { volta, ampere, ada, hopper, blackwell };
const char* to_string(GpuArch a);
const std::vector<std::string>& gpu_arch_names();

// CUDA compute capability (major.minor). Serving engines gate kernels on it (SGLang's and vLLM's
// allreduce fusion run on 9.0 and 10.x only), and one generation holds several: Blackwell is 10.0
// on B200 and 12.0 on RTX PRO 6000.
struct ComputeCapability {
  int major = 0;
  int minor = 0;
  int as_int() const { return major * 10 + minor; }  // 90, 100, 120: the engines' table keys
  std::string to_string() const;                      // "9.0"
  bool operator==(const ComputeCapability& o) const { return major == o.major && minor == o.minor; }
};
// The capability a generation's data-centre part has (volta 7.0, ampere 8.0, ada 8.9, hopper 9.0,
// blackwell 10.0), for topologies that do not name theirs.
ComputeCapability default_compute_capability(GpuArch a);

struct GpuSpec {
  std::string name;
  GpuArch arch = GpuArch::hopper;
  std::optional<ComputeCapability> compute_capability;  // absent: default_compute_capability(arch)
  int sms = 0;
  double bf16_tflops = 0;      // dense
  double fp8_tflops = 0;       // dense; 0 = no fp8 tensor cores
  double mem_bw_gbs = 0;       // HBM/GDDR GB/s (1e9 B/s)
  double mem_gb = 0;           // device memory, GB (1e9 B)
  double launch_gap_us = 0;    // minimum time per kernel back to back inside a CUDA graph
  std::string source;          // where these figures come from
  ComputeCapability capability() const {
    return compute_capability ? *compute_capability : default_compute_capability(arch);
  }
};

enum class Interconnect { nvswitch, nvlink_mesh, pcie_switch, pcie_root_complex, pcie_cross_socket };
const char* to_string(Interconnect ic);
const std::vector<std::string>& interconnect_names();

// The host CPUs, in the classes NCCL tells apart when it rates the link between sockets
// (NVIDIA/nccl src/graph/topo.cc, ncclTopoGetInterCpuBw): NCCL plans its rings against that rating,
// not against the link's real bandwidth (comm/nccl_channels.hpp). unknown: the file does not say.
enum class CpuKind { unknown, amd, intel_broadwell, intel_skylake, intel_sapphire_rapids, intel_emerald_rapids, arm, power9 };
const char* to_string(CpuKind c);
const std::vector<std::string>& cpu_kind_names();  // as written in topology files ("amd", "intel-skylake", ...)

// One hop class: unidirectional bandwidth in GB/s and one-way latency in µs.
struct LinkSpec {
  double bw_gbs = 0;
  double latency_us = 0;
  // inter_socket only: the round trip of a P2P read that crosses the sockets, under the load of
  // every GPU reading its peers at once (0: absent, twice the path's one-way latency). A read is
  // non-posted: its completion comes back over the socket link, and there reads wait far longer
  // than the posted writes the one-way latency describes.
  double read_round_trip_us = 0;
  std::string source;  // where these figures come from
  bool present() const { return bw_gbs > 0; }  // bw 0: the topology has no such link
};

// The network joining the nodes of a multi-node topology. Every GPU reaches the fabric through a
// NIC of its node (GPUDirect RDMA); NICs are shared evenly, GPU g of a node on NIC
// g * nics_per_node / gpus_per_node. Rail-optimised fabrics join NIC i of every node on rail i:
// traffic to a GPU of another rail first crosses the node to the GPU on the destination's rail
// (NCCL's PXN), as NCCL routes all-to-all on such fabrics.
enum class NetworkKind { infiniband, roce };
const char* to_string(NetworkKind k);
const std::vector<std::string>& network_kind_names();
struct NetworkSpec {
  NetworkKind kind = NetworkKind::infiniband;
  int nics_per_node = 0;
  bool rail_optimized = true;
  LinkSpec nic;        // one NIC per direction; latency one-way GPU to GPU across the fabric
  std::string source;  // where the NIC count, rails and rates come from
};

// Measured tables that override the models where present (interpolated; see cost/table_interpolation.hpp).
struct GemmCalPoint { std::int64_t m, n, k; DType dtype; double us; };
struct SizeCalPoint { std::int64_t size; double us; };  // size: bytes (allreduce) or kv_len / tokens
// One op kind's fitted cost model (cost/fitted_model.hpp):
//   us = fixed_us + max(bytes / bw_gbs, flops / tflops)
// with the kind's bytes and effective FLOPs (tile padding and waves included); tflops 0 for the
// elementwise kinds (bytes only). The residuals are those of the fit over the points it was fitted
// to, as fit / measured - 1: what the kind's prediction misses on a shape no table point is near.
struct FittedModel {
  double fixed_us = 0;
  double bw_gbs = 0;
  double tflops = 0;
  // Attention only (fitted_model_has_geometry): what the kernel's launch geometry adds
  // (cost/attention_geometry.hpp). 0 leaves the term out.
  double wave_us = 0;        // per wave of CTAs over the GPU's resident slots
  double block_bw_gbs = 0;   // what one CTA streams on its own (the busiest slot's bytes at it)
  double block_tflops = 0;   // what one CTA computes on its own (the busiest slot's tile FLOPs at it)
  double combine_us = 0;     // the combine pass that merges split partials (its launch and rounds)
  double combine_gbs = 0;    // the split partials written and merged again (combine_bytes at it)
  double step_us = 0;        // per KV step the busiest CTA takes (the persistent kernel's latency per tile of keys)
  int points = 0;            // measured points it was fitted to
  double rms_residual = 0;   // sqrt(mean((fit / measured - 1)^2))
  double max_residual = 0;   // max |fit / measured - 1|
  std::string source;        // where and how it was measured (presets cite it)
};
struct Calibration {
  // Fitted models by kind key (calibration_keys.hpp, fitted_model_keys): used for every shape of
  // the kind, the measured tables below only as local corrections near their points.
  std::map<std::string, FittedModel> fitted;
  std::vector<GemmCalPoint> gemm;                                  // by (n,k,dtype), interpolated in m
  std::map<std::string, std::vector<SizeCalPoint>> allreduce;      // strategy -> in-context µs by bytes
  std::map<std::string, std::vector<SizeCalPoint>> attention;      // "gqa:heads:kv_heads:head_dim" -> µs by kv_len
  std::map<std::string, std::vector<SizeCalPoint>> elementwise;    // op kind, or add_rmsnorm -> µs by tokens*hidden
  std::optional<double> launch_gap_us;
  // What a compute op costs in a real step beyond its back-to-back chain time in the tables
  // (kernel-to-kernel transitions between different kernels), µs per op; fitted by
  // `calibrate --fit-sequence` (experimental, off by default) from replays of the calibration
  // traces with free allreduces. Applies to every compute op.
  std::optional<double> sequence_overhead_us;
  // Kernel transitions, measured: what a pair of consecutive compute ops of the traces costs in a
  // chain of (A, B) pairs beyond the two ops' own chain times, averaged per pair of shapes
  // ("rmsnorm:4096>gemm:6144:4096:bf16") and per kind pair ("rmsnorm>gemm"; transition_key).
  // The simulator adds it to op B when op A is the compute op before it, the shapes' entry if
  // there is one, else the kinds'. Chains of one op repeated (the tables) never switch kernels;
  // a step always does.
  std::map<std::string, double> transition_us;
  // Allreduces measured in their trace context (allreduce_context_key): a chain of (FROM,
  // allreduce, TO) triples minus a chain of (FROM, TO) pairs, per call, slowest rank. What the
  // allreduce adds to the step between those two ops, kernel switches on both sides included.
  // The simulator uses it instead of the strategy's table for an allreduce between those shapes.
  std::map<std::string, double> allreduce_context_us;
  int ranks = 0;                                                   // ranks the allreduces were measured on
  std::string notes;                                               // where/when measured
  bool empty() const { return fitted.empty() && gemm.empty() && allreduce.empty() && attention.empty() && elementwise.empty(); }
};

struct Topology {
  std::string name;        // preset name, e.g. "8x-rtx-pro-6000-pcie5"
  std::string file;        // path it was read from
  std::string description;
  GpuSpec gpu;
  int gpu_count = 1;       // in all nodes together; rank r runs on GPU r, node r / gpus_per_node()
  int nodes = 1;           // identical nodes; the intra-node fields below describe one of them
  NetworkSpec network;     // nodes > 1 only
  Interconnect interconnect = Interconnect::nvswitch;
  bool p2p = true;         // peer-to-peer loads/stores between GPUs (false: staged through host memory)
  // PCIe Access Control Services on the switch ports: the switch may not route P2P between its
  // own ports, so every P2P transfer goes up to the root complex and back down (links.uplink).
  bool acs = false;

  // NVLink / NVSwitch: per-GPU injection bandwidth per direction and one-hop latency.
  LinkSpec nvlink;
  // PCIe: GPU <-> its switch (or root port); switch uplink to the root complex; between sockets.
  LinkSpec pcie;
  LinkSpec uplink;
  LinkSpec inter_socket;
  std::vector<std::vector<int>> switch_groups;  // GPUs behind one PCIe switch (empty: each GPU on its own root port)
  std::vector<int> socket_of_gpu;               // socket per GPU (empty: all on socket 0)
  CpuKind cpu = CpuKind::unknown;               // the sockets' CPUs (layout_source says how known)
  // Without P2P, data is staged through pinned host memory: device->host->device copies.
  LinkSpec host_staging;
  std::string layout_source;  // where gpu_count/interconnect/p2p/switch groups/sockets come from

  Calibration calibration;
  std::vector<std::string> sources;  // where the figures come from (kept from the file)

  int gpus_per_node() const { return gpu_count / nodes; }
  int node_of(int gpu) const { return gpu / gpus_per_node(); }
  int local_index(int gpu) const { return gpu % gpus_per_node(); }
  // The NIC (index within its node) GPU `gpu` sends and receives through.
  int nic_of(int gpu) const { return local_index(gpu) * network.nics_per_node / gpus_per_node(); }
  // Nodes ranks 0..ranks-1 occupy.
  int nodes_spanned(int ranks) const { return (ranks + gpus_per_node() - 1) / gpus_per_node(); }
};

// Why `ranks` ranks (on GPUs 0..ranks-1) cannot run on `t`, or "" when they can: more ranks than
// GPUs, or a rank count that spans nodes without filling each of them (NCCL's hierarchical
// algorithms and the engines place the same number of ranks on every node).
std::string ranks_placement_problem(const Topology& t, int ranks);

Topology read_topology(const std::string& path);       // validates everything, InputError on problems
Topology parse_topology(const nlohmann::json& doc, const std::string& file);  // same, from parsed JSON
std::string topology_to_string(const Topology& topo);  // deterministic JSON (calibrate writes it)
void write_topology(const Topology& topo, const std::string& path);  // atomic
// Resolves "2x-h200-nvlink", "2x-h200-nvlink.json" or a path; presets live in models/topologies/.
std::string resolve_topology_path(const std::string& name_or_path);

}  // namespace eaglesim
