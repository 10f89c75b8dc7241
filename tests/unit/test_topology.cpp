#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"
#include "io/json_cursor.hpp"
#include "topology/paths.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;
namespace fs = std::filesystem;

namespace {

const std::string kPresets = std::string(EAGLESIM_REPO) + "/models/topologies";
const std::string kBad = std::string(EAGLESIM_TEST_DATA) + "/bad_topology";

Topology preset(const std::string& name) { return read_topology(kPresets + "/" + name + ".json"); }

std::vector<std::string> preset_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kPresets))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Topology, EveryPresetLoadsAndCarriesItsSources) {
  auto files = preset_files();
  ASSERT_GE(files.size(), 13u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    Topology t = read_topology(f);
    EXPECT_EQ(t.name, fs::path(f).stem().string()) << "preset name must match its file name";
    EXPECT_FALSE(t.gpu.source.empty());
    EXPECT_FALSE(t.layout_source.empty());
    for (const LinkSpec* l : {&t.nvlink, &t.pcie, &t.uplink, &t.inter_socket, &t.host_staging, &t.network.nic})
      if (l->present()) EXPECT_FALSE(l->source.empty());
    if (t.nodes > 1) EXPECT_FALSE(t.network.source.empty());
    EXPECT_GT(t.gpu.launch_gap_us, 0.0);
  }
}

TEST(Topology, PresetsAreInCanonicalForm) {
  // Presets are written by topology_to_string, so calibrate's output diffs cleanly against them.
  for (const auto& f : preset_files()) {
    SCOPED_TRACE(f);
    EXPECT_EQ(read_file(f), topology_to_string(read_topology(f)));
  }
}

TEST(Topology, PresetFigures) {
  Topology h = preset("2x-h200-nvlink");
  EXPECT_EQ(h.gpu_count, 2);
  EXPECT_EQ(h.interconnect, Interconnect::nvlink_mesh);
  EXPECT_DOUBLE_EQ(h.nvlink.bw_gbs, 300.0);  // measured rate; 18 NVLink4 links x 25 GB/s is the 450 line rate
  EXPECT_DOUBLE_EQ(h.gpu.mem_bw_gbs, 4800.0);
  EXPECT_DOUBLE_EQ(h.gpu.bf16_tflops, 989.0);
  EXPECT_EQ(h.gpu.arch, GpuArch::hopper);

  Topology r = preset("8x-rtx-pro-6000-pcie5");
  EXPECT_TRUE(r.p2p);
  EXPECT_EQ(r.interconnect, Interconnect::pcie_switch);
  EXPECT_EQ(r.switch_groups.size(), 2u);
  EXPECT_FALSE(r.acs);
  EXPECT_TRUE(preset("8x-rtx-pro-6000-pcie5-acs").acs);
  EXPECT_DOUBLE_EQ(r.gpu.mem_bw_gbs, 1792.0);
  Topology n = preset("8x-rtx-pro-6000-pcie5-nop2p");
  EXPECT_FALSE(n.p2p);
  EXPECT_TRUE(n.host_staging.present());
  EXPECT_DOUBLE_EQ(preset("8x-b200-nvswitch").nvlink.bw_gbs, 900.0);
  EXPECT_DOUBLE_EQ(preset("8x-a100-nvswitch").gpu.fp8_tflops, 0.0);
}

TEST(Topology, WriteReadWriteIsByteIdentical) {
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  t.calibration.ranks = 8;
  t.calibration.notes = "measured 2026-01-01";
  t.calibration.launch_gap_us = 2.25;
  t.calibration.gemm.push_back({4, 3072, 4096, DType::bf16, 0.1 + 0.2});  // needs all 17 digits
  t.calibration.allreduce["nccl"] = {{32768, 40.5}, {65536, 44.0}};
  t.calibration.attention["gqa:32:8:128"] = {{1024, 9.0}, {4096, 20.0}};
  t.calibration.elementwise["rmsnorm"] = {{16384, 2.6}};
  t.calibration.elementwise["add_rmsnorm"] = {{16384, 2.9}, {65536, 3.4}};  // the fused residual add + norm
  std::string a = topology_to_string(t);
  EXPECT_NE(a.find("\"add_rmsnorm\""), std::string::npos);
  Topology back = parse_topology(JsonCursor::parse_text(a, "mem.json"), "mem.json");
  EXPECT_EQ(a, topology_to_string(back));
  ASSERT_EQ(back.calibration.elementwise.at("add_rmsnorm").size(), 2u);
  EXPECT_DOUBLE_EQ(back.calibration.elementwise.at("add_rmsnorm")[1].us, 3.4);
  EXPECT_DOUBLE_EQ(back.calibration.gemm[0].us, 0.1 + 0.2);
  EXPECT_EQ(back.calibration.allreduce.at("nccl").size(), 2u);
  EXPECT_EQ(*back.calibration.launch_gap_us, 2.25);
}

