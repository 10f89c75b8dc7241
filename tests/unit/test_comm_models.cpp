#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;

namespace {

Topology preset(const std::string& name) {
  return read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/" + name + ".json");
}

CommCost cost(const std::string& strategy, const Topology& t, int ranks, std::int64_t bytes, NcclOptions o = {}) {
  CommQuery q;
  q.topo = &t;
  q.ranks = ranks;
  q.bytes = bytes;
  q.nccl = o;
  return find_cost_model(strategy).cost(q);
}

constexpr std::int64_t k32K = 32768;
constexpr std::int64_t k42K = 43008;  // Kimi-K2: 3 tokens x 7168 x 2 B

}  // namespace

TEST(CommRegistry, EveryCalibratableStrategyIsRegisteredAndModelled) {
  // A topology may carry tables only for strategies the registry prices, and never for the
  // bound or the selector.
  const std::vector<std::string> known = cost_model_names();
  for (const auto& s : calibratable_strategy_names()) {
    EXPECT_NE(std::find(known.begin(), known.end(), s), known.end()) << s;
    EXPECT_NE(s, "ideal");
    EXPECT_NE(s, "auto");
  }
  EXPECT_EQ(calibratable_strategy_names(), (std::vector<std::string>{"nccl", "oneshot", "twoshot", "fused", "quant"}));
}

TEST(StrategyFacts, OneTableAnswersEveryQuestion) {
  EXPECT_TRUE(is_lower_bound("ideal"));
  EXPECT_FALSE(is_lower_bound("nccl"));
  EXPECT_TRUE(fuses_residual_norm("fused"));
  EXPECT_FALSE(fuses_residual_norm("oneshot"));
  EXPECT_FALSE(is_exact("quant"));
  EXPECT_TRUE(is_exact("twoshot"));
  EXPECT_TRUE(is_nccl("nccl"));
  EXPECT_TRUE(uses_p2p_kernels("oneshot"));
  EXPECT_FALSE(uses_p2p_kernels("nccl"));
  EXPECT_TRUE(fits_message_range("oneshot", kMaxCustomBytes));
  EXPECT_FALSE(fits_message_range("oneshot", kMaxCustomBytes + 16));
  EXPECT_FALSE(fits_message_range("twoshot", 1000));  // not a multiple of 16 B
  EXPECT_TRUE(fits_message_range("nccl", 1000));
  EXPECT_EQ(bench_comm_names(),
            (std::vector<std::string>{"nccl", "oneshot", "oneshot_push", "twoshot", "fused", "quant", "reference"}));
  EXPECT_EQ(lower_bound_strategy(), "ideal");
  EXPECT_EQ(nccl_strategy(), "nccl");
  EXPECT_EQ(find_strategy_facts("nope"), nullptr);
  EXPECT_THROW(strategy_facts("nope"), InputError);
  // Each table entry that runs has a cost model, and the model agrees with the table.
  for (const StrategyFacts& f : strategy_table()) {
    if (!f.runs) continue;
    const CommCostModel& c = find_cost_model(std::string(f.name));
    EXPECT_EQ(c.fuses_residual_norm(), f.fuses_residual_norm) << f.name;
  }
}

