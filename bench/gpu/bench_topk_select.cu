// bench_topk_select: the per-cycle top-k selection (kernels/topk_select.cuh, launched through
// src/cuda/ops/spec_cycle_kernels.hpp as the replay launches it) over fp32 logits, against the HBM
// floor measured in this run. Shapes: rows {1, 4, 16, 64, 256, 1024} x vocab {32000, 128256}
// (EAGLE draft vocabularies / Llama-3 target) x k {1 (the verify's argmax), 8 (a draft's top-k)}.
// Timing: kernel_bench.cuh's graph timer (median replay per launch); the logits are the same
// buffer every launch, as they are right after the LM head wrote them. Before timing, each
// shape's first row's ids are checked against a host argmax / top-k.
//
// Run: bench_topk_select [--json FILE] [--filter TEXT] [--quick] [--budget-s S]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/ops/spec_cycle_kernels.hpp"
#include "kernel_bench.cuh"

namespace {
namespace bench = eaglesim::bench;
namespace ec = eaglesim::cuda;
#define CHECK(call) EAGLESIM_BENCH_CHECK(call)

// Logits in [-8, 8) from a hash of the index (ties are rare but possible; the check below
// orders them as the kernel does).
__global__ void fill_logits(float* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 0x9e3779b1u ^ 0x5bd1e995u;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    p[i] = static_cast<float>(h >> 8) * (16.f / 16777216.f) - 8.f;
  }
}

bool first_row_matches(const float* d_logits, int vocab, int k, const std::int32_t* d_ids) {
  std::vector<float> row(static_cast<std::size_t>(vocab));
  std::vector<std::int32_t> ids(static_cast<std::size_t>(k));
  CHECK(cudaMemcpy(row.data(), d_logits, row.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ids.data(), d_ids, ids.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost));
  std::vector<int> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
  return std::equal(ids.begin(), ids.end(), order.begin());
}

}  // namespace

int main(int argc, char** argv) {
  const bench::CommonArgs args = bench::parse_common_args(
      argc, argv, "bench_topk_select", "bench_topk_select [--json FILE] [--filter TEXT] [--quick] [--budget-s S]");
  std::FILE* json = args.json.empty() ? nullptr : std::fopen(args.json.c_str(), "w");
  if (!args.json.empty() && !json) {
    std::fprintf(stderr, "bench_topk_select: --json: cannot write %s\n", args.json.c_str());
    return 2;
  }
  const double gbps = bench::measure_read_gbps();
  std::printf("HBM read: %.0f GB/s\n", gbps);
  bench::print_header();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> row_counts = args.quick ? std::vector<int>{1, 4, 256} : std::vector<int>{1, 4, 16, 64, 256, 1024};
  int failures = 0;
  for (const int vocab : {32000, 128256})
    for (const int rows : row_counts)
      for (const int k : {1, 8}) {
        const std::string shape = "rows=" + std::to_string(rows) + " vocab=" + std::to_string(vocab) +
                                  " k=" + std::to_string(k);
        if (!args.filter.empty() && shape.find(args.filter) == std::string::npos) continue;
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > args.budget_s) break;
        const std::size_t n = static_cast<std::size_t>(rows) * vocab;
        float *logits = nullptr, *probs = nullptr;
        std::int32_t* ids = nullptr;
        void* ws = nullptr;
        const std::size_t ws_bytes = ec::topk_select_workspace_bytes(rows, vocab, k);
        CHECK(cudaMalloc(&logits, n * sizeof(float)));
        CHECK(cudaMalloc(&ids, static_cast<std::size_t>(rows) * k * sizeof(std::int32_t)));
        CHECK(cudaMalloc(&probs, static_cast<std::size_t>(rows) * k * sizeof(float)));
        CHECK(cudaMalloc(&ws, std::max<std::size_t>(256, ws_bytes)));
        CHECK(cudaMemset(ws, 0, std::max<std::size_t>(256, ws_bytes)));  // the kernel's counters start at zero
        fill_logits<<<264, 256>>>(logits, n);
        float* p = k > 1 ? probs : nullptr;  // the verify's argmax writes no probabilities
        auto launch = [&](cudaStream_t s) { ec::launch_topk_select(logits, rows, vocab, k, ids, p, ws, s); };
        launch(nullptr);
        CHECK(cudaDeviceSynchronize());
        if (!first_row_matches(logits, vocab, k, ids)) {
          std::fprintf(stderr, "bench_topk_select: %s: row 0's ids differ from the host top-k\n", shape.c_str());
          ++failures;
        }
        bench::BenchRow r;
        r.kernel = "topk_select";
        r.shape = shape;
        r.bytes = static_cast<double>(n) * sizeof(float) + static_cast<double>(rows) * k * (p ? 8 : 4);
        r.us = bench::time_in_graph_us(launch);
        r.floor_us = r.bytes / (gbps * 1e3);
        const ec::TopkSplit split = ec::topk_select_split(rows, vocab);
        r.detail = std::to_string(split.chunks) + " chunks of " + std::to_string(split.chunk);
        bench::print_row(r);
        if (json) bench::print_json_row(json, r);
        cudaFree(logits);
        cudaFree(ids);
        cudaFree(probs);
        cudaFree(ws);
      }
  if (json) std::fclose(json);
  return failures ? 1 : 0;
}
