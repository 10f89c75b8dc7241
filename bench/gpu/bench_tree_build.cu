// bench_tree_build: building the verify tree of each request from the draft's scores
// (kernels/tree_build.cuh, launched through src/cuda/ops/spec_cycle_kernels.hpp as the replay
// launches it), over batch {1, 8, 32, 64} x SGLang's (steps, topk, draft tokens) {(3,1,4),
// (5,4,8), (6,8,32), (8,10,64)}. The candidates have SGLang's structure with path-product
// scores (src/cuda/ops/draft_candidates.hpp). The floor is the bytes read (scores, parents) and
// written (the tree's arrays and mask) over the HBM read bandwidth measured in this run; at
// these sizes the op is bound by one launch and the block's dependent phases, not by bytes.
// Before timing, the first request's parent array is checked against the host's selection.
//
// Run: bench_tree_build [--json FILE] [--filter TEXT] [--quick] [--budget-s S]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/ops/draft_candidates.hpp"
#include "cuda/ops/spec_cycle_kernels.hpp"
#include "kernel_bench.cuh"
#include "trace/eagle_tree.hpp"

namespace {
namespace bench = eaglesim::bench;
namespace ec = eaglesim::cuda;
#define CHECK(call) EAGLESIM_BENCH_CHECK(call)
}  // namespace

int main(int argc, char** argv) {
  const bench::CommonArgs args = bench::parse_common_args(
      argc, argv, "bench_tree_build", "bench_tree_build [--json FILE] [--filter TEXT] [--quick] [--budget-s S]");
  std::FILE* json = args.json.empty() ? nullptr : std::fopen(args.json.c_str(), "w");
  if (!args.json.empty() && !json) {
    std::fprintf(stderr, "bench_tree_build: --json: cannot write %s\n", args.json.c_str());
    return 2;
  }
  const double gbps = bench::measure_read_gbps();
  std::printf("HBM read: %.0f GB/s\n", gbps);
  bench::print_header();
  struct Spec { int steps, topk, tokens; };
  const std::vector<Spec> specs = {{3, 1, 4}, {5, 4, 8}, {6, 8, 32}, {8, 10, 64}};
  const std::vector<int> batches = args.quick ? std::vector<int>{1, 64} : std::vector<int>{1, 8, 32, 64};
  const auto start = std::chrono::steady_clock::now();
  int failures = 0;
  for (const Spec& sp : specs)
    for (const int batch : batches) {
      const std::string shape = "B=" + std::to_string(batch) + " (" + std::to_string(sp.steps) + "," +
                                std::to_string(sp.topk) + "," + std::to_string(sp.tokens) + ")";
      if (!args.filter.empty() && shape.find(args.filter) == std::string::npos) continue;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > args.budget_s) break;
      const int c = static_cast<int>(eaglesim::draft_candidates(sp.steps, sp.topk));
      const int words = (sp.tokens + 31) / 32;
      const ec::DraftCandidates cand = ec::random_draft_candidates(batch, c, sp.steps, sp.topk, 7);
      const std::size_t bc = static_cast<std::size_t>(batch) * c, bt = static_cast<std::size_t>(batch) * sp.tokens;
      float* scores = nullptr;
      std::int32_t *cand_parent = nullptr, *node_of = nullptr, *arrays = nullptr;
      std::uint32_t* mask = nullptr;
      CHECK(cudaMalloc(&scores, bc * sizeof(float)));
      CHECK(cudaMalloc(&cand_parent, bc * sizeof(std::int32_t)));
      CHECK(cudaMalloc(&node_of, bc * sizeof(std::int32_t)));
      CHECK(cudaMalloc(&arrays, 4 * bt * sizeof(std::int32_t)));
      CHECK(cudaMalloc(&mask, bt * words * sizeof(std::uint32_t)));
      CHECK(cudaMemcpy(scores, cand.scores.data(), bc * sizeof(float), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(cand_parent, cand.parent.data(), bc * sizeof(std::int32_t), cudaMemcpyHostToDevice));
      const ec::TreeBuildOutputs out{arrays, arrays + bt, arrays + 2 * bt, arrays + 3 * bt, mask};
      auto launch = [&](cudaStream_t s) {
        ec::launch_tree_build(scores, cand_parent, batch, c, sp.tokens, node_of, out, s);
      };
      launch(nullptr);
      CHECK(cudaDeviceSynchronize());
      std::vector<std::int32_t> got(static_cast<std::size_t>(sp.tokens));
      CHECK(cudaMemcpy(got.data(), arrays, got.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost));
      const std::vector<int> want = ec::verify_tree_parents(cand.scores.data(), cand.parent.data(), c, sp.tokens);
      if (!std::equal(got.begin(), got.end(), want.begin())) {
        std::fprintf(stderr, "bench_tree_build: %s: request 0's parents differ from the host selection\n",
                     shape.c_str());
        ++failures;
      }
      bench::BenchRow r;
      r.kernel = "tree_build";
      r.shape = shape;
      r.bytes = static_cast<double>(bc) * 12 + static_cast<double>(bt) * (16 + 4 * words);
      r.us = bench::time_in_graph_us(launch);
      r.floor_us = r.bytes / (gbps * 1e3);
      r.detail = std::to_string(c) + " candidates per request";
      bench::print_row(r);
      if (json) bench::print_json_row(json, r);
      cudaFree(scores);
      cudaFree(cand_parent);
      cudaFree(node_of);
      cudaFree(arrays);
      cudaFree(mask);
    }
  if (json) std::fclose(json);
  return failures ? 1 : 0;
}