TEST(CommRegistry, NamesAndLists) {
  EXPECT_EQ(cost_model_names(), (std::vector<std::string>{"nccl", "oneshot", "twoshot", "fused", "quant", "ideal",
                                                            "auto", "sglang", "vllm"}));
  // `all` is eaglesim's own strategies; the engines' dispatch is asked for by name.
  EXPECT_EQ(parse_strategy_list("all"),
            (std::vector<std::string>{"nccl", "oneshot", "twoshot", "fused", "quant", "ideal", "auto"}));
  EXPECT_EQ(parse_strategy_list("all,sglang,vllm").size(), 9u);
  EXPECT_EQ(parse_strategy_list("nccl, oneshot"), (std::vector<std::string>{"nccl", "oneshot"}));
  EXPECT_EQ(parse_strategy_list("fused,nccl,fused"), (std::vector<std::string>{"fused", "nccl"}));
  EXPECT_EQ(parse_strategy_list("ideal,all").size(), 7u);
  try {
    parse_strategy_list("nccl,bogus");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown strategy \"bogus\" (known: nccl, oneshot, twoshot, fused, quant, "
                                         "ideal, auto, sglang, vllm)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_strategy_list(""), InputError);
  EXPECT_THROW(parse_strategy_list("nccl,,oneshot"), InputError);
  EXPECT_THROW(find_cost_model("NCCL"), InputError);
  EXPECT_TRUE(find_cost_model("fused").fuses_residual_norm());
  EXPECT_FALSE(find_cost_model("oneshot").fuses_residual_norm());
  EXPECT_FALSE(find_cost_model("auto").fuses_residual_norm());
}

// NCCL's ring of `steps` hops with its transfer overlapping the hops (comm/nccl.cpp, pipelined_us).
double pipelined(double base, int steps, double hop, double transfer) {
  const double t = transfer / steps;
  return base + (steps - 1) * std::max(t, hop) + t + hop;
}

TEST(NcclModel, PipelinedRingIsTheSumAtEitherEndAndLessBetween) {
  // The 256 KiB row of 8 x RTX PRO 6000 (voipmonitor/rtx6kpro: 28.0 us measured): LL on 2
  // channels, 54 GB/s x 0.5 x 8/14 = 15.43 GB/s -> 17.0 us of transfer, 1.21 us per step against
  // a 1.25 us hop: 6.6 + 13 x 1.25 + 1.21 + 1.25 = 25.3 us, where the sum would say 41.1.
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  const CommCost c = cost("nccl", t, 8, 256 * 1024);
  EXPECT_EQ(c.detail, "ring/LL 2ch");
  const double transfer = 262144.0 / (27.0 * 8 / 14 * 1e3);
  EXPECT_NEAR(c.us, 6.6 + 13 * 1.25 + transfer / 14 + 1.25, 1e-9);
  EXPECT_NEAR(c.us, 28.0, 0.25 * 28.0);
  EXPECT_LT(c.us, 6.6 + 14 * 1.25 + transfer - 10.0);
  // A large message: the transfer, plus one hop (64 MiB in Simple, within 1 % of the sum).
  const CommCost big = cost("nccl", t, 8, std::int64_t{64} << 20);
  EXPECT_EQ(big.detail.substr(0, 11), "ring/Simple");
  const double big_transfer = (64.0 * 1048576) / (54.0 * 0.76 * 8 / 14 * 1e3);
  EXPECT_NEAR(big.us, 8.4 + big_transfer + 5.7 + 0.25, 1e-6);
}

TEST(NcclModel, TwoH200RingLL32K) {
  // ring bus bw 300 GB/s (the NV18 pair's measured rate); channels ceil(300 / 38.7) = 8 of 37.5 GB/s;
  // LL work threshold 512 threads x 8 B x 2 ranks = 8192 B per channel -> 32768 B uses 4;
  // bus 4 x 37.5 = 150, LL x0.5 = 75 (< llMaxBw 141), ring alg bw 75 x 2/2 = 75 GB/s;
  // latency baseLat 6.6 + 2 steps x hwLat(NVLink, ring, LL) 0.6 = 7.8 us.
  // Tree/LL: 6.8 + 2 x 0.6 = 8.0 us + 32768 B at 72.6/2 GB/s -> 8.90 us, so ring wins.
  Topology t = preset("2x-h200-nvlink");
  CommCost c = cost("nccl", t, 2, k32K);
  // Pipelined (comm/nccl.cpp): each of the 2 steps moves 32768 B / 75 GB/s / 2 = 0.22 us, under
  // the 0.6 us hop: 6.6 + 1 x 0.6 + 0.22 + 0.6.
  EXPECT_NEAR(c.us, pipelined(6.6, 2, 0.6, 32768.0 / 75e3), 1e-9);
  EXPECT_NEAR(c.us, 6.6 + 0.6 + 32768.0 / 75e3 / 2 + 0.6, 1e-9);
  EXPECT_EQ(c.detail, "ring/LL 4ch");
  EXPECT_FALSE(c.calibrated);
  // Sanity target: ~8 us increment per allreduce inside a real verify step on such a machine
  // ((5310 - 4736) us / 64 allreduces = 9.0 us measured with CUDA graphs).
  EXPECT_GE(c.us, 8.0);
  EXPECT_LE(c.us, 12.0);
}

TEST(NcclModel, EightRtxPro6000P2pRing) {
  // Ring 0..7 crosses between the two switches twice; every link carries one flow at 54 GB/s.
  // Channels max(2, ceil(54/70)) = 2 of 27 GB/s; LL threshold 512 x 8 B x 8 ranks = 32768 B ->
  // 1 channel; bus 27 x 0.5 = 13.5, alg 13.5 x 8/14 = 7.714 GB/s -> 5.575 us.
  // Latency 6.6 + 14 x 1.0 (PCI LL step) = 20.6, plus the slowest hop's extra over a switch hop
  // (the root complex, 0.25) on each of the 14 steps = 3.5 us: 24.1 us, the ~24 us measured on
  // such machines at small sizes (the preset's sources). Pipelined: the 14 steps of 0.4 us each
  // hide under the 1.25 us hops but the last: 6.6 + 13 x 1.25 + 0.4 + 1.25.
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  CommCost c = cost("nccl", t, 8, k42K);
  EXPECT_NEAR(c.us, pipelined(6.6, 14, 1.25, 43008.0 / (13.5 * 8 / 14 * 1e3)), 1e-9);
  EXPECT_EQ(c.detail, "ring/LL 1ch");
  EXPECT_GE(c.us, 24.0);  // sanity target: tens of microseconds
  EXPECT_LE(c.us, 60.0);
}

TEST(NcclModel, EightRtxPro6000WithoutP2pGoesThroughHostMemory) {
  // Staged copies at 20 GB/s per GPU: 2 channels of 10; 1 used; LL 5; alg 5 x 8/14 GB/s.
  // Each of the 14 steps pays the 14 us staging latency on top of NCCL's 1.0 us PCI step.
  Topology t = preset("8x-rtx-pro-6000-pcie5-nop2p");
  CommCost c = cost("nccl", t, 8, k42K);
  EXPECT_NEAR(c.us, pipelined(6.6, 14, 1.0 + 14.0, 43008.0 / (5.0 * 8 / 14 * 1e3)), 1e-9);
  EXPECT_EQ(c.detail, "ring/LL 1ch via host memory");
  // Seed story: 122 of these take > 90 % of a ~30 ms Kimi-K2 TP8 verify step.
  EXPECT_GE(c.us, 150.0);
  EXPECT_LE(c.us, 400.0);
  EXPECT_GT(122 * c.us, 0.8 * 30000);
}

TEST(NcclModel, ForcedAlgorithmProtocolAndChannels) {
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  EXPECT_EQ(cost("nccl", t, 8, k42K, {"tree", "", 0}).detail.substr(0, 4), "tree");
  // LL128 is never chosen over PCIe by default, but NCCL_PROTO=LL128 forces it.
  for (std::int64_t b : {std::int64_t{4096}, k42K, std::int64_t{1} << 20, std::int64_t{1} << 26})
    EXPECT_EQ(cost("nccl", t, 8, b).detail.find("LL128"), std::string::npos) << b;
  CommCost ll128 = cost("nccl", t, 8, k42K, {"ring", "LL128", 0});
  EXPECT_EQ(ll128.detail.substr(0, 10), "ring/LL128");
  // Forced Simple: latency 8.4 + 14 x (5.7 + 0.25); 43008 B < 512 x 64 B x 2 ch -> 1 channel of
  // 27 GB/s (bus of 2 forced channels = 54/2), of which Simple over PCIe reaches 0.76; alg x 8/14.
  CommCost simple = cost("nccl", t, 8, k42K, {"ring", "simple", 2});
  EXPECT_NEAR(simple.us, pipelined(8.4, 14, 5.7 + 0.25, 43008.0 / (27.0 * 0.76 * 8 / 14 * 1e3)), 1e-9);
  EXPECT_THROW(cost("nccl", t, 8, k42K, {"butterfly", "", 0}), InputError);
  EXPECT_THROW(cost("nccl", t, 8, k42K, {"", "LL256", 0}), InputError);
  EXPECT_THROW(cost("nccl", t, 8, k42K, {"", "", 65}), InputError);
  // Over NVLink LL128 is allowed and wins for large messages.
  EXPECT_NE(cost("nccl", preset("8x-h100-nvswitch"), 8, std::int64_t{1} << 24).detail.find("LL128"), std::string::npos);
}

TEST(NcclModel, GrowsWithSizeAndRanks) {
  Topology t = preset("8x-h200-nvswitch");
  double prev = 0;
  std::string prev_algo;
  for (std::int64_t b = 1024; b <= (std::int64_t{1} << 28); b *= 4) {
    const CommCost c = cost("nccl", t, 8, b);
    const std::string algo = c.detail.substr(0, c.detail.find('/'));
    // NCCL chooses by its additive estimate, the cost is pipelined (comm/nccl.cpp): at the size
    // where it leaves the tree for the ring, the ring may cost a little less than the tree did.
    EXPECT_GE(c.us, algo != prev_algo ? prev * 0.97 : prev) << b;
    prev = c.us;
    prev_algo = algo;
  }
  EXPECT_LT(cost("nccl", t, 2, k42K).us, cost("nccl", t, 8, k42K).us);
}

TEST(P2pKernelModels, OneshotOnTwoH200) {
  // Pull over NVLink: launch gap 2.5 + 2 barriers x 0.5 + read round trip 2 x 0.5 + 43008 B over
  // the 300 GB/s pair link + reduce 2 inputs and write 1 output locally at 0.78 x 4.8 TB/s.
  Topology t = preset("2x-h200-nvlink");
  CommCost c = cost("oneshot", t, 2, k42K);
  double expected = 2.5 + 1.0 + 1.0 + 43008.0 / 300e3 + 3 * 43008.0 / (4800e3 * 0.78);
  EXPECT_NEAR(c.us, expected, 1e-9);
  EXPECT_EQ(c.detail, "oneshot pull");
  EXPECT_GE(c.us, 4.0);  // measured 4.50 us (docs/results.md)
  EXPECT_LE(c.us, 5.6);
}

TEST(P2pKernelModels, TwoshotOnEightRtxPro6000Pulls) {
  // Worst path 1.0 + 0.25 (between the switches) = 1.25 us. Gap 2.5 + 3 barriers x 1.25, then two
  // pull phases of an all-to-all of 43008/8 = 5376 B: a round trip 2.5 + the longer of the uplink
  // (16 x 5376 B at 54 GB/s) and the read window (5376 B x (3 x 2.0 + 4 x 2.5) us / 64 KiB).
  // Local: (2 x 8 + 1) x 5376 B at 0.78 x 1792 GB/s.
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  CommCost c = cost("twoshot", t, 8, k42K);
  const double phase = 2.5 + std::max(16 * 5376.0 / 54e3, 5376.0 * 16.0 / 65536);
  double expected = 2.5 + 3 * 1.25 + 2 * phase + 17 * 5376.0 / (1792e3 * 0.78);
  EXPECT_NEAR(c.us, expected, 1e-9);
  EXPECT_EQ(c.detail, "twoshot pull");
  // One-shot moves 7 x 43008 B per GPU and 688 KB over each uplink: slower at 8 ranks.
  EXPECT_GT(cost("oneshot", t, 8, k42K).us, c.us);
}

TEST(P2pKernelModels, FusedAddsNormTrafficButNoLaunch) {
  Topology t = preset("2x-h200-nvlink");
  double oneshot = cost("oneshot", t, 2, k42K).us;
  CommCost f = cost("fused", t, 2, k42K);
  EXPECT_NEAR(f.us, oneshot + 3 * 43008.0 / (4800e3 * 0.78) + 0.3, 1e-9);
  EXPECT_LT(f.us - oneshot, t.gpu.launch_gap_us);  // cheaper than launching the norm separately
}

TEST(P2pKernelModels, QuantHalvesTheWire) {
  // 43008 B bf16 = 21504 elements -> 21504 B fp8 + 168 scales x 4 B = 22176 B on the wire.
  Topology t = preset("8x-rtx-pro-6000-pcie5");
  CommCost q = cost("quant", t, 8, k42K);
  double wire = 21504 + 168 * 4;
  double convert = (2 * 43008.0 + 8 * wire) / (1792e3 * 0.78) + 0.5;
  double two = 2.5 + 3 * 1.25 + 2 * (2.5 + 16 * (wire / 8) / 54e3) + 17 * 5376.0 / (1792e3 * 0.78);
  EXPECT_NEAR(q.us, two + convert, 1e-9);
  EXPECT_EQ(q.detail, "fp8 twoshot pull");
  EXPECT_LT(q.us, cost("twoshot", t, 8, k42K).us);
}

TEST(CommSupport, Rules) {
  Topology nop2p = preset("8x-rtx-pro-6000-pcie5-nop2p");
  for (const char* s : {"oneshot", "twoshot", "fused", "quant"}) {
    CommSupport r = find_cost_model(s).supports(nop2p, 8, k42K);
    EXPECT_FALSE(r.ok) << s;
    EXPECT_EQ(r.reason, "needs P2P between GPUs; this topology has P2P off");
  }
  EXPECT_TRUE(find_cost_model("nccl").supports(nop2p, 8, k42K).ok);
  EXPECT_TRUE(find_cost_model("auto").supports(nop2p, 8, k42K).ok);
  EXPECT_TRUE(find_cost_model("ideal").supports(nop2p, 8, k42K).ok);

  Topology h = preset("8x-h200-nvswitch");
  EXPECT_FALSE(find_cost_model("oneshot").supports(h, 6, k42K).ok);
  EXPECT_EQ(find_cost_model("oneshot").supports(h, 6, k42K).reason,
            "custom P2P kernels are built for 2, 4 or 8 ranks, not 6");
  EXPECT_TRUE(find_cost_model("nccl").supports(h, 6, k42K).ok);
  EXPECT_TRUE(find_cost_model("oneshot").supports(h, 8, 8 << 20).ok);
  EXPECT_FALSE(find_cost_model("oneshot").supports(h, 8, (8 << 20) + 16).ok);
  EXPECT_FALSE(find_cost_model("twoshot").supports(h, 8, 43000).ok);  // not a multiple of 16 B
  CommSupport too_many = find_cost_model("nccl").supports(preset("2x-h200-nvlink"), 4, k42K);
  EXPECT_FALSE(too_many.ok);
  EXPECT_EQ(too_many.reason, "needs 4 GPUs; topology 2x-h200-nvlink has 2");
  EXPECT_FALSE(find_cost_model("nccl").supports(h, 8, 0).ok);

  // Asking for the cost of something unsupported is an input error naming the reason.
  try {
    cost("oneshot", nop2p, 8, k42K);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy oneshot cannot run a 43008 B allreduce on 8 ranks of "
                                         "8x-rtx-pro-6000-pcie5-nop2p: needs P2P"),
              std::string::npos)
        << e.what();
  }
}

