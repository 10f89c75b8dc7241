#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <fstream>

#include "comm/cost_model.hpp"
#include "comm/nccl_channels.hpp"
#include "core/errors.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;
using namespace eaglesim::nccl;

namespace {

std::string preset_path(const std::string& name) {
  return std::string(EAGLESIM_REPO) + "/models/topologies/" + name + ".json";
}
Topology preset(const std::string& name) { return read_topology(preset_path(name)); }

nlohmann::json preset_json(const std::string& name) {
  std::ifstream in(preset_path(name));
  return nlohmann::json::parse(in);
}

// busBW (GB/s) of NCCL's allreduce of `bytes` on 8 ranks as the model prices it.
double nccl_bus_gbs(const Topology& t, std::int64_t bytes, int channels = 0) {
  CommQuery q;
  q.topo = &t;
  q.ranks = 8;
  q.bytes = bytes;
  q.nccl.channels = channels;
  const double us = find_cost_model("nccl").cost(q).us;
  return bytes / (us * 1e3) * 2.0 * 7 / 8;
}

}  // namespace

TEST(NcclChannels, RatesPcieByGenerationAndTheSocketLinkByCpu) {
  EXPECT_EQ(nccl_pci_gbs(preset("8x-rtx-pro-6000-pcie5")), 48.0);  // 54 GB/s measured: Gen5 x16
  EXPECT_EQ(nccl_pci_gbs(preset("8x-l40s-pcie4")), 24.0);          // 25 GB/s measured: Gen4 x16
  Topology two = preset("8x-rtx-pro-6000-pcie5-2socket");
  EXPECT_EQ(two.cpu, CpuKind::amd);
  EXPECT_EQ(nccl_socket_gbs(two), 16.0);  // AMD_BW, not the 49 GB/s the link carries
  two.cpu = CpuKind::unknown;
  EXPECT_EQ(nccl_socket_gbs(two), 49.0);
}

TEST(NcclChannels, OneSocketBehindSwitchesRunsFourChannels) {
  // Gen5 links rated 48: one ring at 45 leaves the uplinks 3; two rings fit at 24 (2 x 24 = the
  // GPU's 48, where the search stops); 24 < 25, so no doubling; 4 channels of 512 threads.
  for (const char* name : {"8x-rtx-pro-6000-pcie5", "4x-rtx-pro-6000-pcie5"}) {
    const Topology t = preset(name);
    ASSERT_TRUE(plans_pcie_rings(t)) << name;
    const RingPlan p = plan_pcie_rings(t, t.gpu_count);
    EXPECT_FALSE(p.fallback) << name;
    EXPECT_EQ(p.rings, 2) << name;
    EXPECT_EQ(p.ring_gbs, 24.0) << name;
    EXPECT_EQ(p.channels, 4) << name;
    EXPECT_EQ(p.simple_threads, 512) << name;
  }
}

TEST(NcclChannels, TwoAmdSocketsWithoutSwitchesFallBackToTwoChannels) {
  // Every ring crosses the socket link NCCL rates at 16 GB/s; the slowest speed it tries for
  // compute capability 12.0 is 18: no ring fits, one in rank order at 0.1 GB/s, 2 channels, and
  // 0.1 <= PCI_BW gives Simple 256 threads.
  const Topology t = preset("8x-rtx-pro-6000-pcie5-2socket");
  ASSERT_TRUE(plans_pcie_rings(t));
  const RingPlan p = plan_pcie_rings(t, 8);
  EXPECT_TRUE(p.fallback);
  EXPECT_EQ(p.rings, 1);
  EXPECT_EQ(p.channels, 2);
  EXPECT_EQ(p.simple_threads, 256);
  // The 4 GPUs of one socket never cross it: two rings at 24, as behind a switch.
  const RingPlan one_socket = plan_pcie_rings(t, 4);
  EXPECT_FALSE(one_socket.fallback);
  EXPECT_EQ(one_socket.channels, 4);
}

