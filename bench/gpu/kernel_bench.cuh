#pragma once
// What every kernel benchmark of bench/gpu shares: the memory floor measured in the same run, a
// CUDA-graph timer that reports the median over replays, and a table/JSON row format. Header-only
// (the benchmarks are single translation units built with nvcc).
//
// The floor is the bytes an op must move over the device's achieved read bandwidth, measured here
// by a streaming read of a buffer far larger than L2 (16-byte loads, every byte read once), so a
// kernel's "% of floor" compares it with what this very GPU streams, not with a datasheet.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace eaglesim::bench {

inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " +
                             cudaGetErrorString(e));
}
#define EAGLESIM_BENCH_CHECK(call) ::eaglesim::bench::check((call), #call, __FILE__, __LINE__)

// Reads every 16-byte vector once; the xor keeps the loads from being optimised away.
__global__ void stream_read_kernel(const uint4* __restrict__ p, std::size_t n, unsigned* __restrict__ sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // practically never true; the compiler cannot know that
}

// offset + amp * u, u uniform in [-1, 1) from a hash of the index and `seed` (never zeros, the same
// values on every run).
__global__ void fill_random_bf16(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float amp, float offset = 0.f) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 0x9e3779b1u ^ static_cast<std::uint32_t>(i >> 32) * 0x85ebca77u ^ seed;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    h *= 0x297a2d39u;
    h ^= h >> 15;
    p[i] = __float2bfloat16(offset + amp * (static_cast<float>(h >> 8) * (2.f / 16777216.f) - 1.f));
  }
}

// Median of a sample (copied: the caller's order is kept).
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times `launch` (which enqueues one op on the stream it is given) as `per_graph` back-to-back
// launches captured in one CUDA graph, replayed `replays` times after `warmup` replays; returns
// the median replay time divided by per_graph, in µs. Launch gaps inside a graph are what a
// replayed serving step pays, so they are part of the figure.
inline double time_in_graph_us(const std::function<void(cudaStream_t)>& launch, int per_graph = 20, int replays = 15,
                               int warmup = 3) {
  cudaStream_t s;
  EAGLESIM_BENCH_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t exec;
  EAGLESIM_BENCH_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < per_graph; ++i) launch(s);
  EAGLESIM_BENCH_CHECK(cudaStreamEndCapture(s, &g));
  EAGLESIM_BENCH_CHECK(cudaGraphInstantiate(&exec, g, 0));
  cudaEvent_t a, b;
  EAGLESIM_BENCH_CHECK(cudaEventCreate(&a));
  EAGLESIM_BENCH_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i) EAGLESIM_BENCH_CHECK(cudaGraphLaunch(exec, s));
  std::vector<double> us;
  for (int i = 0; i < replays; ++i) {
    EAGLESIM_BENCH_CHECK(cudaEventRecord(a, s));
    EAGLESIM_BENCH_CHECK(cudaGraphLaunch(exec, s));
    EAGLESIM_BENCH_CHECK(cudaEventRecord(b, s));
    EAGLESIM_BENCH_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    EAGLESIM_BENCH_CHECK(cudaEventElapsedTime(&ms, a, b));
    us.push_back(1000.0 * ms / per_graph);
  }
  EAGLESIM_BENCH_CHECK(cudaGetLastError());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return median_of(us);
}

// The device's achieved HBM read bandwidth in GB/s (1e9 B/s): a streaming read of `bytes`
// (default 4 GiB, many times any L2), timed in a graph like every kernel.
inline double measure_read_gbps(std::size_t bytes = std::size_t(4) << 30) {
  void* buf = nullptr;
  unsigned* sink = nullptr;
  EAGLESIM_BENCH_CHECK(cudaMalloc(&buf, bytes));
  EAGLESIM_BENCH_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  EAGLESIM_BENCH_CHECK(cudaMemset(buf, 0x5a, bytes));  // a pattern, not zeros
  int sms = 0;
  EAGLESIM_BENCH_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const std::size_t n = bytes / sizeof(uint4);
  const double us = time_in_graph_us(
      [&](cudaStream_t s) { stream_read_kernel<<<sms * 8, 512, 0, s>>>(static_cast<const uint4*>(buf), n, sink); }, 4,
      9, 2);
  cudaFree(buf);
  cudaFree(sink);
  return static_cast<double>(bytes) / (us * 1e-6) / 1e9;
}

