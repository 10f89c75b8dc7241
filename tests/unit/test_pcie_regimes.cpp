// The PCIe regimes users meet, pinned on the presets: the one-shot's lead over NCCL ending near
// 64 KiB on 8 GPUs behind two switches, P2P through the root complex (ACS), P2P off (NCCL
// through host memory), and pull vs push kernels.
#include <string>

#include <gtest/gtest.h>

#include "comm/cost_model.hpp"
#include "comm/p2p_kernel_model.hpp"
#include "core/errors.hpp"
#include "topology/paths.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;

namespace {

Topology preset(const std::string& name) {
  return read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/" + name + ".json");
}

double cost_us(const std::string& strategy, const Topology& t, int ranks, std::int64_t bytes) {
  CommQuery q;
  q.topo = &t;
  q.ranks = ranks;
  q.bytes = bytes;
  return find_cost_model(strategy).cost(q).us;
}

constexpr std::int64_t k42K = 43008;  // Kimi-K2: 3 tokens x 7168 x 2 B

// Smallest power-of-two size from 1 KiB at which NCCL is no slower than the one-shot.
std::int64_t oneshot_crossover(const Topology& t, int ranks) {
  for (std::int64_t b = 1024; b <= (std::int64_t{8} << 20); b *= 2)
    if (cost_us("nccl", t, ranks, b) <= cost_us("oneshot", t, ranks, b)) return b;
  return 0;
}

}  // namespace

TEST(PcieRegimes, OneshotLeadEndsNearSixtyFourKibBehindTwoSwitches) {
  // voipmonitor/rtx6kpro hardware/pcie-bandwidth.md, 8 x RTX PRO 6000 behind PCIe switches: the
  // one-shot wins 3.3x at 256 B and 1.5x at 32 KiB, NCCL wins from 64 KiB (25.9 vs 24.1 us).
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  EXPECT_GT(cost_us("nccl", t, 8, 256), 2.5 * cost_us("oneshot", t, 8, 256));
  EXPECT_LT(cost_us("oneshot", t, 8, 32768), cost_us("nccl", t, 8, 32768));
  const std::int64_t cross = oneshot_crossover(t, 8);
  EXPECT_GE(cross, 32768);
  EXPECT_LE(cross, 131072);
  // Past it NCCL pulls away: at 256 KiB the measured one-shot is 2.6x NCCL.
  EXPECT_GT(cost_us("oneshot", t, 8, 262144), 2.0 * cost_us("nccl", t, 8, 262144));
}

TEST(PcieRegimes, CrossSwitchReadsShareOneUplink) {
  // 4 GPUs x 4 peers behind the other switch: 16 transfers per uplink direction, where each
  // GPU's own link carries 7. The uplink sets the one-shot's slope.
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  const double per_pair = 65536;
  const double links = flows_time_us(t, all_to_all_flows(8, per_pair));
  EXPECT_NEAR(links, 16 * per_pair / (t.uplink.bw_gbs * 1e3), 1e-9);
  // One switch alone (4 GPUs): no uplink, each GPU's link carries 3.
  EXPECT_NEAR(flows_time_us(t, all_to_all_flows(4, per_pair)), 3 * per_pair / (t.pcie.bw_gbs * 1e3), 1e-9);
}

TEST(PcieRegimes, PullPaysRoundTripsAndTheReadWindowOverPcie) {
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  for (std::int64_t b : {std::int64_t{1024}, k42K, std::int64_t{262144}}) {
    const double d = static_cast<double>(b);
    KernelEstimate pull = oneshot_estimate(t, 8, d, d, P2pAccess::pull);
    KernelEstimate push = oneshot_estimate(t, 8, d, d, P2pAccess::push);
    EXPECT_EQ(pull.detail, "oneshot pull");
    EXPECT_EQ(push.detail, "oneshot push");
    EXPECT_GT(pull.us, push.us) << b;
  }
  // Small: the difference is one extra one-way latency of the slowest path (1.25 us).
  const Path worst = worst_path(t, 8);
  EXPECT_NEAR(p2p_phase_us(t, 8, 16, P2pAccess::pull) - p2p_phase_us(t, 8, 16, P2pAccess::push), worst.latency_us,
              0.01);
  // On 4 GPUs behind one switch the read window binds before the links do: 3 peers x 256 KiB at a
  // 2 us round trip through a 64 KiB window is 24 us, the link 14.6 us.
  const double b = 262144;
  EXPECT_NEAR(p2p_phase_us(t, 4, b, P2pAccess::pull), 2.0 + 3 * b * 2.0 / 65536, 1e-9);
  EXPECT_NEAR(p2p_phase_us(t, 4, b, P2pAccess::push), 1.0 + 3 * b / 54e3, 1e-9);
  // Over NVLink a pull is one round trip plus the links: no read window.
  Topology h = preset("2x-h200-nvlink");
  EXPECT_NEAR(p2p_phase_us(h, 2, b, P2pAccess::pull), 2 * h.nvlink.latency_us + b / (h.nvlink.bw_gbs * 1e3), 1e-9);
}