TEST(CommSupport, OneRankCostsNothing) {
  Topology nop2p = preset("8x-rtx-pro-6000-pcie5-nop2p");
  for (const auto& s : cost_model_names()) {
    EXPECT_TRUE(find_cost_model(s).supports(nop2p, 1, k42K).ok) << s;
    EXPECT_EQ(cost(s, nop2p, 1, k42K).us, 0.0) << s;
  }
  EXPECT_EQ(cost("ideal", preset("8x-h100-nvswitch"), 8, k42K).us, 0.0);
}

TEST(AutoStrategy, PicksTheCheapestExactStrategy) {
  for (const char* name : {"2x-h200-nvlink", "8x-rtx-pro-6000-pcie5", "8x-h100-nvswitch", "8x-l40s-pcie4",
                           "8x-rtx-pro-6000-pcie5-nop2p"}) {
    Topology t = preset(name);
    int ranks = t.gpu_count;
    for (std::int64_t b : {std::int64_t{1024}, k42K, std::int64_t{1} << 20, std::int64_t{64} << 20}) {
      SCOPED_TRACE(std::string(name) + " " + std::to_string(b));
      double best = 1e300;
      std::string best_name;
      for (const char* s : {"nccl", "oneshot", "twoshot"}) {
        if (!find_cost_model(s).supports(t, ranks, b).ok) continue;
        double us = cost(s, t, ranks, b).us;
        if (us < best) { best = us; best_name = s; }
      }
      CommCost a = cost("auto", t, ranks, b);
      EXPECT_DOUBLE_EQ(a.us, best);
      EXPECT_EQ(a.detail.substr(0, best_name.size() + 2), best_name + " (");
    }
  }
  // Small messages on NVLink: one-shot; 64 MiB (beyond the registered buffer): NCCL.
  EXPECT_EQ(cost("auto", preset("2x-h200-nvlink"), 2, k42K).detail.substr(0, 7), "oneshot");
  EXPECT_EQ(cost("auto", preset("2x-h200-nvlink"), 2, std::int64_t{64} << 20).detail.substr(0, 4), "nccl");
}

