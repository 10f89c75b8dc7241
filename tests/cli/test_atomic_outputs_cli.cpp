// Failing runs leave existing outputs byte-identical and create nothing new (no output, no
// temporary); a successful run replaces its outputs and leaves no temporary behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_helpers.hpp"

namespace fs = std::filesystem;
using namespace eaglesim::test;

namespace {

const std::string kTrace = std::string(EAGLESIM_TEST_DATA) + "/run_small_trace.json";
const std::string kTopo = std::string(EAGLESIM_TEST_DATA) + "/run_topo_2gpu.json";
const std::string kOld = "previous results: must survive a failed run\n";

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Runs `args` in a directory that already holds r.json (old content) and expects exit 2, r.json
// untouched and no other file.
void expect_failure_keeps_old_output(const std::string& args_after_dir) {
  const std::string dir = temp_dir();
  write(dir + "/r.json", kOld);
  std::string args = args_after_dir;
  for (auto at = args.find("{TMP}"); at != std::string::npos; at = args.find("{TMP}")) args.replace(at, 5, dir);
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(slurp(dir + "/r.json"), kOld) << args;
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"r.json"}) << args;
  fs::remove_all(dir);
}

}  // namespace

TEST(AtomicOutputsCli, BadStrategyAfterOutputsRequestedKeepsOldFile) {
  expect_failure_keeps_old_output("run " + kTrace + " -t " + kTopo + " -s nccl,warp --json {TMP}/r.json --csv {TMP}/r.csv");
}

TEST(AtomicOutputsCli, LaterUnwritableOutputKeepsEarlierOldFile) {
  // --json could be written, --csv cannot: neither may change.
  expect_failure_keeps_old_output("run " + kTrace + " -t " + kTopo + " --json {TMP}/r.json --csv {TMP}/missing/r.csv");
}

TEST(AtomicOutputsCli, LaterOutputThatIsADirectoryKeepsEarlierOldFile) {
  expect_failure_keeps_old_output("run " + kTrace + " -t " + kTopo + " --json {TMP}/r.json --timeline {TMP}");
}

TEST(AtomicOutputsCli, BadTraceKeepsOldFile) {
  expect_failure_keeps_old_output("run " + std::string(EAGLESIM_TEST_DATA) + "/bad/truncated.json -t " + kTopo +
                                  " --json {TMP}/r.json");
}

TEST(AtomicOutputsCli, GenWithBadModelKeepsOldTrace) {
  expect_failure_keeps_old_output("gen --model " + std::string(EAGLESIM_TEST_DATA) +
                                  "/bad_inputs/model_negative_layers.json --tp 1 --tokens 4 -o {TMP}/r.json");
}

TEST(AtomicOutputsCli, SweepWithUnknownStrategyKeepsOldFile) {
  expect_failure_keeps_old_output("sweep --model llama-3.1-8b --topology 2x-h200-nvlink --strategy warp --json {TMP}/r.json");
}

TEST(AtomicOutputsCli, ImportOfBadFileKeepsOldTrace) {
  expect_failure_keeps_old_output("import kineto " + std::string(EAGLESIM_TEST_DATA) +
                                  "/kineto/bad/no_kernels.json -o {TMP}/r.json");
}

TEST(AtomicOutputsCli, SuccessfulRunReplacesOutputsAndLeavesNoTemporary) {
  const std::string dir = temp_dir();
  write(dir + "/r.json", kOld);
  const CliResult r = run_cli("run " + kTrace + " -t " + kTopo + " -s nccl,ideal --json " + dir + "/r.json --csv " + dir +
                              "/r.csv --timeline " + dir + "/t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out, "");
  EXPECT_NE(slurp(dir + "/r.json"), kOld);
  EXPECT_EQ(slurp(dir + "/r.json").rfind("{", 0), 0u);
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"r.csv", "r.json", "t.json"}));
  EXPECT_EQ(fs::status(dir + "/r.csv").permissions() & fs::perms::others_read, fs::perms::others_read);
  fs::remove_all(dir);
}
