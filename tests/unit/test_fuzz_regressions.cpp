// Replays every input the fuzzers ever found a problem with (tests/data/fuzz_regressions/TARGET/)
// through the same entry point the fuzz target runs (tests/fuzz/fuzz_entry_points.cpp): each must
// now end in an InputError or be accepted, never crash, trip a sanitizer (in the build-asan CI
// stage) or break an invariant. The shipped inputs of each format go through them too, so a
// harness that rejected everything, or an invariant that no longer holds, fails here first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_entry_points.hpp"

namespace fs = std::filesystem;
using eaglesim::fuzz::Target;
using eaglesim::fuzz::targets;

namespace {

std::vector<std::uint8_t> bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const Target& target(const std::string& name) {
  for (const Target& t : targets())
    if (name == t.name) return t;
  throw std::runtime_error("no fuzz target " + name);
}

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(FuzzRegressions, EveryDirectoryNamesATarget) {
  const fs::path root = fs::path(EAGLESIM_TEST_DATA) / "fuzz_regressions";
  ASSERT_TRUE(fs::is_directory(root));
  for (const auto& e : fs::directory_iterator(root)) {
    if (!e.is_directory()) continue;
    EXPECT_NO_THROW(target(e.path().filename().string())) << e.path();
  }
}

TEST(FuzzRegressions, SavedFindingsReplayCleanly) {
  const fs::path root = fs::path(EAGLESIM_TEST_DATA) / "fuzz_regressions";
  int replayed = 0;
  for (const Target& t : targets()) {
    for (const fs::path& file : files_under(root / t.name)) {
      SCOPED_TRACE(file.string());
      const auto data = bytes_of(file);
      EXPECT_NO_THROW(t.run(data.data(), data.size()));
      ++replayed;
    }
  }
  RecordProperty("replayed", replayed);
}

// The harness must accept good inputs (else the fuzzer explores only error paths) and the
// invariants it checks (round trips, generator output readable) must hold on them.
TEST(FuzzRegressions, ShippedInputsPassTheHarness) {
  const fs::path repo = EAGLESIM_REPO;
  const fs::path data = EAGLESIM_TEST_DATA;
  const std::vector<std::pair<std::string, fs::path>> good = {
      {"trace_reader", data / "tiny_trace.json"},
      {"trace_reader", repo / "traces" / "llama-3.1-8b_tp2_t4.json"},
      {"topology_reader", repo / "models" / "topologies" / "8x-rtx-pro-6000-pcie5.json"},
      {"topology_reader", repo / "models" / "topologies" / "2x-h200-nvlink.json"},
      {"model_config_reader", repo / "models" / "llm" / "kimi-k2-instruct.json"},
      {"model_config_reader", repo / "models" / "llm" / "qwen3-235b-a22b.json"},
      {"kineto_importer", data / "kineto" / "synthetic" / "vllm_tp2_rank0.json"},
      {"lengths_file_reader", data / "serve" / "lengths.jsonl"},
      {"lengths_file_reader", data / "serve" / "lengths.csv"},
      {"lengths_file_reader", data / "serve" / "vllm_result.json"},
  };
  for (const auto& [name, file] : good) {
    SCOPED_TRACE(file.string());
    ASSERT_TRUE(fs::exists(file));
    const auto bytes = bytes_of(file);
    bool accepted = false;
    EXPECT_NO_THROW(accepted = target(name).run(bytes.data(), bytes.size()));
    EXPECT_TRUE(accepted) << "the harness rejects a shipped input";
  }
}
