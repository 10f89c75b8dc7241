// The replay's bf16 GEMMs (cuda::LtGemm, tuned per shape: docs/kernels/dense-gemm.md) against
// torch.nn.functional.linear on the same shapes: the Llama-3.1-8B and -70B TP1 projections at
// 1-256 rows. Weights rotated over enough copies that L2 never serves them.
//   bench_dense_gemm [--torch torch-linear.json] [--json out.json]
// torch-linear.json: JSON lines {"shape": ..., "us": ...} from tools/torch_linear_bench.py.
// Per shape: the tuned choice and its time, TFLOP/s and share of the read floor, the untuned
// heuristic choice's time, the `cublas default` candidate's time (cublasGemmEx, the call torch
// makes; timed the same way, so a tuned choice slower than it shows), torch's time and the ratio
// (ours / torch: at most 1 is the target), and how long tuning the shape took; then how many
// shapes are slower than torch, tuned and with the better of tuned and cublas default, and the
// total tuning time.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "bench/gpu/kernel_bench.cuh"
#include "core/dtype.hpp"
#include "cuda/ops/lt_gemm.hpp"

namespace {

using eaglesim::bench::BenchRow;

struct Shape {
  const char* model;
  const char* proj;
  long n, k;
};

// (n, k) of each projection at TP1, from models/llm/llama-3.1-{8b,70b}.json (hidden, 32/64 heads
// and 8 KV heads of 128, intermediate, vocabulary): q/k/v fused, o, gate/up fused, down, LM head.
const Shape kShapes[] = {
    {"llama-3.1-8b", "qkv", 6144, 4096},     {"llama-3.1-8b", "o", 4096, 4096},
    {"llama-3.1-8b", "gate_up", 28672, 4096}, {"llama-3.1-8b", "down", 4096, 14336},
    {"llama-3.1-8b", "lm_head", 128256, 4096}, {"llama-3.1-70b", "qkv", 10240, 8192},
    {"llama-3.1-70b", "o", 8192, 8192},       {"llama-3.1-70b", "gate_up", 57344, 8192},
    {"llama-3.1-70b", "down", 8192, 28672},   {"llama-3.1-70b", "lm_head", 128256, 8192},
};
const long kRows[] = {1, 4, 16, 64, 256};
constexpr long kMaxRows = 256;
// Two processes timing the same library call differ by about a percent; past this, a gap is real.
constexpr double kClearlySlower = 1.02;

std::string shape_name(const Shape& s, long m) {
  return std::string(s.model) + " " + s.proj + " m=" + std::to_string(m) + " n=" + std::to_string(s.n) +
         " k=" + std::to_string(s.k);
}

// Shape -> µs from JSON lines written by tools/torch_linear_bench.py (a flat parser: the file
// is ours, one object per line with "shape" and "us").
std::map<std::string, double> read_torch(const std::string& path) {
  std::map<std::string, double> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto s = line.find("\"shape\": \""), u = line.find("\"us\": ");
    if (s == std::string::npos || u == std::string::npos) continue;
    const auto e = line.find('"', s + 10);
    out[line.substr(s + 10, e - (s + 10))] = std::atof(line.c_str() + u + 6);
  }
  return out;
}

// How often, and by how much at worst, a time is slower than torch's on the same shape.
struct SlowerCount {
  int compared = 0, slower = 0, clearly_slower = 0;
  double worst_ratio = 0;
  std::string worst;

  void add(const std::string& shape, double us, double torch_us) {
    ++compared;
    const double ratio = us / torch_us;
    if (ratio > 1.0) ++slower;
    if (ratio > kClearlySlower) ++clearly_slower;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      char text[160];
      std::snprintf(text, sizeof(text), "%s: %.2f us against %.2f", shape.c_str(), us, torch_us);
      worst = text;
    }
  }
  void print(const char* what) const {
    std::printf("summary (%s): slower than torch F.linear on %d of %d shapes, %d by more than %.0f %% (worst ratio "
                "%.3f, %s)\n",
                what, slower, compared, clearly_slower, (kClearlySlower - 1) * 100, worst_ratio, worst.c_str());
  }
};