TEST(PcieRegimes, OurKernelsStateThatTheyPull) {
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  CommQuery q;
  q.topo = &t;
  q.ranks = 8;
  q.bytes = k42K;
  EXPECT_EQ(find_cost_model("oneshot").cost(q).detail, "oneshot pull");
  EXPECT_EQ(find_cost_model("twoshot").cost(q).detail, "twoshot pull");
}

TEST(PcieRegimes, AcsRoutesEveryPairThroughTheRootComplex) {
  Topology direct = preset("8x-rtx-pro-6000-pcie5");
  Topology acs = preset("8x-rtx-pro-6000-pcie5-acs");
  ASSERT_TRUE(acs.acs);
  ASSERT_FALSE(direct.acs);
  // GPUs 0 and 1 share a switch: direct, one hop; with ACS up to the root complex and back.
  EXPECT_FALSE(path_between(direct, 0, 1).root_complex);
  EXPECT_TRUE(path_between(acs, 0, 1).root_complex);
  EXPECT_NEAR(path_between(acs, 0, 1).latency_us, acs.pcie.latency_us + acs.uplink.latency_us, 1e-12);
  // Bandwidth: the 12 same-switch transfers of a 4-GPU all-to-all now share the uplink.
  EXPECT_GT(flows_time_us(acs, all_to_all_flows(4, 65536)), 3.0 * flows_time_us(direct, all_to_all_flows(4, 65536)));
  // Slower than direct for every strategy and size that matters to a verify step.
  for (const char* s : {"nccl", "oneshot", "twoshot"})
    for (std::int64_t b : {std::int64_t{4096}, k42K, std::int64_t{1} << 20}) {
      EXPECT_GT(cost_us(s, acs, 8, b), cost_us(s, direct, 8, b)) << s << " " << b;
      EXPECT_GT(cost_us(s, acs, 4, b), cost_us(s, direct, 4, b)) << s << " " << b;
    }
}

TEST(PcieRegimes, P2pOffSendsNcclThroughHostMemoryAtAboutTwoHundredMicroseconds) {
  // The seed observation: Kimi-K2 TP8 without P2P, ~220 us per 42 KiB allreduce; the community
  // page above measures ~14 us per staged hop with P2P off.
  Topology t = preset("8x-rtx-pro-6000-pcie5-nop2p");
  const double us = cost_us("nccl", t, 8, k42K);
  EXPECT_GE(us, 170.0);
  EXPECT_LE(us, 260.0);
  // The custom kernels cannot run at all.
  EXPECT_FALSE(find_cost_model("oneshot").supports(t, 8, k42K).ok);
}

TEST(PcieRegimes, AcsFieldIsValidated) {
  auto parse = [](const std::string& extra_top, const std::string& interconnect, bool p2p, bool uplink) {
    nlohmann::json j = nlohmann::json::parse(R"({
      "format": "eaglesim-topology", "version": 1, "name": "t",
      "gpu": {"name": "g", "arch": "ada", "sms": 100, "bf16_tflops": 100, "mem_bw_gbs": 800, "mem_gb": 48,
              "launch_gap_us": 2.5},
      "gpu_count": 2, "switch_groups": [[0, 1]],
      "links": {"pcie": {"bw_gbs": 25, "latency_us": 1.0},
                "host_staging": {"bw_gbs": 10, "latency_us": 10}}})");
    j["interconnect"] = interconnect;
    j["p2p"] = p2p;
    if (uplink) j["links"]["uplink"] = {{"bw_gbs", 25.0}, {"latency_us", 0.5}};
    j.update(nlohmann::json::parse(extra_top));
    return parse_topology(j, "t.json");
  };
  EXPECT_TRUE(parse(R"({"acs": true})", "pcie_switch", true, true).acs);
  EXPECT_FALSE(parse("{}", "pcie_switch", true, true).acs);
  auto message = [&](const std::string& extra, bool p2p, bool uplink) {
    try {
      parse(extra, "pcie_switch", p2p, uplink);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"({"acs": "yes"})", true, true).find("t.json: acs"), std::string::npos);
  EXPECT_NE(message(R"({"acs": true})", true, false).find("links.uplink"), std::string::npos);
  EXPECT_NE(message(R"({"acs": true})", false, true).find("t.json: acs"), std::string::npos);
}