TEST(CommCalibration, InterpolatesInsideAndFlagsOutside) {
  Topology t = preset("2x-h200-nvlink");
  t.calibration.ranks = 2;
  t.calibration.allreduce["nccl"] = {{32768, 9.0}, {131072, 16.0}};
  // Exact point.
  CommCost at = cost("nccl", t, 2, 32768);
  EXPECT_TRUE(at.calibrated);
  EXPECT_DOUBLE_EQ(at.us, 9.0);
  EXPECT_EQ(at.detail, "calibrated");
  // 65536 is halfway in log(bytes): exp((ln 9 + ln 16) / 2) = sqrt(144) = 12.
  CommCost mid = cost("nccl", t, 2, 65536);
  EXPECT_TRUE(mid.calibrated);
  EXPECT_FALSE(mid.extrapolated);
  EXPECT_NEAR(mid.us, 12.0, 1e-9);
  // Outside the table: the model, flagged.
  CommCost out = cost("nccl", t, 2, 1 << 20);
  EXPECT_FALSE(out.calibrated);
  EXPECT_TRUE(out.extrapolated);
  EXPECT_NE(out.detail.find("outside calibration"), std::string::npos);
  Topology plain = preset("2x-h200-nvlink");
  EXPECT_DOUBLE_EQ(out.us, cost("nccl", plain, 2, 1 << 20).us);
  // Other strategies are not affected by nccl's table.
  EXPECT_FALSE(cost("oneshot", t, 2, 65536).calibrated);
  EXPECT_FALSE(cost("oneshot", t, 2, 65536).extrapolated);
}