// The value of `"key": ...` in one flat JSON object on one line (a string without its quotes, or a
// number's text); empty when the key is absent. The tools/torch_*_bench.py scripts write such lines.
inline std::string json_line_field(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\"";
  std::size_t at = line.find(k);
  if (at == std::string::npos) return "";
  at = line.find(':', at + k.size());
  if (at == std::string::npos) return "";
  ++at;
  while (at < line.size() && line[at] == ' ') ++at;
  if (at < line.size() && line[at] == '"') {
    const std::size_t end = line.find('"', at + 1);
    return end == std::string::npos ? "" : line.substr(at + 1, end - at - 1);
  }
  std::size_t end = at;
  while (end < line.size() && line[end] != ',' && line[end] != '}') ++end;
  return line.substr(at, end - at);
}

// A reference time from a torch JSON-lines file: its µs and what ran (`label_field`).
struct ReferenceTime {
  double us = 0;
  std::string label;
};

// The fastest positive "us" per "shape" of a JSON-lines file; empty (with a message naming `tool`
// on stderr) when the file cannot be read.
inline std::map<std::string, ReferenceTime> load_fastest_per_shape(const std::string& path, const char* label_field,
                                                                   const char* tool) {
  std::map<std::string, ReferenceTime> out;
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "%s: cannot read %s (no torch column)\n", tool, path.c_str());
    return out;
  }
  std::string line;
  while (std::getline(f, line)) {
    const std::string shape = json_line_field(line, "shape"), us = json_line_field(line, "us");
    if (shape.empty() || us.empty()) continue;
    const double t = std::atof(us.c_str());
    if (!(t > 0)) continue;
    auto it = out.find(shape);
    if (it == out.end() || t < it->second.us) out[shape] = {t, json_line_field(line, label_field)};
  }
  return out;
}

// The flags the shape-list benchmarks share: --torch FILE, --json FILE, --filter TEXT, --quick and
// --budget-s S (no new shape starts after S seconds). `own(flag)` takes a benchmark's own flags
// (true: taken). A flag without its value or an unknown one prints `usage` and exits 2.
struct CommonArgs {
  std::string torch, json, filter;
  bool quick = false;
  double budget_s = 1e9;
};
inline CommonArgs parse_common_args(int argc, char** argv, const char* tool, const char* usage,
                                    const std::function<bool(const std::string&)>& own = {}) {
  CommonArgs out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", tool, a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--torch") out.torch = next();
    else if (a == "--json") out.json = next();
    else if (a == "--filter") out.filter = next();
    else if (a == "--quick") out.quick = true;
    else if (a == "--budget-s") out.budget_s = std::atof(next().c_str());
    else if (!own || !own(a)) {
      std::fprintf(stderr, "usage: %s\n", usage);
      std::exit(2);
    }
  }
  return out;
}

// One benchmark row: what was timed, its bytes and time, and the floor they imply.
struct BenchRow {
  std::string kernel;  // e.g. "attention gqa"
  std::string shape;   // e.g. "B=8 q=4 kv=8192 H=64/8 D=128 tree"
  double bytes = 0;    // the fewest bytes the op must read and write
  double us = 0;       // median per op
  double floor_us = 0; // bytes / measured read bandwidth
  double reference_us = 0;  // the best public alternative on the same shape (0: none measured)
  std::string reference;    // which alternative ("torch sdpa (flash)")
  std::string detail;       // what the benchmark chose to run, where it chooses ("lt#2 splitK=4"); JSON only
};

inline void print_header() {
  std::printf("%-16s %-44s %10s %9s %9s %7s %11s %8s\n", "kernel", "shape", "MB", "us", "floor_us", "%floor", "ref_us",
              "speedup");
}

inline void print_row(const BenchRow& r) {
  std::printf("%-16s %-44s %10.2f %9.2f %9.2f %6.1f%% ", r.kernel.c_str(), r.shape.c_str(), r.bytes / 1e6, r.us,
              r.floor_us, 100.0 * r.floor_us / r.us);
  if (r.reference_us > 0)
    std::printf("%11.2f %7.2fx\n", r.reference_us, r.reference_us / r.us);
  else
    std::printf("%11s %8s\n", "-", "-");
}

// One JSON object per row (JSON lines), for docs and for joining with tools/ reference timings.
inline void print_json_row(std::FILE* f, const BenchRow& r) {
  std::fprintf(f,
               "{\"kernel\": \"%s\", \"shape\": \"%s\", \"bytes\": %.0f, \"us\": %.3f, \"floor_us\": %.3f, "
               "\"pct_floor\": %.2f, \"gbps\": %.1f, \"reference\": \"%s\", \"reference_us\": %.3f, "
               "\"detail\": \"%s\"}\n",
               r.kernel.c_str(), r.shape.c_str(), r.bytes, r.us, r.floor_us, 100.0 * r.floor_us / r.us,
               r.bytes / (r.us * 1e-6) / 1e9, r.reference.c_str(), r.reference_us, r.detail.c_str());
}

}  // namespace eaglesim::bench
