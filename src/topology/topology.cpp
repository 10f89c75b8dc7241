// Names of the enums and the canonical writer. The writer emits every field in a fixed order
// with fixed layout (objects one member per line, number arrays and table points on one line),
// so that read -> write -> read -> write is byte-identical and `calibrate` output diffs cleanly.
#include "topology/topology.hpp"

#include <fmt/format.h>

#include "io/atomic_file.hpp"
#include "topology/calibration_keys.hpp"

namespace eaglesim {

const std::vector<std::string>& interconnect_names() {
  static const std::vector<std::string> names{"nvswitch", "nvlink_mesh", "pcie_switch", "pcie_root_complex",
                                              "pcie_cross_socket"};
  return names;
}
const char* to_string(Interconnect ic) { return interconnect_names()[static_cast<int>(ic)].c_str(); }

const std::vector<std::string>& network_kind_names() {
  static const std::vector<std::string> names{"infiniband", "roce"};
  return names;
}
const char* to_string(NetworkKind k) { return network_kind_names()[static_cast<int>(k)].c_str(); }

std::string ranks_placement_problem(const Topology& t, int ranks) {
  if (ranks > t.gpu_count) return fmt::format("{} ranks need {} GPUs; topology {} has {}", ranks, ranks, t.name, t.gpu_count);
  const int per_node = t.gpus_per_node();
  if (t.nodes > 1 && ranks > per_node && ranks % per_node != 0)
    return fmt::format("{} ranks span {} nodes of {} GPUs unevenly ({} on the last); topology {} needs at most {} "
                       "ranks (one node) or a multiple of {} (whole nodes)",
                       ranks, t.nodes_spanned(ranks), per_node, ranks % per_node, t.name, per_node, per_node);
  return "";
}

const std::vector<std::string>& cpu_kind_names() {
  static const std::vector<std::string> names{"unknown",      "amd", "intel-broadwell", "intel-skylake",
                                              "intel-sapphire-rapids", "intel-emerald-rapids", "arm", "power9"};
  return names;
}
const char* to_string(CpuKind c) { return cpu_kind_names()[static_cast<int>(c)].c_str(); }

const std::vector<std::string>& gpu_arch_names() {
  static const std::vector<std::string> names{"volta", "ampere", "ada", "hopper", "blackwell"};
  return names;
}
const char* to_string(GpuArch a) { return gpu_arch_names()[static_cast<int>(a)].c_str(); }

std::string ComputeCapability::to_string() const { return std::to_string(major) + "." + std::to_string(minor); }

ComputeCapability default_compute_capability(GpuArch a) {
  switch (a) {
    case GpuArch::volta: return {7, 0};
    case GpuArch::ampere: return {8, 0};
    case GpuArch::ada: return {8, 9};
    case GpuArch::hopper: return {9, 0};
    case GpuArch::blackwell: return {10, 0};
  }
  return {9, 0};
}

namespace {

using ojson = nlohmann::ordered_json;

// True when a value is printed on one line: numbers, and arrays of numbers, of number arrays
// (switch groups) or of objects of scalars (calibration points). Objects and string lists
// (sources) always get one member per line so that each source note reads on its own line.
bool is_number_array(const ojson& v) {
  if (!v.is_array()) return false;
  for (const auto& e : v) if (!e.is_number()) return false;
  return true;
}
bool is_flat(const ojson& v) {
  if (!v.is_structured()) return true;
  if (v.is_object()) return false;
  for (const auto& e : v) {
    bool point = e.is_object();
    if (point) for (const auto& m : e) point = point && !m.is_structured();
    if (!e.is_number() && !is_number_array(e) && !point) return false;
  }
  return true;
}

std::string compact(const ojson& v) {
  if (!v.is_structured()) return v.dump();
  bool obj = v.is_object();
  std::string out = obj ? "{" : "[";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    if (obj) out += ojson(it.key()).dump() + ": ";
    out += compact(*it);
  }
  return out + (obj ? "}" : "]");
}

void emit(const ojson& v, int indent, std::string& out) {
  // Top-level containers always break lines; small ones inside are flattened.
  if (indent > 0 && is_flat(v)) { out += compact(v); return; }
  if (v.empty()) { out += v.is_object() ? "{}" : "[]"; return; }
  std::string pad(indent + 2, ' ');
  bool obj = v.is_object();
  out += obj ? "{\n" : "[\n";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ",\n";
    first = false;
    out += pad;
    if (obj) out += ojson(it.key()).dump() + ": ";
    emit(*it, indent + 2, out);
  }
  out += "\n" + std::string(indent, ' ') + (obj ? "}" : "]");
}

ojson link_json(const LinkSpec& l) {
  ojson j;
  j["bw_gbs"] = l.bw_gbs;
  j["latency_us"] = l.latency_us;
  if (l.read_round_trip_us > 0) j["read_round_trip_us"] = l.read_round_trip_us;
  if (!l.source.empty()) j["source"] = l.source;
  return j;
}

ojson size_table(const std::vector<SizeCalPoint>& pts, const char* size_key) {
  ojson arr = ojson::array();
  for (const auto& p : pts) {
    ojson j;
    j[size_key] = p.size;
    j["us"] = p.us;
    arr.push_back(j);
  }
  return arr;
}

ojson keyed_numbers(const std::map<std::string, double>& table) {
  ojson t = ojson::object();
  for (const auto& [key, us] : table) t[key] = us;
  return t;
}

