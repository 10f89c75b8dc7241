// Reads a topology file (docs/topology-format.md). Every field goes through JsonCursor so that
// each problem is reported as "FILE: PATH: expected X, got Y"; unknown fields are rejected with
// the list of allowed ones, and cross-field rules (switch groups cover every GPU once, the links
// an interconnect needs are present) are checked here so that cost models can trust the struct.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "io/json_cursor.hpp"
#include "topology/topology.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology_limits.hpp"

namespace eaglesim {

namespace {


// "12.0": major 1..99, one minor digit, as CUDA prints it (nvidia-smi --query-gpu=compute_cap).
ComputeCapability read_compute_capability(const JsonCursor& c) {
  const std::string s = c.as_string();
  const std::size_t dot = s.find('.');
  const bool digits = dot != std::string::npos && dot >= 1 && dot <= 2 && s.size() == dot + 2 &&
                      std::all_of(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(dot), ::isdigit) &&
                      std::isdigit(static_cast<unsigned char>(s[dot + 1]));
  if (!digits || s[0] == '0') c.fail("a compute capability MAJOR.MINOR such as \"9.0\" or \"12.0\"");
  return {std::stoi(s.substr(0, dot)), s[dot + 1] - '0'};
}

GpuSpec read_gpu(const JsonCursor& c) {
  c.only_keys({"name", "arch", "compute_capability", "sms", "bf16_tflops", "fp8_tflops", "mem_bw_gbs", "mem_gb",
               "launch_gap_us", "source"});
  GpuSpec g;
  g.name = c.at("name").as_string();
  {
    std::string a = c.at("arch").as_enum(gpu_arch_names());
    const auto& names = gpu_arch_names();
    g.arch = static_cast<GpuArch>(std::find(names.begin(), names.end(), a) - names.begin());
  }
  if (auto cc = c.find("compute_capability")) g.compute_capability = read_compute_capability(*cc);
  g.sms = static_cast<int>(c.at("sms").as_positive_int(kMaxSms));
  g.bf16_tflops = c.at("bf16_tflops").as_positive_number(kMaxTflops);
  g.fp8_tflops = c.has("fp8_tflops") ? c.at("fp8_tflops").as_number(0, kMaxTflops) : 0.0;
  g.mem_bw_gbs = c.at("mem_bw_gbs").as_positive_number(kMaxBwGbs);
  g.mem_gb = c.at("mem_gb").as_positive_number(kMaxMemGb);
  g.launch_gap_us = c.at("launch_gap_us").as_number(0, kMaxLatencyUs);
  if (auto s = c.find("source")) g.source = s->as_string();
  return g;
}

LinkSpec read_link(const JsonCursor& c, bool reads_cross_it = false) {
  if (reads_cross_it) c.only_keys({"bw_gbs", "latency_us", "read_round_trip_us", "source"});
  else c.only_keys({"bw_gbs", "latency_us", "source"});
  LinkSpec l;
  l.bw_gbs = c.at("bw_gbs").as_positive_number(kMaxBwGbs);
  l.latency_us = c.at("latency_us").as_number(0, kMaxLatencyUs);
  if (auto r = c.find("read_round_trip_us")) l.read_round_trip_us = r->as_positive_number(kMaxLatencyUs);
  if (auto s = c.find("source")) l.source = s->as_string();
  return l;
}

NetworkSpec read_network(const JsonCursor& c) {
  c.only_keys({"kind", "nics_per_node", "rail_optimized", "nic", "source"});
  NetworkSpec n;
  const std::string kind = c.at("kind").as_enum(network_kind_names());
  const auto& names = network_kind_names();
  n.kind = static_cast<NetworkKind>(std::find(names.begin(), names.end(), kind) - names.begin());
  n.nics_per_node = static_cast<int>(c.at("nics_per_node").as_positive_int(kMaxNicsPerNode));
  if (auto r = c.find("rail_optimized")) n.rail_optimized = r->as_bool();
  n.nic = read_link(c.at("nic"));
  if (auto s = c.find("source")) n.source = s->as_string();
  return n;
}

Interconnect read_interconnect(const JsonCursor& c) {
  std::string s = c.as_enum(interconnect_names());
  const auto& names = interconnect_names();
  return static_cast<Interconnect>(std::find(names.begin(), names.end(), s) - names.begin());
}

std::vector<std::vector<int>> read_switch_groups(const JsonCursor& c, int gpu_count) {
  c.expect_array();
  if (c.size() == 0) c.fail("a non-empty array of GPU index arrays (or leave the field out)");
  std::vector<std::vector<int>> groups;
  std::vector<int> seen(gpu_count, -1);
  for (std::size_t g = 0; g < c.size(); ++g) {
    JsonCursor gc = c.at(g);
    gc.expect_array();
    if (gc.size() == 0) gc.fail("a non-empty array of GPU indices");
    std::vector<int> group;
    for (std::size_t i = 0; i < gc.size(); ++i) {
      JsonCursor ic = gc.at(i);
      int gpu = static_cast<int>(ic.as_int(0, gpu_count - 1));
      if (seen[gpu] >= 0)
        ic.fail_raw(fmt::format("GPU {} is already in switch group {}; each GPU sits behind exactly one switch",
                                gpu, seen[gpu]));
      seen[gpu] = static_cast<int>(g);
      group.push_back(gpu);
    }
    groups.push_back(group);
  }
  for (int gpu = 0; gpu < gpu_count; ++gpu)
    if (seen[gpu] < 0)
      c.fail_raw(fmt::format("GPU {} is in no switch group; switch_groups must cover GPUs 0..{} exactly once",
                             gpu, gpu_count - 1));
  return groups;
}

std::vector<SizeCalPoint> read_size_table(const JsonCursor& c, const char* size_key) {
  c.expect_array();
  if (c.size() == 0) c.fail("a non-empty array of measured points");
  std::vector<SizeCalPoint> out;
  for (std::size_t i = 0; i < c.size(); ++i) {
    JsonCursor p = c.at(i);
    p.only_keys({size_key, "us"});
    SizeCalPoint pt{p.at(size_key).as_positive_int(), p.at("us").as_positive_number(kMaxCalUs)};
    if (!out.empty() && pt.size <= out.back().size)
      p.at(size_key).fail(fmt::format("a {} larger than the previous point's {} (points must be sorted)",
                                      size_key, out.back().size));
    out.push_back(pt);
  }
  return out;
}

// An object of µs values under keys that `valid` accepts (the keyed calibration tables);
// `expected` says what a key must look like.
std::map<std::string, double> read_keyed_numbers(const JsonCursor& c, bool (*valid)(const std::string&),
                                                 const std::string& expected, double lo, double hi) {
  c.expect_object();
  std::map<std::string, double> out;
  for (const std::string& key : c.keys()) {
    if (!valid(key)) c.at(key.c_str()).fail_raw(fmt::format("key '{}': expected {}", key, expected));
    out[key] = c.at(key.c_str()).as_number(lo, hi);
  }
  return out;
}

// One fitted model: positive bandwidth, a FLOP rate exactly where the kind has a FLOP term, the
// residuals of its fit.
FittedModel read_fitted_model(const JsonCursor& c, const std::string& key) {
  const bool flops = fitted_model_has_flops(key);
  if (fitted_model_has_geometry(key))
    c.only_keys({"fixed_us", "bw_gbs", "tflops", "wave_us", "block_bw_gbs", "block_tflops", "combine_us",
                 "combine_gbs", "step_us", "points", "rms_residual",
                 "max_residual", "source"});
  else if (flops)
    c.only_keys({"fixed_us", "bw_gbs", "tflops", "points", "rms_residual", "max_residual", "source"});
  else
    c.only_keys({"fixed_us", "bw_gbs", "points", "rms_residual", "max_residual", "source"});
  FittedModel f;
  f.fixed_us = c.at("fixed_us").as_number(0, kMaxLatencyUs);
  f.bw_gbs = c.at("bw_gbs").as_positive_number(kMaxBwGbs);
  if (flops) f.tflops = c.at("tflops").as_positive_number(kMaxTflops);
  if (auto w = c.find("wave_us")) f.wave_us = w->as_number(0, kMaxLatencyUs);
  if (auto b = c.find("block_bw_gbs")) f.block_bw_gbs = b->as_number(0, kMaxBwGbs);
  if (auto t = c.find("block_tflops")) f.block_tflops = t->as_number(0, kMaxTflops);
  if (auto m = c.find("combine_us")) f.combine_us = m->as_number(0, kMaxLatencyUs);
  if (auto g = c.find("combine_gbs")) f.combine_gbs = g->as_number(0, kMaxBwGbs);
  if (auto p = c.find("step_us")) f.step_us = p->as_number(0, kMaxLatencyUs);
  f.points = static_cast<int>(c.at("points").as_positive_int(kMaxFittedPoints));
  f.rms_residual = c.at("rms_residual").as_number(0, kMaxFittedResidual);
  f.max_residual = c.at("max_residual").as_number(f.rms_residual, kMaxFittedResidual);
  if (auto s = c.find("source")) f.source = s->as_string();
  return f;
}

Calibration read_calibration(const JsonCursor& c, int gpu_count) {
  c.only_keys({"fitted", "ranks", "notes", "launch_gap_us", "sequence_overhead_us", "transition_us", "allreduce_context_us",
               "gemm", "allreduce", "attention", "elementwise"});
  Calibration cal;
  if (auto f = c.find("fitted")) {
    f->only_keys(fitted_model_keys());
    for (const auto& key : f->keys()) cal.fitted[key] = read_fitted_model(f->at(key.c_str()), key);
  }
  if (auto r = c.find("ranks")) cal.ranks = static_cast<int>(r->as_int(1, gpu_count));
  if (auto n = c.find("notes")) cal.notes = n->as_string_allow_empty();
  if (auto g = c.find("launch_gap_us")) cal.launch_gap_us = g->as_number(0, kMaxLatencyUs);
  if (auto g = c.find("sequence_overhead_us")) cal.sequence_overhead_us = g->as_number(-kMaxSequenceOverheadUs, kMaxSequenceOverheadUs);
  if (auto t = c.find("transition_us"))
    cal.transition_us = read_keyed_numbers(*t, valid_transition_key,
                                           "FROM>TO, each side a compute op kind (gemm, attention, rmsnorm, "
                                           "residual_add, act, embedding, lm_head, grouped_gemm) optionally followed "
                                           "by ':' and its shape, e.g. rmsnorm>gemm or "
                                           "rmsnorm:4096>gemm:6144:4096:bf16",
                                           -kMaxSequenceOverheadUs, kMaxSequenceOverheadUs);
  if (auto t = c.find("allreduce_context_us"))
    cal.allreduce_context_us = read_keyed_numbers(*t, valid_allreduce_context_key,
                                                  fmt::format("STRATEGY:BYTES@FROM>TO with STRATEGY one of {} and FROM and TO "
                                                              "compute op shapes, e.g. "
                                                              "oneshot:32768@gemm:4096:2048:bf16>residual_add:4096",
                                                              fmt::join(calibratable_strategy_names(), ", ")),
                                                  -kMaxSequenceOverheadUs, kMaxCalUs);
  if (auto g = c.find("gemm")) {
    g->expect_array();
    for (std::size_t i = 0; i < g->size(); ++i) {
      JsonCursor p = g->at(i);
      p.only_keys({"m", "n", "k", "dtype", "us"});
      GemmCalPoint pt{};
      pt.m = p.at("m").as_positive_int(kMaxGemmDim);
      pt.n = p.at("n").as_positive_int(kMaxGemmDim);
      pt.k = p.at("k").as_positive_int(kMaxGemmDim);
      if (!parse_dtype(p.at("dtype").as_enum(dtype_names()), pt.dtype)) p.at("dtype").fail("a dtype");
      pt.us = p.at("us").as_positive_number(kMaxCalUs);
      for (const auto& q : cal.gemm)
        if (q.m == pt.m && q.n == pt.n && q.k == pt.k && q.dtype == pt.dtype)
          p.fail_raw(fmt::format("duplicate GEMM point m={} n={} k={} {}", pt.m, pt.n, pt.k, to_string(pt.dtype)));
      cal.gemm.push_back(pt);
    }
  }
  if (auto a = c.find("allreduce")) {
    a->only_keys(calibratable_strategy_names());
    for (const auto& key : a->keys()) cal.allreduce[key] = read_size_table(a->at(key.c_str()), "bytes");
  }
  if (auto a = c.find("attention")) {
    for (const auto& key : a->keys()) {
      JsonCursor t = a->at(key.c_str());
      if (!valid_attention_key(key))
        t.fail_raw("unknown attention key (expected \"gqa:HEADS:KV_HEADS:HEAD_DIM\" or "
                   "\"mla:HEADS:KV_LORA_RANK:ROPE_DIM\" with positive integers, optionally followed by \":qQ_TOKENS\")");
      cal.attention[key] = read_size_table(t, "kv_len");
    }
  }
  if (auto e = c.find("elementwise")) {
    e->only_keys({"rmsnorm", "residual_add", "act", "embedding", kAddRmsnormTable, "elementwise", "other"});
    for (const auto& key : e->keys()) cal.elementwise[key] = read_size_table(e->at(key.c_str()), "elements");
  }
  return cal;
}

// Checks that the links the interconnect needs are present and that the layout is consistent.
void check_layout(const JsonCursor& root, const Topology& t) {
  bool pcie_kind = t.interconnect == Interconnect::pcie_switch ||
                   t.interconnect == Interconnect::pcie_root_complex ||
                   t.interconnect == Interconnect::pcie_cross_socket;
  auto need = [&](const LinkSpec& l, const char* name, const std::string& why) {
    if (!l.present())
      throw InputError::at(root.file(), std::string("links.") + name,
                           fmt::format("missing required field ({})", why));
  };
  if (!pcie_kind && t.gpus_per_node() > 1)
    need(t.nvlink, "nvlink", fmt::format("interconnect {} moves data over NVLink", to_string(t.interconnect)));
  if (pcie_kind) need(t.pcie, "pcie", "a PCIe interconnect needs the GPU's PCIe link");
  if (!t.p2p && t.gpus_per_node() > 1)
    need(t.host_staging, "host_staging", "with p2p false every transfer is staged through host memory");
  if (!pcie_kind && !t.switch_groups.empty())
    root.at("switch_groups").fail_raw(fmt::format(
        "switch_groups only applies to PCIe interconnects, this one is {}", to_string(t.interconnect)));
  if (t.interconnect == Interconnect::pcie_switch && t.switch_groups.empty())
    throw InputError::at(root.file(), "switch_groups",
                         "missing required field (interconnect pcie_switch names the GPUs behind each switch)");
  if (t.switch_groups.size() > 1) need(t.uplink, "uplink", "traffic between switch groups crosses the switch uplinks");
  if (t.acs) {
    if (!pcie_kind)
      root.at("acs").fail_raw(fmt::format("acs only applies to PCIe interconnects, this one is {}", to_string(t.interconnect)));
    if (!t.p2p) root.at("acs").fail_raw("acs routes P2P through the root complex; with p2p false there is no P2P to route");
    need(t.uplink, "uplink", "with acs true every P2P transfer goes up to the root complex");
  }
  std::set<int> sockets(t.socket_of_gpu.begin(), t.socket_of_gpu.end());
  if (t.interconnect == Interconnect::pcie_cross_socket) {
    if (sockets.size() < 2)
      throw InputError::at(root.file(), "socket_of_gpu",
                           "expected GPUs on at least two sockets for interconnect pcie_cross_socket");
    need(t.inter_socket, "inter_socket", "traffic between sockets crosses the inter-socket link");
    // A round trip is at least there and back: a one-way figure given by mistake is caught.
    const double one_way = t.pcie.latency_us + t.uplink.latency_us + t.inter_socket.latency_us;
    if (t.inter_socket.read_round_trip_us > 0 && t.inter_socket.read_round_trip_us < 2 * one_way)
      throw InputError::at(root.file(), "links.inter_socket.read_round_trip_us",
                           fmt::format("expected at least twice the one-way cross-socket path latency "
                                       "(pcie + uplink + inter_socket latency_us = {:g} us, so >= {:g}), got {:g}",
                                       one_way, 2 * one_way, t.inter_socket.read_round_trip_us));
  } else if (sockets.size() > 1 && pcie_kind) {
    throw InputError::at(root.file(), "interconnect",
                         "GPUs sit on several sockets: expected interconnect pcie_cross_socket");
  }
  // A PCIe switch hangs off one socket: all its GPUs must share it.
  for (std::size_t g = 0; g < t.switch_groups.size() && !t.socket_of_gpu.empty(); ++g)
    for (int gpu : t.switch_groups[g])
      if (t.socket_of_gpu[gpu] != t.socket_of_gpu[t.switch_groups[g][0]])
        throw InputError::at(root.file(), fmt::format("switch_groups[{}]", g),
                             "GPUs behind one switch must be on the same socket (see socket_of_gpu)");
}

}  // namespace

Topology parse_topology(const nlohmann::json& doc, const std::string& file) {
  JsonCursor root(doc, file);
  root.expect_object();
  root.only_keys({"format", "version", "name", "description", "sources", "gpu", "gpu_count", "nodes", "network", "interconnect",
                  "p2p", "acs", "switch_groups", "socket_of_gpu", "cpu", "layout_source", "links", "calibration"});
  root.at("format").as_enum({"eaglesim-topology"});
  {
    JsonCursor v = root.at("version");
    if (!v.json().is_number_integer() || v.json().get<std::int64_t>() != 1) v.fail("1 (the only version so far)");
  }

  Topology t;
  t.file = file;
  t.name = root.at("name").as_string();
  if (auto d = root.find("description")) t.description = d->as_string_allow_empty();
  if (auto s = root.find("sources")) {
    s->expect_array();
    for (std::size_t i = 0; i < s->size(); ++i) t.sources.push_back(s->at(i).as_string());
  }
  t.gpu = read_gpu(root.at("gpu"));
  t.gpu_count = static_cast<int>(root.at("gpu_count").as_int(1, kMaxGpus));
  if (auto n = root.find("nodes")) {
    t.nodes = static_cast<int>(n->as_int(1, kMaxNodes));
    if (t.gpu_count % t.nodes != 0)
      n->fail(fmt::format("a node count that divides gpu_count {} (every node holds as many GPUs)", t.gpu_count));
  }
  if (auto n = root.find("network")) {
    if (t.nodes == 1) n->fail_raw("network joins the nodes of a multi-node topology; this one has 1 node (set nodes)");
    t.network = read_network(*n);
  } else if (t.nodes > 1) {
    throw InputError::at(root.file(), "network",
                         fmt::format("missing required field ({} nodes are joined by a network)", t.nodes));
  }
  // The intra-node layout describes one node: its GPUs are 0..gpus_per_node-1.
  const int per_node = t.gpus_per_node();
  t.interconnect = read_interconnect(root.at("interconnect"));
  t.p2p = root.at("p2p").as_bool();
  if (auto a = root.find("acs")) t.acs = a->as_bool();
  if (auto g = root.find("switch_groups")) t.switch_groups = read_switch_groups(*g, per_node);
  if (auto s = root.find("socket_of_gpu")) {
    s->expect_array();
    if (static_cast<int>(s->size()) != per_node)
      s->fail(t.nodes > 1 ? fmt::format("an array of {} socket indices (one per GPU of a node)", per_node)
                          : fmt::format("an array of {} socket indices (one per GPU)", per_node));
    for (std::size_t i = 0; i < s->size(); ++i) t.socket_of_gpu.push_back(static_cast<int>(s->at(i).as_int(0, 7)));
  }
  if (auto c = root.find("cpu")) {
    const auto& names = cpu_kind_names();
    const std::string kind = c->as_enum(std::vector<std::string>(names.begin() + 1, names.end()));
    t.cpu = static_cast<CpuKind>(std::find(names.begin(), names.end(), kind) - names.begin());
  }
  if (auto s = root.find("layout_source")) t.layout_source = s->as_string();

  JsonCursor links = root.at("links");
  links.only_keys({"nvlink", "pcie", "uplink", "inter_socket", "host_staging"});
  if (auto l = links.find("nvlink")) t.nvlink = read_link(*l);
  if (auto l = links.find("pcie")) t.pcie = read_link(*l);
  if (auto l = links.find("uplink")) t.uplink = read_link(*l);
  if (auto l = links.find("inter_socket")) t.inter_socket = read_link(*l, true);
  if (auto l = links.find("host_staging")) t.host_staging = read_link(*l);
  check_layout(root, t);

  if (auto c = root.find("calibration")) t.calibration = read_calibration(*c, t.gpu_count);
  if (t.nodes > 1 && t.network.nics_per_node > per_node)
    root.at("network").at("nics_per_node").fail(fmt::format("at most one NIC per GPU ({} GPUs a node)", per_node));
  return t;
}

Topology read_topology(const std::string& path) {
  return parse_topology(JsonCursor::parse_file(path), path);
}

}  // namespace eaglesim
