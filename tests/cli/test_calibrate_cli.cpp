// calibrate and fidelity from the command line, without GPUs: flags and inputs are checked first
// (exit 2 with a message naming the problem), then the GPU part is refused with exit 3. The
// GPU is hidden from the child (CUDA_VISIBLE_DEVICES=""), so these hold in CPU-only and CUDA
// builds, on machines with or without GPUs.
#include <cstdlib>

#include <gtest/gtest.h>

#include "cli_helpers.hpp"

namespace eaglesim::test {
namespace {

class NoGpu : public ::testing::Test {
 protected:
  void SetUp() override { setenv("CUDA_VISIBLE_DEVICES", "", 1); }
  void TearDown() override { unsetenv("CUDA_VISIBLE_DEVICES"); }
};

const std::string kTrace = "traces/llama-3.1-8b_tp2_t4.json";

TEST_F(NoGpu, CalibrateWithoutGpuExits3AndWritesNothing) {
  const std::string out = temp_dir() + "/cal.json";
  CliResult r = run_cli("calibrate --traces " + kTrace + " --ranks 2 -o " + out);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("calibrat"), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.find("GPU") != std::string::npos || r.err.find("CUDA") != std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(out));
}

TEST_F(NoGpu, CalibrateFromModelConfigsWithoutGpuExits3) {
  CliResult r = run_cli("calibrate --model models/llm/llama-3.1-8b.json --tp 2 -o " + temp_dir() + "/c.json");
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

// Both take --no-fused-add-norm (the flags are checked before the GPU part is refused).
TEST_F(NoGpu, CalibrateAndFidelityTakeNoFusedAddNorm) {
  CliResult c = run_cli("calibrate --traces " + kTrace + " --no-fused-add-norm --fit-sequence -o " + temp_dir() + "/c.json");
  EXPECT_EQ(c.exit_code, 3) << c.err;
  CliResult f = run_cli("fidelity " + kTrace + " --topology 2x-h200-nvlink --no-fused-add-norm");
  EXPECT_EQ(f.exit_code, 3) << f.err;
  for (const char* cmd : {"calibrate", "fidelity"})
    EXPECT_NE(run_cli(std::string(cmd) + " --help").out.find("--no-fused-add-norm"), std::string::npos) << cmd;
}

TEST_F(NoGpu, CalibrateBadFlagsExit2) {
  const std::string out = temp_dir() + "/cal.json";
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"calibrate -o " + out, "--traces"},
      {"calibrate --traces " + kTrace + " --model models/llm/llama-3.1-8b.json -o " + out, "exactly one"},
      {"calibrate --traces " + kTrace + " --strategy nccl,bogus -o " + out, "bogus"},
      {"calibrate --traces " + kTrace + " --strategy nccl,ideal -o " + out, "ideal"},
      {"calibrate --traces no/such/trace.json -o " + out, "no/such/trace.json"},
      {"calibrate --traces " + kTrace + ",, -o " + out, "empty item"},
      {"calibrate --traces " + kTrace + " --ranks -1 -o " + out, "--ranks"},
      {"calibrate --traces " + kTrace + " --base no-such-preset -o " + out, "no-such-preset"},
      {"calibrate --traces " + kTrace + " --iters 0 -o " + out, "--iters"},
      {"calibrate --traces " + kTrace + " --chain-us 10 -o " + out, "--chain-us"},
      {"calibrate --traces " + kTrace + " --chain-us 1e9 -o " + out, "--chain-us"},
      {"calibrate --traces " + kTrace, "--output"},
      {"calibrate --model models/llm/llama-3.1-8b.json --tp 3 -o " + out, "tp"},
      {"calibrate --traces " + kTrace + " --attention-fit bogus -o " + out, "--attention-fit"},
      {"calibrate --traces " + kTrace + " --grid-tp 0 -o " + out, "--grid-tp"},
      {"calibrate --traces " + kTrace + " --grid-tp 1,x -o " + out, "--grid-tp"},
      {"calibrate --traces " + kTrace + " --grid-tp 8e0 -o " + out, "--grid-tp"},
      {"calibrate --traces " + kTrace + " --grid-tp 65 -o " + out, "--grid-tp"},
      {"calibrate --traces " + kTrace + " --grid-tp 1,,8 -o " + out, "--grid-tp"},
      {"calibrate --traces " + kTrace + " --dry-run", "--base"},
      {"calibrate --traces " + kTrace + " --ranks 4 --dry-run --base 2x-h200-nvlink", "fewer than the 4"},
  };
  for (const auto& c : cases) {
    CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
  EXPECT_FALSE(file_exists(out));
}

// The number after `label` in calibrate's plan line ("106 attention"), -1 when absent.
long plan_count(const std::string& text, const std::string& label) {
  const std::size_t at = text.find(" " + label);
  if (at == std::string::npos) return -1;
  std::size_t start = text.rfind(' ', at - 1);
  return std::stol(text.substr(start + 1, at - start - 1));
}

// --dry-run prints the plan and its estimate without a GPU and writes nothing; --grid-tp widens
// the grid to the per-rank layouts of other tensor-parallel degrees (one TP8 rank of Qwen3-32B
// has 8 query heads over 1 KV head) and the plan says so.
TEST_F(NoGpu, CalibrateDryRunPrintsThePlanAndGridTpWidensIt) {
  const std::string out = temp_dir() + "/dry.json";
  const std::string base = "calibrate --traces " + kTrace + " --ranks 1 --grid-models llama-3.1-8b,qwen3-32b "
                           "--base 2x-h200-nvlink --dry-run -o " + out;
  CliResult plain = run_cli(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.err.find("plan (coarse grid):"), std::string::npos) << plain.err;
  EXPECT_NE(plain.err.find("nothing measured, nothing written"), std::string::npos) << plain.err;
  EXPECT_FALSE(file_exists(out));
  CliResult wide = run_cli(base + " --grid-tp 2,8");
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  const long attention = plan_count(plain.err, "attention"), wide_attention = plan_count(wide.err, "attention");
  ASSERT_GT(attention, 0) << plain.err;
  EXPECT_GT(wide_attention, attention) << wide.err;
  EXPECT_GT(plan_count(wide.err, "GEMM"), plan_count(plain.err, "GEMM")) << "TP8's sharded widths are new GEMMs";
  // The trace's own tp (2) was already in the grid: listing it again changes nothing.
  CliResult same = run_cli(base + " --grid-tp 2");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(plan_count(same.err, "attention"), attention);
  EXPECT_EQ(plan_count(same.err, "GEMM"), plan_count(plain.err, "GEMM"));
  EXPECT_FALSE(file_exists(out));
}

TEST_F(NoGpu, FidelityWithoutGpuExits3) {
  const std::string json = temp_dir() + "/f.json";
  CliResult r = run_cli("fidelity " + kTrace + " --topology 2x-h200-nvlink --baseline-topology 2x-h200-nvlink --json " +
                        json);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_FALSE(file_exists(json));
}

TEST_F(NoGpu, FidelityBadFlagsExit2) {
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"fidelity " + kTrace, "--topology"},
      {"fidelity " + kTrace + " --topology no-such-topology", "no-such-topology"},
      {"fidelity no/such.json --topology 2x-h200-nvlink", "no/such.json"},
      {"fidelity " + kTrace + " --topology 2x-h200-nvlink --strategy bogus", "bogus"},
      {"fidelity " + kTrace + " --topology 2x-h200-nvlink --op-times sometimes", "--op-times"},
      {"fidelity " + kTrace + " --topology 2x-h200-nvlink --iters 0", "--iters"},
      // The same ranges as `run` (cli/replay_flags): absurd values are typos.
      {"fidelity " + kTrace + " --topology 2x-h200-nvlink --warmup 1000000000", "--warmup"},
      {"fidelity " + kTrace + " --topology 2x-h200-nvlink --warmup -1", "--warmup"},
      {"fidelity " + kTrace + " --topology 2x-h200-nvlink --timeout 1e30", "--timeout"},
      {"fidelity " + kTrace + " --topology 2x-h200-nvlink --timeout 0", "--timeout"},
      {"fidelity " + kTrace + " --topology 2x-h200-nvlink --baseline-topology nope", "nope"},
  };
  for (const auto& c : cases) {
    CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace eaglesim::test