ojson fitted_json(const std::map<std::string, FittedModel>& fitted) {
  ojson t = ojson::object();
  for (const auto& [key, f] : fitted) {
    ojson j;
    j["fixed_us"] = f.fixed_us;
    j["bw_gbs"] = f.bw_gbs;
    if (fitted_model_has_flops(key)) j["tflops"] = f.tflops;
    if (fitted_model_has_geometry(key)) {
      j["wave_us"] = f.wave_us;
      j["block_bw_gbs"] = f.block_bw_gbs;
      j["block_tflops"] = f.block_tflops;
      j["combine_us"] = f.combine_us;
      j["combine_gbs"] = f.combine_gbs;
      if (f.step_us > 0) j["step_us"] = f.step_us;
    }
    j["points"] = f.points;
    j["rms_residual"] = f.rms_residual;
    j["max_residual"] = f.max_residual;
    if (!f.source.empty()) j["source"] = f.source;
    t[key] = j;
  }
  return t;
}

ojson calibration_json(const Calibration& c) {
  ojson j;
  if (!c.fitted.empty()) j["fitted"] = fitted_json(c.fitted);
  if (c.ranks > 0) j["ranks"] = c.ranks;
  if (!c.notes.empty()) j["notes"] = c.notes;
  if (c.launch_gap_us) j["launch_gap_us"] = *c.launch_gap_us;
  if (c.sequence_overhead_us) j["sequence_overhead_us"] = *c.sequence_overhead_us;
  if (!c.transition_us.empty()) j["transition_us"] = keyed_numbers(c.transition_us);
  if (!c.allreduce_context_us.empty()) j["allreduce_context_us"] = keyed_numbers(c.allreduce_context_us);
  if (!c.gemm.empty()) {
    ojson arr = ojson::array();
    for (const auto& p : c.gemm) {
      ojson g;
      g["m"] = p.m; g["n"] = p.n; g["k"] = p.k; g["dtype"] = to_string(p.dtype); g["us"] = p.us;
      arr.push_back(g);
    }
    j["gemm"] = arr;
  }
  auto tables = [&](const char* key, const std::map<std::string, std::vector<SizeCalPoint>>& m,
                    const char* size_key) {
    if (m.empty()) return;
    ojson t;
    for (const auto& [name, pts] : m) t[name] = size_table(pts, size_key);
    j[key] = t;
  };
  tables("allreduce", c.allreduce, "bytes");
  tables("attention", c.attention, "kv_len");
  tables("elementwise", c.elementwise, "elements");
  return j;
}

}  // namespace

std::string topology_to_string(const Topology& t) {
  ojson j;
  j["format"] = "eaglesim-topology";
  j["version"] = 1;
  j["name"] = t.name;
  if (!t.description.empty()) j["description"] = t.description;
  if (!t.sources.empty()) j["sources"] = t.sources;
  ojson g;
  g["name"] = t.gpu.name;
  g["arch"] = to_string(t.gpu.arch);
  if (t.gpu.compute_capability) g["compute_capability"] = t.gpu.compute_capability->to_string();
  g["sms"] = t.gpu.sms;
  g["bf16_tflops"] = t.gpu.bf16_tflops;
  g["fp8_tflops"] = t.gpu.fp8_tflops;
  g["mem_bw_gbs"] = t.gpu.mem_bw_gbs;
  g["mem_gb"] = t.gpu.mem_gb;
  g["launch_gap_us"] = t.gpu.launch_gap_us;
  if (!t.gpu.source.empty()) g["source"] = t.gpu.source;
  j["gpu"] = g;
  j["gpu_count"] = t.gpu_count;
  if (t.nodes > 1) {
    j["nodes"] = t.nodes;
    ojson n;
    n["kind"] = to_string(t.network.kind);
    n["nics_per_node"] = t.network.nics_per_node;
    n["rail_optimized"] = t.network.rail_optimized;
    n["nic"] = link_json(t.network.nic);
    if (!t.network.source.empty()) n["source"] = t.network.source;
    j["network"] = n;
  }
  j["interconnect"] = to_string(t.interconnect);
  j["p2p"] = t.p2p;
  if (t.acs) j["acs"] = true;
  if (!t.switch_groups.empty()) j["switch_groups"] = t.switch_groups;
  if (!t.socket_of_gpu.empty()) j["socket_of_gpu"] = t.socket_of_gpu;
  if (t.cpu != CpuKind::unknown) j["cpu"] = to_string(t.cpu);
  if (!t.layout_source.empty()) j["layout_source"] = t.layout_source;
  ojson links = ojson::object();
  if (t.nvlink.present()) links["nvlink"] = link_json(t.nvlink);
  if (t.pcie.present()) links["pcie"] = link_json(t.pcie);
  if (t.uplink.present()) links["uplink"] = link_json(t.uplink);
  if (t.inter_socket.present()) links["inter_socket"] = link_json(t.inter_socket);
  if (t.host_staging.present()) links["host_staging"] = link_json(t.host_staging);
  j["links"] = links;
  if (!t.calibration.empty() || t.calibration.launch_gap_us || t.calibration.sequence_overhead_us ||
      !t.calibration.transition_us.empty() || !t.calibration.allreduce_context_us.empty() ||
      t.calibration.ranks > 0 || !t.calibration.notes.empty())
    j["calibration"] = calibration_json(t.calibration);
  std::string out;
  emit(j, 0, out);
  return out + "\n";
}

void write_topology(const Topology& topo, const std::string& path) {
  write_file_atomic(path, topology_to_string(topo));
}

}  // namespace eaglesim