TEST(Topology, WriteTopologyIsAtomicAndReadable) {
  fs::path dir = fs::temp_directory_path() / "eaglesim_topo_test";
  fs::create_directories(dir);
  std::string out = (dir / "t.json").string();
  Topology t = preset("2x-h200-nvlink");
  write_topology(t, out);
  EXPECT_EQ(read_file(out), topology_to_string(read_topology(out)));
  EXPECT_THROW(write_topology(t, (dir / "missing-dir" / "t.json").string()), InputError);
  fs::remove_all(dir);
}

TEST(Topology, BadFilesGiveOneClearError) {
  // file -> fragment the message must contain (file name and JSON path are checked too).
  const std::map<std::string, std::string> expected{
      {"unknown_gpu_field", "gpu.tflops: unknown field (allowed here: name, arch, compute_capability, sms"},
      {"bad_compute_capability", "gpu.compute_capability: expected a compute capability MAJOR.MINOR such as \"9.0\" "
                                 "or \"12.0\", got \"9\""},
      {"unknown_top_field", "nics: unknown field (allowed here: format"},
      {"bad_interconnect", "interconnect: expected one of nvswitch, nvlink_mesh, pcie_switch, pcie_root_complex, "
                           "pcie_cross_socket, got \"infiniband\""},
      {"bad_arch", "gpu.arch: expected one of volta, ampere, ada, hopper, blackwell, got \"pascal\""},
      {"negative_bandwidth", "links.pcie.bw_gbs: expected a positive finite number, got -5"},
      {"absurd_bandwidth", "gpu.mem_bw_gbs: expected a positive number at most 100000"},
      {"string_number", "gpu.bf16_tflops: expected a positive number, got \"989\""},
      {"gpu_count_zero", "gpu_count: expected an integer in [1, 1024], got 0"},
      {"gpu_count_huge", "gpu_count: expected an integer in [1, 1024], got 4096"},
      {"switch_group_duplicate", "switch_groups[1][0]: GPU 1 is already in switch group 0"},
      {"switch_group_missing_gpu", "switch_groups: GPU 3 is in no switch group"},
      {"switch_group_out_of_range", "switch_groups[1][2]: expected an integer in [0, 3]"},
      {"switch_groups_on_nvswitch", "switch_groups: switch_groups only applies to PCIe interconnects"},
      {"missing_nvlink", "links.nvlink: missing required field (interconnect nvswitch moves data over NVLink)"},
      {"missing_uplink", "links.uplink: missing required field"},
      {"acs_without_uplink", "links.uplink: missing required field (with acs true every P2P transfer goes up to the "
                             "root complex)"},
      {"acs_not_bool", "acs: expected"},
      {"nop2p_without_staging", "links.host_staging: missing required field (with p2p false"},
      {"one_socket_cross_socket", "socket_of_gpu: expected GPUs on at least two sockets"},
      {"socket_count_mismatch", "socket_of_gpu: expected an array of 4 socket indices (one per GPU), got an array of 2"},
      {"wrong_format", "format: expected one of eaglesim-topology, got \"eaglesim-trace\""},
      {"wrong_version", "version: expected 1 (the only version so far), got 2"},
      {"calibration_unsorted", "calibration.allreduce.nccl[1].bytes: expected a bytes larger than the previous"},
      {"calibration_unknown_strategy", "calibration.allreduce.nccl2: unknown field (allowed here: nccl, oneshot"},
      // auto picks among the others, each by its own table; a table of its own would bypass that.
      {"calibration_auto_table", "calibration.allreduce.auto: unknown field (allowed here: nccl, oneshot, twoshot, "
                                 "fused, quant)"},
      // The fused residual add + norm kernel's table is add_rmsnorm, named like no op kind.
      {"calibration_unknown_elementwise", "calibration.elementwise.fused_add_rmsnorm: unknown field (allowed here: "
                                          "rmsnorm, residual_add, act, embedding, add_rmsnorm, elementwise, other)"},
      {"calibration_bad_attention_key", "calibration.attention.gqa:32:8: unknown attention key"},
      {"calibration_ranks_too_many", "calibration.ranks: expected an integer in [1, 4]"},
      {"calibration_duplicate_gemm", "calibration.gemm[1]: duplicate GEMM point m=4 n=8 k=8 bf16"},
      {"negative_latency", "links.uplink.latency_us: expected a finite number in [0, 10000], got -1"},
      {"truncated", "truncated JSON (unexpected end of file)"},
      {"duplicate_key", "links.uplink: key \"bw_gbs\" appears twice"},
      // A round trip shorter than there and back is a one-way figure given by mistake.
      {"read_round_trip_below_one_way", "links.inter_socket.read_round_trip_us: expected at least twice the one-way "
                                        "cross-socket path latency (pcie + uplink + inter_socket latency_us = 2.1 us, "
                                        "so >= 4.2), got 2"},
      // Multi-node: the node count divides the GPUs, network and nodes come together, the intra-node
      // layout describes one node.
      {"nodes_not_dividing", "nodes: expected a node count that divides gpu_count 16 (every node holds as many "
                             "GPUs), got 3"},
      {"network_without_nodes", "network: network joins the nodes of a multi-node topology; this one has 1 node"},
      {"nodes_without_network", "network: missing required field (2 nodes are joined by a network)"},
      {"unknown_network_kind", "network.kind: expected one of infiniband, roce, got \"omnipath\""},
      {"more_nics_than_gpus", "network.nics_per_node: expected at most one NIC per GPU (8 GPUs a node), got 12"},
      {"network_nic_missing", "network.nic: missing required field"},
      {"socket_count_per_node", "socket_of_gpu: expected an array of 8 socket indices (one per GPU of a node), got an "
                                "array of 16"},
      // Only reads across the sockets have a round trip of their own.
      {"read_round_trip_on_pcie", "links.pcie.read_round_trip_us: unknown field (allowed here: bw_gbs, latency_us, "
                                  "source)"},
  };
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(kBad)) {
    std::string stem = e.path().stem().string();
    ++files;
    SCOPED_TRACE(stem);
    auto it = expected.find(stem);
    ASSERT_NE(it, expected.end()) << "add the expected message for " << stem;
    try {
      read_topology(e.path().string());
      ADD_FAILURE() << "expected InputError";
    } catch (const InputError& err) {
      std::string msg = err.what();
      EXPECT_NE(msg.find(e.path().string() + ": "), std::string::npos) << msg;
      EXPECT_NE(msg.find(it->second), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(files, expected.size());
}

TEST(Topology, ResolvesPresetNamesAndPaths) {
  std::string p = resolve_topology_path("2x-h200-nvlink");
  EXPECT_EQ(read_topology(p).name, "2x-h200-nvlink");
  EXPECT_EQ(read_topology(resolve_topology_path("2x-h200-nvlink.json")).name, "2x-h200-nvlink");
  std::string direct = kPresets + "/8x-h100-nvswitch.json";
  EXPECT_EQ(resolve_topology_path(direct), direct);
  try {
    resolve_topology_path("9x-imaginary");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("unknown topology \"9x-imaginary\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("2x-h200-nvlink, 2x8-h100-nvswitch-ib400"), std::string::npos) << msg;
  }
  EXPECT_THROW(resolve_topology_path("no/such/file.json"), InputError);
  EXPECT_THROW(resolve_topology_path(""), InputError);
}

TEST(TopologyPaths, PcieHopsAddRootComplexAndSocketLatency) {
  Topology t = preset("8x-l40s-pcie4");
  Path same_switch = path_between(t, 0, 1);
  EXPECT_FALSE(same_switch.root_complex);
  EXPECT_DOUBLE_EQ(same_switch.latency_us, t.pcie.latency_us);
  Path across = path_between(t, 3, 4);  // switch 0 on socket 0 -> switch 1 on socket 1
  EXPECT_TRUE(across.root_complex);
  EXPECT_TRUE(across.cross_socket);
  EXPECT_DOUBLE_EQ(across.latency_us, t.pcie.latency_us + t.uplink.latency_us + t.inter_socket.latency_us);
  EXPECT_DOUBLE_EQ(across.bw_gbs, std::min({t.pcie.bw_gbs, t.uplink.bw_gbs, t.inter_socket.bw_gbs}));
  EXPECT_DOUBLE_EQ(worst_path(t, 4).latency_us, t.pcie.latency_us);  // ranks 0-3 share a switch
}

TEST(TopologyPaths, SharedLinksDivideBandwidth) {
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  // All-to-all of 1 MB between 8 ranks: each GPU sends 7 MB over its 54 GB/s link (129.6 us);
  // each switch uplink carries 4 x 4 MB = 16 MB at 54 GB/s (296.3 us) -> the uplink decides.
  double us = flows_time_us(t, all_to_all_flows(8, 1e6));
  EXPECT_NEAR(us, 16e6 / 54e3, 1e-9);
  // Within one switch only the GPU links count: 3 MB over 54 GB/s.
  EXPECT_NEAR(flows_time_us(t, all_to_all_flows(4, 1e6)), 3e6 / 54e3, 1e-9);
  // Across two sockets the socket link is one more shared resource: 16 MB at 20 GB/s on 8 x L40S.
  Topology l = preset("8x-l40s-pcie4");
  EXPECT_NEAR(flows_time_us(l, all_to_all_flows(8, 1e6)), 16e6 / (l.inter_socket.bw_gbs * 1e3), 1e-9);
  // NVSwitch: per-GPU injection 450 GB/s shared by its 7 flows.
  Topology h = preset("8x-h200-nvswitch");
  EXPECT_NEAR(flows_time_us(h, all_to_all_flows(8, 1e6)), 7e6 / 450e3, 1e-9);
  // Without P2P each flow is staged out of the sender and into the receiver at host_staging bw.
  Topology n = preset("8x-rtx-pro-6000-pcie5-nop2p");
  EXPECT_NEAR(flows_time_us(n, ring_flows(8, 1e6)), 1e6 / (n.host_staging.bw_gbs * 1e3), 1e-9);
  EXPECT_TRUE(path_between(n, 0, 1).staged);
}

TEST(Topology, TwoNodePresets) {
  for (const char* name : {"2x8-h100-nvswitch-ib400", "2x8-h200-nvswitch-ib400"}) {
    SCOPED_TRACE(name);
    Topology t = preset(name);
    EXPECT_EQ(t.gpu_count, 16);
    EXPECT_EQ(t.nodes, 2);
    EXPECT_EQ(t.gpus_per_node(), 8);
    EXPECT_EQ(t.network.kind, NetworkKind::infiniband);
    EXPECT_EQ(t.network.nics_per_node, 8);
    EXPECT_TRUE(t.network.rail_optimized);
    EXPECT_DOUBLE_EQ(t.network.nic.bw_gbs, 48.0);
    EXPECT_EQ(t.node_of(7), 0);
    EXPECT_EQ(t.node_of(8), 1);
    EXPECT_EQ(t.nic_of(11), 3);
  }
}

TEST(Topology, RanksMustFillWholeNodesOrStayInOne) {
  Topology t = preset("2x8-h100-nvswitch-ib400");
  EXPECT_EQ(ranks_placement_problem(t, 8), "");
  EXPECT_EQ(ranks_placement_problem(t, 16), "");
  EXPECT_EQ(ranks_placement_problem(t, 4), "");
  EXPECT_NE(ranks_placement_problem(t, 12).find("12 ranks span 2 nodes of 8 GPUs unevenly (4 on the last)"),
            std::string::npos);
  EXPECT_NE(ranks_placement_problem(t, 32).find("32 ranks need 32 GPUs"), std::string::npos);
}

TEST(TopologyPaths, BetweenNodesTheNicCarriesTheFlows) {
  Topology t = preset("2x8-h100-nvswitch-ib400");
  const Path inside = path_between(t, 0, 7);
  EXPECT_FALSE(inside.network);
  EXPECT_DOUBLE_EQ(inside.bw_gbs, 450.0);
  const Path across = path_between(t, 3, 11);
  EXPECT_TRUE(across.network);
  EXPECT_DOUBLE_EQ(across.bw_gbs, 48.0);
  EXPECT_DOUBLE_EQ(across.latency_us, 3.0);
  // 1 MB from GPU 0 to GPU 8: one NIC each way, 1e6 / 48e3 us.
  EXPECT_NEAR(flows_time_us(t, {{0, 8, 1e6}}), 1e6 / 48e3, 1e-9);
  // Every GPU of node 0 to its rail peer on node 1: eight NICs in parallel.
  std::vector<Flow> rails;
  for (int g = 0; g < 8; ++g) rails.push_back({g, g + 8, 1e6});
  EXPECT_NEAR(flows_time_us(t, rails), 1e6 / 48e3, 1e-9);
  // All of node 0 to GPU 8: on a rail-optimised fabric every flow takes rail 0, relayed over
  // NVLink to GPU 0 first (PXN), so NIC 0 carries all eight.
  std::vector<Flow> one_rail;
  for (int g = 0; g < 8; ++g) one_rail.push_back({g, 8, 1e6});
  EXPECT_NEAR(flows_time_us(t, one_rail), 8e6 / 48e3, 1e-9);
}