TEST(NcclChannels, TheSocketRatingDecidesTheRingsAcrossSockets) {
  Topology t = preset("8x-rtx-pro-6000-pcie5-2socket");
  // Emerald Rapids (40): one ring at 40 (the GPU links take only one at 45), doubled to 2 x 20.
  t.cpu = CpuKind::intel_emerald_rapids;
  RingPlan p = plan_pcie_rings(t, 8);
  EXPECT_FALSE(p.fallback);
  EXPECT_EQ(p.rings, 2);
  EXPECT_EQ(p.ring_gbs, 20.0);
  EXPECT_EQ(p.channels, 4);
  // Sapphire Rapids (22): one ring at 20, below the doubling threshold: 2 channels of 512 threads.
  t.cpu = CpuKind::intel_sapphire_rapids;
  p = plan_pcie_rings(t, 8);
  EXPECT_EQ(p.rings, 1);
  EXPECT_EQ(p.ring_gbs, 20.0);
  EXPECT_EQ(p.channels, 2);
  EXPECT_EQ(p.simple_threads, 512);
  // Hopper searches down to 3 GB/s: AMD's 16 takes one ring at 15, 512 threads.
  t.cpu = CpuKind::amd;
  t.gpu.compute_capability = ComputeCapability{9, 0};
  p = plan_pcie_rings(t, 8);
  EXPECT_FALSE(p.fallback);
  EXPECT_EQ(p.rings, 1);
  EXPECT_EQ(p.ring_gbs, 15.0);
  EXPECT_EQ(p.simple_threads, 512);
}

TEST(NcclChannels, NotPlannedOverNvlinkOrWithoutP2p) {
  EXPECT_FALSE(plans_pcie_rings(preset("8x-h200-nvswitch")));
  EXPECT_FALSE(plans_pcie_rings(preset("2x-h200-nvlink")));
  EXPECT_FALSE(plans_pcie_rings(preset("8x-rtx-pro-6000-pcie5-nop2p")));
}

TEST(NcclChannels, TwoSocketBusBandwidthWithDefaultAndEightChannels) {
  // all_reduce_perf on the dual Turin direct-attach server (voipmonitor/rtx6kpro
  // hardware/pcie-bandwidth.md, 'Festr'): 22.2 GB/s busBW at 32 MiB with the defaults, 37.6 over
  // 8 MiB - 2 GiB with NCCL_MIN_NCHANNELS=8 (--nccl-channels 8).
  const Topology t = preset("8x-rtx-pro-6000-pcie5-2socket");
  const std::int64_t m32 = std::int64_t{32} << 20;
  EXPECT_NEAR(nccl_bus_gbs(t, m32), 22.2, 0.25 * 22.2);
  EXPECT_NEAR(nccl_bus_gbs(t, m32, 8), 37.6, 0.25 * 37.6);
  EXPECT_NEAR(nccl_bus_gbs(t, std::int64_t{8} << 20, 8), 37.6, 0.25 * 37.6);
  // The switch server's default channels reach its links (R2: 37.6 - 41.1; 40.1 at 32 MiB).
  EXPECT_NEAR(nccl_bus_gbs(preset("8x-rtx-pro-6000-pcie5"), m32), 40.1, 0.25 * 40.1);
}

TEST(NcclChannels, CpuFieldIsValidated) {
  nlohmann::json j = preset_json("8x-rtx-pro-6000-pcie5-2socket");
  j["cpu"] = "intel-skylake";
  EXPECT_EQ(parse_topology(j, "t.json").cpu, CpuKind::intel_skylake);
  EXPECT_NE(topology_to_string(parse_topology(j, "t.json")).find("\"cpu\": \"intel-skylake\""), std::string::npos);
  j["cpu"] = "zen5";
  try {
    parse_topology(j, "t.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("amd"), std::string::npos) << e.what();
  }
  j["cpu"] = "unknown";  // the struct's default is not a value a file may give
  EXPECT_THROW(parse_topology(j, "t.json"), InputError);
}
