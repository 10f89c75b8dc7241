// Kineto import cost, and what the duplicate-key check of parse_json_strict adds to it. The input
// is a real torch.profiler export (Llama-3.1-8B, TP2, 4 tokens, NCCL allreduce; about 7 MB of
// JSON per rank, gzipped in tests/data/kineto).
//
//   BM_ParseNlohmann: nlohmann::json::parse of one rank's text (the parser before the check)
//   BM_ParseStrict:   parse_json_strict of the same text (what every JSON input goes through)
//   BM_ImportKineto:  the whole import of both ranks, as `eaglesim import kineto` does it
//                     (read + gunzip, parse, classify kernels, align collectives, build the trace)
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "import/kineto_import.hpp"
#include "io/atomic_file.hpp"
#include "io/strict_json.hpp"

using namespace eaglesim;

namespace {

std::string rank_file(int rank) {
  return std::string(EAGLESIM_REPO) + "/tests/data/kineto/llama8b_tp2_t4_nccl_rank" + std::to_string(rank) + ".json.gz";
}

const std::string& rank0_text() {
  static const std::string text = read_file(rank_file(0));
  return text;
}

void BM_ParseNlohmann(benchmark::State& state) {
  const std::string& text = rank0_text();
  for (auto _ : state) benchmark::DoNotOptimize(nlohmann::json::parse(text));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}

void BM_ParseStrict(benchmark::State& state) {
  const std::string& text = rank0_text();
  for (auto _ : state) benchmark::DoNotOptimize(parse_json_strict(text, "rank0.json"));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}

void BM_ImportKineto(benchmark::State& state) {
  const std::vector<std::string> files{rank_file(0), rank_file(1)};
  KinetoImportOptions options;
  options.layers_per_step = 32;  // Llama-3.1-8B; these files have no ProfilerStep marks
  for (auto _ : state) benchmark::DoNotOptimize(import_kineto(files, options));
}

}  // namespace

BENCHMARK(BM_ParseNlohmann)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseStrict)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ImportKineto)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