TEST(CommCalibration, TableMeasuredOnOtherRankCountIsNotUsed) {
  Topology t = preset("8x-h200-nvswitch");
  t.calibration.ranks = 8;
  t.calibration.allreduce["oneshot"] = {{1024, 2.0}, {1 << 20, 4.0}};
  EXPECT_TRUE(cost("oneshot", t, 8, k42K).calibrated);
  CommCost four = cost("oneshot", t, 4, k42K);
  EXPECT_FALSE(four.calibrated);
  EXPECT_FALSE(four.extrapolated);
  // auto compares the calibrated one-shot value (2 x 2^(log2(42)/10) = 3.1 us) with the models.
  CommCost a = cost("auto", t, 8, k42K);
  EXPECT_EQ(a.detail, "oneshot (calibrated)");
  EXPECT_TRUE(a.calibrated);
  EXPECT_NEAR(a.us, 2.0 * std::pow(2.0, std::log2(42.0) / 10), 1e-9);
}

TEST(NcclModel, TwoNodesTreeLLForSmallMessages) {
  // 16 ranks of 2 x 8 H100 over InfiniBand: NCCL's tree crosses the nodes once up and once down.
  // Latency: baseLat 6.8 + 2 x (7 NVLink steps x 0.6 + 1 network step x 5.0) = 25.2 us, the
  // all_reduce_perf floor measured on such a pair (25 us at 16-128 B, NVIDIA/nccl-tests issue 309).
  // Bandwidth at 42 KiB: ring bus bw min(450 NVLink, 8 NICs x 48) = 384 on 10 channels (ceil(384 /
  // 41.4), Hopper's 2-node per-channel tree cap), all 10 used (43008 / 4096 B); tree x0.92 = 353,
  // LL /3.8 then the 2-node Intel LL cap 39 GB/s, x0.5, and the tree correction at log2(672) = 9
  // (LL 0.7): 13.65 GB/s, 3.15 us. Across nodes the tree's cost is NCCL's sum.
  Topology t = preset("2x8-h100-nvswitch-ib400");
  const CommCost c = cost("nccl", t, 16, k42K);
  EXPECT_EQ(c.detail, "tree/LL 10ch over 2 nodes");
  EXPECT_NEAR(c.us, 25.2 + 43008.0 / (39.0 * 0.5 * 0.7 * 1e3), 1e-6);
  // Inside one node of it nothing changes: 8 ranks cost what they cost on 8x-h100-nvswitch.
  EXPECT_DOUBLE_EQ(cost("nccl", t, 8, k42K).us, cost("nccl", preset("8x-h100-nvswitch"), 8, k42K).us);
  // A forced ring: 30 steps, 2 of them across the network (2.7 us), 28 at max(0.6, the 1 us
  // network-post overhead of an Intel host).
  const CommCost ring = cost("nccl", t, 16, k42K, NcclOptions{"ring", "LL", 0});
  EXPECT_EQ(ring.detail.substr(0, 7), "ring/LL");
  EXPECT_GT(ring.us, 6.6 + 28 * 1.0 + 2 * 2.7);
  // Large messages: the ring is bound by the node's 8 NICs (384 GB/s busBW), as forced-ring
  // all_reduce_perf shows on such a pair (392.7 GB/s at 8 GB, issue 309).
  const CommCost big = cost("nccl", t, 16, std::int64_t{8} << 30);
  EXPECT_EQ(big.detail, "ring/Simple 10ch over 2 nodes");
  const double bus = (8.0 * 1073741824) / big.us / 1e3 * 30 / 16;
  EXPECT_NEAR(bus, 384.0, 2.0);
}

TEST(CommSupport, OurKernelsStayInsideANode) {
  Topology t = preset("2x8-h100-nvswitch-ib400");
  const CommCostModel& oneshot = find_cost_model("oneshot");
  EXPECT_TRUE(oneshot.supports(t, 8, k42K).ok);
  const CommSupport s = oneshot.supports(t, 16, k42K);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("16 ranks span 2 nodes"), std::string::npos) << s.reason;
  const CommSupport uneven = find_cost_model("nccl").supports(t, 12, k42K);
  EXPECT_FALSE(uneven.ok);
  EXPECT_NE(uneven.reason.find("unevenly"), std::string::npos) << uneven.reason;
}
