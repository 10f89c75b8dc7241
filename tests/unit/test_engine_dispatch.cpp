// The engine strategies' dispatch rules (comm/engine_dispatch.hpp), one test per rule, on the
// topology presets: which path SGLang and vLLM take for an allreduce, which eaglesim strategy runs
// it, and that the reason names the rule.
#include <gtest/gtest.h>

#include "comm/engine_dispatch.hpp"
#include "comm/machine_facts.hpp"
#include "core/errors.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;

namespace {

constexpr std::int64_t KiB = 1024, MiB = 1024 * 1024;
constexpr std::int64_t kKimi4 = 4 * 7168 * 2;  // Kimi-K2 verify of 4 tokens: 56 KiB

MachineFacts machine(const std::string& preset) {
  return machine_facts(read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/" + preset + ".json"));
}

AllreduceCall call(int ranks, std::int64_t bytes, std::int64_t norm_rows = 0) {
  AllreduceCall c;
  c.ranks = ranks;
  c.bytes = bytes;
  c.norm_follows = norm_rows > 0;
  c.rows = norm_rows;
  return c;
}

ServingEngineOptions options(const std::string& list, const std::string& arch = "") {
  ServingEngineOptions o = parse_engine_options(list, {"sglang", "vllm"});
  o.model_architecture = arch;
  return o;
}

// The dispatch with the given options; `expect` names the strategy and a fragment of the reason.
void expect_path(const std::string& engine, const MachineFacts& m, const AllreduceCall& c, const std::string& strategy,
                 const std::string& path, const std::string& reason_fragment, const ServingEngineOptions* o = nullptr) {
  const DispatchChoice d = dispatch_allreduce(engine, m, c, o);
  EXPECT_EQ(d.strategy, strategy) << d.reason;
  EXPECT_EQ(d.path, path) << d.reason;
  EXPECT_NE(d.reason.find(reason_fragment), std::string::npos) << "reason: " << d.reason;
}

}  // namespace

TEST(MachineFacts, FromTopologies) {
  const MachineFacts h200 = machine("8x-h200-nvswitch");
  EXPECT_TRUE(h200.full_nvlink && h200.p2p && h200.multicast);
  EXPECT_EQ(h200.capability.to_string(), "9.0");
  const MachineFacts pair = machine("2x-h200-nvlink");
  EXPECT_TRUE(pair.full_nvlink);
  EXPECT_FALSE(pair.multicast);  // an NVLink bridge, no NVSwitch
  const MachineFacts rtx = machine("8x-rtx-pro-6000-pcie5");
  EXPECT_FALSE(rtx.full_nvlink);
  EXPECT_TRUE(rtx.p2p);
  EXPECT_EQ(rtx.capability.to_string(), "12.0");  // the preset names it; blackwell alone would say 10.0
  EXPECT_FALSE(machine("8x-rtx-pro-6000-pcie5-nop2p").p2p);
  EXPECT_FALSE(machine("8x-a100-nvswitch").multicast);  // NVLS needs Hopper's NVSwitch
  EXPECT_EQ(machine("8x-b200-nvswitch").capability.to_string(), "10.0");
  EXPECT_EQ(machine("8x-l40s-pcie4").capability.to_string(), "8.9");
}

// ---------------------------------------------------------------- the custom allreduce (both engines)

TEST(CustomAllreduceGates, OffOnMoreThanTwoPcieGpusWithoutNvlink) {
  for (const char* engine : {"sglang", "vllm"}) {
    SCOPED_TRACE(engine);
    expect_path(engine, machine("8x-rtx-pro-6000-pcie5"), call(8, kKimi4), "nccl", "NCCL",
                "custom allreduce off: 8 PCIe GPUs without NVLink");
    expect_path(engine, machine("4x-rtx-pro-6000-pcie5"), call(4, kKimi4), "nccl", "NCCL",
                "custom allreduce off: 4 PCIe GPUs without NVLink");
    expect_path(engine, machine("8x-l40s-pcie4"), call(8, kKimi4), "nccl", "NCCL", "8 PCIe GPUs without NVLink");
  }
}

TEST(CustomAllreduceGates, TwoPcieGpusWithP2pRunIt) {
  // world_size == 2 needs no NVLink; the kernel is one-shot at 2 ranks whatever the size.
  for (const char* engine : {"sglang", "vllm"}) {
    SCOPED_TRACE(engine);
    expect_path(engine, machine("8x-rtx-pro-6000-pcie5"), call(2, kKimi4), "oneshot", "custom allreduce one-shot",
                "2 ranks always run one-shot");
    expect_path(engine, machine("8x-rtx-pro-6000-pcie5"), call(2, 4 * MiB), "oneshot", "custom allreduce one-shot",
                "2 ranks always run one-shot");
  }
}

TEST(CustomAllreduceGates, OffWithoutP2p) {
  for (const char* engine : {"sglang", "vllm"}) {
    SCOPED_TRACE(engine);
    expect_path(engine, machine("8x-rtx-pro-6000-pcie5-nop2p"), call(2, kKimi4), "nccl", "NCCL",
                "custom allreduce off: the GPUs fail the P2P test");
  }
}

TEST(CustomAllreduceGates, WorldSizesTwoFourSixEight) {
  for (const char* engine : {"sglang", "vllm"}) {
    SCOPED_TRACE(engine);
    expect_path(engine, machine("8x-h200-nvswitch"), call(3, kKimi4), "nccl", "NCCL",
                "world size 3 is not 2, 4, 6 or 8");
    // 6 ranks are the engine's, but eaglesim's kernels are built for 2, 4 and 8: run as NCCL.
    const DispatchChoice six = dispatch_allreduce(engine, machine("8x-h200-nvswitch"), call(6, kKimi4), nullptr);
    EXPECT_EQ(six.strategy, "nccl");
    EXPECT_EQ(six.path, "custom allreduce one-shot");
    EXPECT_NE(six.reason.find("eaglesim's oneshot kernel cannot take it"), std::string::npos) << six.reason;
  }
}

TEST(CustomAllreduceGates, MultipleOfSixteenBytes) {
  expect_path("sglang", machine("8x-h200-nvswitch"), call(8, 1000), "nccl", "NCCL", "not a multiple of 16 B");
}

TEST(CustomAllreduceKernel, OneShotBelow256KiBAtEightRanksAnd512KiBAtFour) {
  const MachineFacts m = machine("8x-h200-nvswitch");
  expect_path("sglang", m, call(8, 255 * KiB), "oneshot", "custom allreduce one-shot", "255 KiB < 256 KiB on 8 NVLink ranks");
  expect_path("sglang", m, call(8, 256 * KiB), "twoshot", "custom allreduce two-shot", "256 KiB >= 256 KiB on 8 NVLink ranks");
  expect_path("sglang", m, call(4, 300 * KiB), "oneshot", "custom allreduce one-shot", "300 KiB < 512 KiB on 4 NVLink ranks");
  expect_path("sglang", m, call(4, 512 * KiB), "twoshot", "custom allreduce two-shot", "512 KiB >= 512 KiB");
}

TEST(CustomAllreduceBuffer, SglangTakesBelowEightMiB) {
  const MachineFacts m = machine("8x-h200-nvswitch");
  expect_path("sglang", m, call(8, 8 * MiB - 16), "twoshot", "custom allreduce two-shot", "< 8 MiB");
  expect_path("sglang", m, call(8, 8 * MiB), "nccl", "NCCL", "8 MiB is not below its 8 MiB limit");
}

TEST(CustomAllreduceFlags, DisableCustomAllReduce) {
  const ServingEngineOptions o = options("disable_custom_all_reduce=true");
  for (const char* engine : {"sglang", "vllm"}) {
    SCOPED_TRACE(engine);
    const DispatchChoice d = dispatch_allreduce(engine, machine("2x-h200-nvlink"), call(2, 4 * KiB), &o);
    EXPECT_EQ(d.strategy, "nccl");
    EXPECT_NE(d.reason.find("custom allreduce off: disable_custom_all_reduce"), std::string::npos) << d.reason;
  }
}

// ---------------------------------------------------------------- SGLang

TEST(SglangDispatch, CudaGraphRegistersTheInputEagerModeCopiesIt) {
  const MachineFacts m = machine("2x-h200-nvlink");
  EXPECT_FALSE(dispatch_allreduce("sglang", m, call(2, kKimi4), nullptr).copies_input);
  const ServingEngineOptions eager = options("disable_cuda_graph=true");
  const DispatchChoice d = dispatch_allreduce("sglang", m, call(2, kKimi4), &eager);
  EXPECT_TRUE(d.copies_input);
  EXPECT_NE(d.reason.find("copied into the registered buffer"), std::string::npos) << d.reason;
}

TEST(SglangDispatch, SymmetricMemoryNcclWhereTheCustomAllreduceDoesNotRun) {
  const ServingEngineOptions o = options("sglang.enable_symm_mem=true");
  expect_path("sglang", machine("8x-rtx-pro-6000-pcie5"), call(8, kKimi4), "nccl", "NCCL (symmetric memory)",
              "enable_symm_mem", &o);
  // The custom allreduce keeps the sizes it takes.
  expect_path("sglang", machine("8x-h200-nvswitch"), call(8, kKimi4), "oneshot", "custom allreduce one-shot", "one-shot", &o);
}

TEST(SglangFusion, OnByDefaultForListedArchitecturesOnSm90AndSm100) {
  const ServingEngineOptions kimi = options("", "DeepseekV3ForCausalLM");
  for (const char* preset : {"8x-h200-nvswitch", "8x-h100-nvswitch", "8x-b200-nvswitch"}) {
    SCOPED_TRACE(preset);
    expect_path("sglang", machine(preset), call(8, kKimi4, 4), "fused", "FlashInfer allreduce+RMSNorm one-shot",
                "turns it on for DeepseekV3ForCausalLM", &kimi);
    // No RMSNorm after it: the custom allreduce.
    expect_path("sglang", machine(preset), call(8, kKimi4), "oneshot", "custom allreduce one-shot",
                "fusion skipped: no residual add + RMSNorm follows", &kimi);
  }
}

TEST(SglangFusion, OffForOtherArchitecturesUnknownOnesAndOtherGpus) {
  const MachineFacts h200 = machine("8x-h200-nvswitch");
  for (const std::string arch : {"LlamaForCausalLM", ""}) {
    const ServingEngineOptions o = options("", arch);
    EXPECT_EQ(dispatch_allreduce("sglang", h200, call(8, kKimi4, 4), &o).strategy, "oneshot") << arch;
  }
  const ServingEngineOptions kimi = options("", "DeepseekV3ForCausalLM");
  EXPECT_EQ(dispatch_allreduce("sglang", machine("8x-a100-nvswitch"), call(8, kKimi4, 4), &kimi).strategy, "oneshot");
  MachineFacts h20 = h200;
  h20.gpu_name = "NVIDIA H20";
  EXPECT_EQ(dispatch_allreduce("sglang", h20, call(8, kKimi4, 4), &kimi).strategy, "oneshot");
  const std::string setup = engine_setup("sglang", h20, 8, &kimi);
  EXPECT_NE(setup.find("keeps it off on H20"), std::string::npos) << setup;
}

TEST(SglangFusion, FlagsForceItOnAndOffButNotOnOtherSmArchitectures) {
  const ServingEngineOptions on = options("enable_flashinfer_allreduce_fusion=true");
  EXPECT_EQ(dispatch_allreduce("sglang", machine("8x-h200-nvswitch"), call(8, kKimi4, 4), &on).strategy, "fused");
  expect_path("sglang", machine("2x-h200-nvlink"), call(2, kKimi4, 4), "fused", "FlashInfer allreduce+RMSNorm one-shot",
              "enable_flashinfer_allreduce_fusion=true", &on);
  // Forced on an SM 12.0 GPU: the per-call gate still says no (communicator.py).
  const DispatchChoice rtx = dispatch_allreduce("sglang", machine("8x-rtx-pro-6000-pcie5"), call(2, kKimi4, 4), &on);
  EXPECT_EQ(rtx.strategy, "oneshot");
  EXPECT_NE(rtx.reason.find("it runs on SM 9.0 or 10.x, this GPU is SM 12.0"), std::string::npos) << rtx.reason;
  const ServingEngineOptions off = options("sglang.enforce_disable_flashinfer_allreduce_fusion=true", "DeepseekV3ForCausalLM");
  EXPECT_EQ(dispatch_allreduce("sglang", machine("8x-h200-nvswitch"), call(8, kKimi4, 4), &off).strategy, "oneshot");
}

TEST(SglangFusion, BatchUpTo2048TokensOneShotByFlashInfersHeuristic) {
  const ServingEngineOptions on = options("enable_flashinfer_allreduce_fusion=true");
  const MachineFacts m = machine("8x-h200-nvswitch");
  // 2049 tokens: past FUSE_ALLREDUCE_MAX_BATCH_SIZE, plain path (here NCCL: 28 MiB > 8 MiB).
  EXPECT_NE(dispatch_allreduce("sglang", m, call(8, 2049 * 7168 * 2, 2049), &on).reason.find("not 1..2048"),
            std::string::npos);
  // One-shot while bytes x 2 x 8 <= 42 MiB, i.e. up to 2.625 MiB at 8 ranks.
  expect_path("sglang", m, call(8, 2 * MiB, 146), "fused", "FlashInfer allreduce+RMSNorm one-shot", "<= 42 MiB", &on);
  expect_path("sglang", m, call(8, 3 * MiB, 219), "twoshot", "FlashInfer allreduce+RMSNorm two-shot",
              "eaglesim has no two-shot fused kernel", &on);
}

// ---------------------------------------------------------------- vLLM

TEST(VllmSymmetricMemory, NeedsNvlinkMulticastAndShrinksTheCustomAllreduce) {
  const MachineFacts h200 = machine("8x-h200-nvswitch");
  const std::string setup = engine_setup("vllm", h200, 8, nullptr);
  EXPECT_NE(setup.find("torch symmetric memory on"), std::string::npos) << setup;
  EXPECT_NE(setup.find("buffer 256 KiB"), std::string::npos) << setup;
  expect_path("vllm", h200, call(8, 128 * KiB), "oneshot", "custom allreduce one-shot",
              "its limit while symmetric memory is up, SM 9.0 at 8 ranks");
  expect_path("vllm", h200, call(8, 256 * KiB), "twoshot", "torch symmetric memory multimem",
              "multimem at 8 ranks on SM 9.0");
  // Up to 64 MiB the engine's, beyond eaglesim's 8 MiB kernel buffer: run as NCCL.
  const DispatchChoice big = dispatch_allreduce("vllm", h200, call(8, 64 * MiB), nullptr);
  EXPECT_EQ(big.path, "torch symmetric memory multimem");
  EXPECT_EQ(big.strategy, "nccl");
  expect_path("vllm", h200, call(8, 64 * MiB + 16), "nccl", "NCCL", "torch symmetric memory skipped");
  // No multicast on an NVLink pair: off, the custom allreduce keeps 8 MiB.
  const std::string pair = engine_setup("vllm", machine("2x-h200-nvlink"), 2, nullptr);
  EXPECT_NE(pair.find("torch symmetric memory off: no NVLink multicast"), std::string::npos) << pair;
  expect_path("vllm", machine("2x-h200-nvlink"), call(2, 4 * MiB), "oneshot", "custom allreduce one-shot", "< 8 MiB");
  // Nor on A100's NVSwitch, nor on SM architectures without a size table.
  EXPECT_NE(engine_setup("vllm", machine("8x-a100-nvswitch"), 8, nullptr).find("no size table for SM 8.0"),
            std::string::npos);
}

TEST(VllmSymmetricMemory, TwoShotAtWorldSizesWithoutMultimemAndOffByFlag) {
  // SM 10.0 runs multimem at 6 and 8 ranks only; at 4 it is the two-shot.
  const MachineFacts b200 = machine("8x-b200-nvswitch");
  expect_path("vllm", b200, call(4, 3 * MiB), "twoshot", "torch symmetric memory two-shot", "two-shot at 4 ranks");
  const ServingEngineOptions off = options("VLLM_ALLREDUCE_USE_SYMM_MEM=0");
  expect_path("vllm", machine("8x-h200-nvswitch"), call(8, 512 * KiB), "twoshot", "custom allreduce two-shot",
              "vLLM's 8 MiB buffer", &off);
}

TEST(VllmNcclSymmetricMemory, OutsideTheCustomAllreducesRange) {
  const ServingEngineOptions o = options("VLLM_USE_NCCL_SYMM_MEM=1,VLLM_ALLREDUCE_USE_SYMM_MEM=0");
  const MachineFacts m = machine("8x-h200-nvswitch");
  expect_path("vllm", m, call(8, 16 * KiB), "nccl", "NCCL (symmetric memory)", "outside (16 KiB, 128 KiB)", &o);
  expect_path("vllm", m, call(8, 64 * KiB), "oneshot", "custom allreduce one-shot", "one-shot", &o);
  expect_path("vllm", m, call(8, 128 * KiB), "nccl", "NCCL (symmetric memory)", "outside", &o);
  // Below 4 ranks never.
  expect_path("vllm", machine("2x-h200-nvlink"), call(2, 16 * KiB), "oneshot", "custom allreduce one-shot", "one-shot", &o);
}

TEST(VllmFusion, OnByDefaultAtO2OnSm90AndSm10x) {
  for (const char* preset : {"8x-h200-nvswitch", "8x-b200-nvswitch"}) {
    SCOPED_TRACE(preset);
    expect_path("vllm", machine(preset), call(8, kKimi4, 4), "fused", "FlashInfer allreduce+RMSNorm one-shot",
                "-O2 turns it on with TP > 1");
  }
  expect_path("vllm", machine("2x-h200-nvlink"), call(2, kKimi4, 4), "fused", "FlashInfer allreduce+RMSNorm one-shot",
              "within the 64 MiB fusion limit at 2 ranks on SM 9.0");
  // Not on SM 8.0 / 8.9 / 12.0.
  for (const char* preset : {"8x-a100-nvswitch", "8x-l40s-pcie4", "8x-rtx-pro-6000-pcie5"})
    EXPECT_NE(dispatch_allreduce("vllm", machine(preset), call(8, kKimi4, 4), nullptr).strategy, "fused") << preset;
  const ServingEngineOptions off = options("vllm.fuse_allreduce_rms=false");
  EXPECT_EQ(dispatch_allreduce("vllm", machine("8x-h200-nvswitch"), call(8, kKimi4, 4), &off).strategy, "oneshot");
}

TEST(VllmFusion, SizeLimitsAndOneShotLimitsPerWorldSizeAndSm) {
  const MachineFacts h200 = machine("8x-h200-nvswitch");
  // SM 9.0 at 8 ranks: fused up to 0.5 MiB, one-shot all the way.
  expect_path("vllm", h200, call(8, 512 * KiB, 36), "fused", "FlashInfer allreduce+RMSNorm one-shot",
              "within the 512 KiB one-shot limit");
  expect_path("vllm", h200, call(8, 512 * KiB + 16, 37), "twoshot", "torch symmetric memory multimem",
              "fusion skipped: 524304 B > 512 KiB");
  // SM 10.0 at 4 ranks: fused up to 32 MiB, one-shot up to 4 MiB, two-shot above.
  const MachineFacts b200 = machine("8x-b200-nvswitch");
  expect_path("vllm", b200, call(4, 4 * MiB, 292), "fused", "FlashInfer allreduce+RMSNorm one-shot", "within the 4 MiB");
  expect_path("vllm", b200, call(4, 5 * MiB, 365), "twoshot", "FlashInfer allreduce+RMSNorm two-shot",
              "above the 4 MiB one-shot limit");
  // No size for 6 ranks: no fusion.
  EXPECT_NE(dispatch_allreduce("vllm", h200, call(6, kKimi4, 4), nullptr).reason.find("no size limit for 6 ranks"),
            std::string::npos);
}

TEST(EngineDispatch, OneRankHasNothingToReduce) {
  const DispatchChoice d = dispatch_allreduce("vllm", machine("8x-h200-nvswitch"), call(1, kKimi4), nullptr);
  EXPECT_EQ(d.path, "no allreduce");
}

// ---------------------------------------------------------------- --engine-option

TEST(SimulationOptions, ParsesPrefixedAndBareOptions) {
  ServingEngineOptions o = parse_engine_options(
      "disable_custom_all_reduce=1,vllm.fuse_allreduce_rms=auto,sglang.enable_symm_mem=true", {"nccl", "sglang", "vllm"});
  EXPECT_EQ(*o.find("sglang", "disable_custom_all_reduce"), "true");  // both engines have it
  EXPECT_EQ(*o.find("vllm", "disable_custom_all_reduce"), "true");
  EXPECT_EQ(*o.find("vllm", "fuse_allreduce_rms"), "auto");
  EXPECT_EQ(*o.find("sglang", "enable_symm_mem"), "true");
  EXPECT_EQ(o.find("vllm", "enable_symm_mem"), nullptr);
  // A bare option only one engine of the run has applies to that one.
  o = parse_engine_options("VLLM_ALLREDUCE_USE_SYMM_MEM=0", {"sglang", "vllm"});
  EXPECT_EQ(*o.find("vllm", "VLLM_ALLREDUCE_USE_SYMM_MEM"), "false");
  EXPECT_EQ(parse_engine_options("", {"nccl"}).values.size(), 0u);
  const std::string v = engine_model("sglang").version;
  EXPECT_EQ(*parse_engine_options("sglang.version=" + v, {"sglang"}).find("sglang", "version"), v);
}

TEST(SimulationOptions, RefusesWhatTheEngineDoesNotHave) {
  auto message = [](const std::string& list, std::vector<std::string> strategies) {
    try {
      parse_engine_options(list, strategies);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("warp_speed=true", {"sglang"}).find("SGLang has no option warp_speed (modelled: version, "
                                                        "disable_custom_all_reduce"),
            std::string::npos);
  EXPECT_NE(message("warp_speed=true", {"sglang", "vllm"}).find("no engine of the run has the option warp_speed"),
            std::string::npos);
  EXPECT_NE(message("vllm.enable_symm_mem=true", {"vllm"}).find("vLLM has no option enable_symm_mem"),
            std::string::npos);
  EXPECT_NE(message("enable_mscclpp=true", {"sglang"}).find("SGLang has the option enable_mscclpp, but eaglesim "
                                                            "does not model it"),
            std::string::npos);
  EXPECT_NE(message("sglang.version=0.4.0", {"sglang"}).find("SGLang version '0.4.0' is not modelled"),
            std::string::npos);
  EXPECT_NE(message("disable_custom_all_reduce=maybe", {"vllm"}).find("expects true or false, got 'maybe'"),
            std::string::npos);
  EXPECT_NE(message("fuse_allreduce_rms=yes", {"vllm"}).find("expects auto, true or false"), std::string::npos);
  EXPECT_NE(message("vllm.fuse_allreduce_rms=true", {"sglang"}).find("vllm is not among strategy"),
            std::string::npos);
  EXPECT_NE(message("disable_custom_all_reduce=true", {"nccl", "oneshot"}).find("strategy has none of them"),
            std::string::npos);
  EXPECT_NE(message("disable_custom_all_reduce", {"vllm"}).find("expected ENGINE.OPTION=VALUE or OPTION=VALUE"),
            std::string::npos);
  EXPECT_THROW(engine_model("tensorrt-llm"), InputError);
}