__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    p[i] = __float2bfloat16(((h & 0xffff) / 65536.0f - 0.5f) * 0.1f);  // uniform in [-0.05, 0.05)
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string torch_path, json_path;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--torch")) torch_path = argv[++i];
    else if (!std::strcmp(argv[i], "--json")) json_path = argv[++i];
  }
  try {
    const auto torch = torch_path.empty() ? std::map<std::string, double>{} : read_torch(torch_path);
    const double read_gbps = eaglesim::bench::measure_read_gbps();
    std::printf("read bandwidth measured %.0f GB/s; torch rows: %zu\n", read_gbps, torch.size());
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasLtCreate failed");
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    constexpr std::size_t kWorkspace = 32u << 20;
    void* ws = nullptr;
    EAGLESIM_BENCH_CHECK(cudaMalloc(&ws, kWorkspace));
    std::FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");
    // floor_us: bytes (weights + rows in and out) over the read bandwidth; vs_torch = us / torch us.
    std::printf("%-40s %-38s %9s %8s %7s %9s %9s %9s %8s %8s\n", "shape", "choice", "us", "TFLOP/s", "%floor",
                "heur_us", "cublas_us", "torch_us", "vs_torch", "tune_ms");
    SlowerCount tuned_vs_torch, best_vs_torch;
    int shapes = 0, tuned_behind_cublas = 0;
    double tune_s = 0, longest_tune_s = 0;
    std::string longest_tune;
    for (const Shape& s : kShapes) {
      const std::size_t w_elems = static_cast<std::size_t>(s.n) * s.k;
      // Copies so that the weights touched per graph exceed L2 (60 MB) several times.
      const int copies = static_cast<int>(std::max<std::size_t>(2, (512u << 20) / (w_elems * 2) + 1));
      std::vector<void*> w(copies);
      for (void*& p : w) {
        EAGLESIM_BENCH_CHECK(cudaMalloc(&p, w_elems * 2));
        fill_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), w_elems, 17u + static_cast<unsigned>(&p - w.data()));
      }
      void *x = nullptr, *y = nullptr;
      EAGLESIM_BENCH_CHECK(cudaMalloc(&x, kMaxRows * s.k * 2));
      EAGLESIM_BENCH_CHECK(cudaMalloc(&y, kMaxRows * s.n * 2));
      fill_bf16<<<256, 256>>>(static_cast<__nv_bfloat16*>(x), kMaxRows * s.k, 5u);
      EAGLESIM_BENCH_CHECK(cudaDeviceSynchronize());
      for (long m : kRows) {
        eaglesim::cuda::LtGemm heuristic(lt, nullptr, m, s.n, s.k, eaglesim::DType::bf16, kWorkspace);
        eaglesim::cuda::LtGemm tuned(lt, blas, m, s.n, s.k, eaglesim::DType::bf16, kWorkspace);
        tuned.tune(w[0], x, y, ws);
        // One candidate's calls over the rotated weight copies, in a graph.
        auto time_us = [&](const eaglesim::cuda::LtGemm& g, int candidate) {
          int next = 0;
          return eaglesim::bench::time_in_graph_us(
              [&](cudaStream_t st) {
                const cublasStatus_t rc = g.run_candidate(candidate, w[next++ % copies], x, y, ws, st);
                if (rc != CUBLAS_STATUS_SUCCESS)
                  throw std::runtime_error(shape_name(s, m) + ": " + g.candidate(candidate).name + " does not run (" +
                                           cublasLtGetStatusName(rc) + ")");
              },
              copies * 4);
        };
        const double heur_us = time_us(heuristic, heuristic.chosen());
        const double us = time_us(tuned, tuned.chosen());
        // A shape tuned earlier in the process holds only its choice; the rest are added back.
        tuned.add_all_candidates();
        double cublas_us = 0;
        for (int c = 0; c < tuned.candidate_count(); ++c)
          if (tuned.candidate(c).source == eaglesim::cuda::GemmSource::cublas_default)
            cublas_us = c == tuned.chosen() ? us : time_us(tuned, c);
        if (cublas_us > 0 && us > cublas_us * kClearlySlower) ++tuned_behind_cublas;
        const double bytes = 2.0 * (w_elems + m * s.k + m * s.n);
        const double flops = 2.0 * m * s.n * s.k;
        const eaglesim::cuda::GemmTuning& t = tuned.tuning();
        BenchRow r;
        r.kernel = "cublas tuned";
        r.shape = shape_name(s, m);
        r.bytes = bytes;
        r.us = us;
        r.floor_us = bytes / (read_gbps * 1e3);
        r.detail = tuned.candidate(tuned.chosen()).name;
        auto th = torch.find(r.shape);
        if (th != torch.end()) {
          r.reference = "torch F.linear";
          r.reference_us = th->second;
        }
        std::printf("%-40s %-38s %9.2f %8.1f %6.1f%% %9.2f %9.2f ", r.shape.c_str(), r.detail.c_str(), us,
                    flops / (us * 1e6), 100.0 * r.floor_us / us, heur_us, cublas_us);
        if (r.reference_us > 0) std::printf("%9.2f %8.3f", r.reference_us, us / r.reference_us);
        else std::printf("%9s %8s", "-", "-");
        std::printf(" %8.0f\n", t.seconds * 1e3);
        if (json) {
          eaglesim::bench::print_json_row(json, r);
          BenchRow h = r;
          h.kernel = "cublasLt heur.";
          h.us = heur_us;
          h.detail = heuristic.candidate(heuristic.chosen()).name;
          eaglesim::bench::print_json_row(json, h);
          if (cublas_us > 0) {
            BenchRow b = r;
            b.kernel = "cublas default";
            b.us = cublas_us;
            b.detail = "cublasGemmEx CUBLAS_GEMM_DEFAULT_TENSOR_OP";
            eaglesim::bench::print_json_row(json, b);
          }
        }
        ++shapes;
        tune_s += t.seconds;
        if (t.seconds > longest_tune_s) {
          longest_tune_s = t.seconds;
          longest_tune = r.shape;
        }
        if (r.reference_us > 0) {
          tuned_vs_torch.add(r.shape, us, r.reference_us);
          best_vs_torch.add(r.shape, cublas_us > 0 ? std::min(us, cublas_us) : us, r.reference_us);
        }
      }
      for (void* p : w) cudaFree(p);
      cudaFree(x);
      cudaFree(y);
    }
    if (json) std::fclose(json);
    if (tuned_vs_torch.compared > 0) {
      tuned_vs_torch.print("tuned");
      best_vs_torch.print("min(tuned, cublas default)");
    } else {
      std::printf("summary: no torch figures to compare with (--torch torch-linear.json)\n");
    }
    std::printf("tuned choice slower than cublas default by more than %.0f %% on %d of %d shapes\n",
                (kClearlySlower - 1) * 100, tuned_behind_cublas, shapes);
    std::printf("tuning: %.2f s for %d shapes (longest %.0f ms, %s)\n", tune_s, shapes, longest_tune_s * 1e3,
                longest_tune.c_str());
    cudaFree(ws);
    cublasDestroy(blas);
    cublasLtDestroy(lt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dense_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
