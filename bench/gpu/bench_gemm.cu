// Benchmark of the grouped MoE GEMM and the dense weight-only GEMM (src/cuda/ops/moe_gemm_plan.hpp)
// on the verify-step shapes of Kimi-K2, DeepSeek-V3, Qwen3-235B-A22B, GLM-4.5 and Llama-3.1-70B.
// Per shape: median µs in a CUDA graph (weight sets rotated so L2 does not serve weights), the
// bytes the op must move (active experts' packed weights + scales, activations in, outputs out),
// GB/s, % of the floor (bytes over the read bandwidth measured in this run), the plain reference
// kernel, and the best public alternative from --torch (tools/torch_gemm_bench.py on the same
// machine). Routing: tokens x top-8 over the experts uniformly at random with splitmix64 from a
// seed per (experts, tokens), the generator tools/torch_gemm_bench.py repeats.
//
//   bench_gemm [--torch torch.json] [--json out.jsonl] [--quick] [--no-reference] [--filter SUBSTR] [--tensor-tflops T]
//   bench_gemm --variants [--variant-list NAME,...] [--json out.jsonl] [--quick] [--filter SUBSTR]
//   bench_gemm --gemv-sweep [--json out.jsonl] [--filter SUBSTR]   (every GEMV grid of the dense m <= 16 rows)
// --variants times every kernel variant on the shapes that read >= 16 MB and checks each one's
// output; its summary names the winner per class (docs/kernels/moe-and-quant-gemm.md, "Kernel
// variants"; the GEMV kernel: docs/kernels/gemv.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "bench/gpu/kernel_bench.cuh"
#include "cuda/ops/moe_gemm_plan.hpp"
#include "moe_gemm_layout.cuh"

namespace {

namespace eb = eaglesim::bench;
using eaglesim::cuda::GemmWeightFormat;
using F = GemmWeightFormat;

// ---------------------------------------------------------------- fills (never zeros)

__device__ __forceinline__ std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ float uniform_pm1(std::uint64_t seed, std::uint64_t i) {
  return static_cast<float>(static_cast<std::uint32_t>(mix64(seed ^ (i * 0xD1B54A32D192ED03ull)) >> 40)) *
             (2.0f / 16777216.0f) -
         1.0f;
}
// Random bytes; fp8 mode maps the two NaN codes to finite values.
__global__ void fill_bytes(std::uint8_t* p, std::size_t n, std::uint64_t seed, bool fp8) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint8_t b = static_cast<std::uint8_t>(mix64(seed ^ (i * 0xD1B54A32D192ED03ull)) >> 56);
    if (fp8 && (b & 0x7f) == 0x7f) b ^= 1;
    p[i] = b;
  }
}
__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale, float offset) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(offset + scale * uniform_pm1(seed, i));
}
__global__ void fill_f32(float* p, std::size_t n, std::uint64_t seed, float scale, float offset) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = offset + scale * uniform_pm1(seed, i);
}

void fill_weights(F f, void* w, std::size_t wbytes, void* s, std::size_t sbytes, std::uint64_t seed) {
  const unsigned grid = 4096, block = 256;
  if (f == F::bf16) {
    fill_bf16<<<grid, block>>>(static_cast<__nv_bfloat16*>(w), wbytes / 2, seed, 0.05f, 0.f);
  } else {
    fill_bytes<<<grid, block>>>(static_cast<std::uint8_t*>(w), wbytes, seed, f == F::fp8_channel || f == F::fp8_block);
    if (f == F::int4_g32 || f == F::int4_g128)
      fill_bf16<<<grid, block>>>(static_cast<__nv_bfloat16*>(s), sbytes / 2, seed + 1, 0.005f, 0.01f);
    else
      fill_f32<<<grid, block>>>(static_cast<float*>(s), sbytes / 4, seed + 1, 5e-4f, 1e-3f);
  }
  EAGLESIM_BENCH_CHECK(cudaGetLastError());
}

// ---------------------------------------------------------------- routing (same as the python tool)

std::uint64_t splitmix_next(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Rows per expert for `tokens` tokens each routed to `topk` distinct experts, uniformly.
std::vector<int> route(int experts, int tokens, int topk) {
  std::uint64_t state = 0x5EEDull * 1000003ull + static_cast<std::uint64_t>(experts) * 7919ull +
                        static_cast<std::uint64_t>(tokens);
  std::vector<int> counts(experts, 0);
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> chosen;
    while (static_cast<int>(chosen.size()) < topk) {
      const int e = static_cast<int>(splitmix_next(state) % static_cast<std::uint64_t>(experts));
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    for (int e : chosen) ++counts[e];
  }
  return counts;
}

// ---------------------------------------------------------------- shapes

struct Shape {
  std::string key;     // joins with the torch tool's rows
  std::string label;   // table column
  std::string kernel;  // table column
  F format;
  int experts, n, k, tokens;  // tokens: verify rows (grouped) or m (dense)
  bool dense;
};

struct MoeModel {
  const char* name;
  int experts, hidden, inter;
  std::vector<int> tps;
  F fp8, int4;
};

std::vector<Shape> all_shapes(bool quick) {
  std::vector<Shape> v;
  const std::vector<MoeModel> moe = {
      {"kimi-k2", 384, 7168, 2048, {8}, F::fp8_block, F::int4_g32},
      {"deepseek-v3", 256, 7168, 2048, {8}, F::fp8_block, F::int4_g32},
      {"qwen3-235b", 128, 4096, 1536, {1, 4, 8}, F::fp8_channel, F::int4_g128},
      {"glm-4.5", 160, 5120, 1536, {8}, F::fp8_channel, F::int4_g128},
  };
  const std::vector<int> tokens = quick ? std::vector<int>{4, 128} : std::vector<int>{4, 32, 128, 512};
  for (const MoeModel& m : moe)
    for (int tp : m.tps)
      for (int gemm = 0; gemm < 2; ++gemm) {
        const int n = gemm == 0 ? 2 * m.inter / tp : m.hidden, k = gemm == 0 ? m.hidden : m.inter / tp;
        for (F f : {F::bf16, m.fp8, m.int4}) {
          F ff = f;
          if (ff == F::int4_g128 && k % 128 != 0) ff = F::int4_g32;  // k = 192: no whole 128-groups
          for (int t : tokens) {
            Shape s;
            s.format = ff;
            s.experts = m.experts;
            s.n = n;
            s.k = k;
            s.tokens = t;
            s.dense = false;
            s.key = "moe|" + std::string(to_string(ff)) + "|E" + std::to_string(m.experts) + "|n" + std::to_string(n) +
                    "|k" + std::to_string(k) + "|T" + std::to_string(t);
            s.label = std::string(m.name) + "/tp" + std::to_string(tp) + (gemm == 0 ? " gate_up" : " down") + " T" +
                      std::to_string(t) + " (" + std::to_string(n) + "x" + std::to_string(k) + ")";
            s.kernel = std::string("moe ") + to_string(ff);
            v.push_back(s);
          }
        }
      }
  struct Dense {
    const char* model;
    const char* proj;
    int n, k;
    F fp8, int4;
  };
  const std::vector<Dense> dense = {
      {"llama-70b/tp1", "qkv", 10240, 8192, F::fp8_channel, F::int4_g128},
      {"llama-70b/tp1", "o", 8192, 8192, F::fp8_channel, F::int4_g128},
      {"llama-70b/tp1", "gate_up", 57344, 8192, F::fp8_channel, F::int4_g128},
      {"llama-70b/tp1", "down", 8192, 28672, F::fp8_channel, F::int4_g128},
      {"llama-70b/tp8", "qkv", 1280, 8192, F::fp8_channel, F::int4_g128},
      {"llama-70b/tp8", "o", 8192, 1024, F::fp8_channel, F::int4_g128},
      {"llama-70b/tp8", "gate_up", 7168, 8192, F::fp8_channel, F::int4_g128},
      {"llama-70b/tp8", "down", 8192, 3584, F::fp8_channel, F::int4_g128},
      {"kimi-k2/tp8", "q_a+kv_a", 2112, 7168, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "q_b", 1536, 1536, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "kv_b", 2048, 512, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "o", 7168, 1024, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "mlp gate_up", 4608, 7168, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "mlp down", 7168, 2304, F::fp8_block, F::int4_g32},
      // the other per-rank dense projections of a Kimi-K2 TP8 verify step (eaglesim gen)
      {"kimi-k2/tp8", "q_a", 1536, 7168, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "kv_a", 576, 7168, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "k_absorb", 4096, 128, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "v_up", 1024, 512, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "shared gate_up", 512, 7168, F::fp8_block, F::int4_g32},
      {"kimi-k2/tp8", "shared down", 7168, 256, F::fp8_block, F::int4_g32},
  };
  const std::vector<int> ms = quick ? std::vector<int>{1, 16} : std::vector<int>{1, 4, 16, 64, 256};
  for (const Dense& d : dense)
    for (F f : {d.int4, d.fp8})
      for (int m : ms) {
        Shape s;
        s.format = f;
        s.experts = 1;
        s.n = d.n;
        s.k = d.k;
        s.tokens = m;
        s.dense = true;
        s.key = "dense|" + std::string(to_string(f)) + "|n" + std::to_string(d.n) + "|k" + std::to_string(d.k) + "|m" +
                std::to_string(m);
        s.label = std::string(d.model) + " " + d.proj + " m" + std::to_string(m) + " (" + std::to_string(d.n) + "x" +
                  std::to_string(d.k) + ")";
        s.kernel = std::string("dense ") + to_string(f);
        v.push_back(s);
      }
  return v;
}

// ---------------------------------------------------------------- torch rows

struct TorchRow {
  double us = 0;
  std::string what;
};

std::string json_string_field(const std::string& line, const std::string& name) {
  const std::string tag = "\"" + name + "\": \"";
  const std::size_t a = line.find(tag);
  if (a == std::string::npos) return {};
  const std::size_t b = line.find('"', a + tag.size());
  return b == std::string::npos ? std::string() : line.substr(a + tag.size(), b - a - tag.size());
}
double json_number_field(const std::string& line, const std::string& name) {
  const std::string tag = "\"" + name + "\": ";
  const std::size_t a = line.find(tag);
  if (a == std::string::npos) return 0;
  return std::atof(line.c_str() + a + tag.size());
}

// tools/torch_gemm_bench.py writes one JSON object per line: {"key": ..., "us": ..., "what": ...}.
std::map<std::string, TorchRow> read_torch(const std::string& path) {
  std::map<std::string, TorchRow> rows;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "bench_gemm: cannot read %s (no torch column)\n", path.c_str());
    return rows;
  }
  std::string line;
  while (std::getline(in, line)) {
    const std::string key = json_string_field(line, "key");
    const double us = json_number_field(line, "us");
    if (key.empty() || us <= 0) continue;
    rows[key] = {us, json_string_field(line, "what")};
  }
  return rows;
}

// ---------------------------------------------------------------- one shape

struct DevPool {
  void* p = nullptr;
  std::size_t bytes = 0;
  void* get(std::size_t want) {
    if (want > bytes) {
      if (p) EAGLESIM_BENCH_CHECK(cudaFree(p));
      p = nullptr;
      EAGLESIM_BENCH_CHECK(cudaMalloc(&p, want));
      bytes = want;
    }
    return p;
  }
};

struct Result {
  eb::BenchRow row;
  double ref_kernel_us = 0;
  double mma_floor_us = 0;  // the FLOPs at a dense bf16 mma.sync rate, for the compute-bound rows
  int active = 0;
  std::string variant;
  // dense rows the plan runs as the GEMV kernel: the same op without PDL, and on the stream-K kernel
  double gemv_no_pdl_us = 0, stream_k_us = 0;
  std::string stream_k_variant;
  // and with one 16-channel block per CTA wherever the plan groups several (a grid of more
  // than two CTAs per SM then; 0 where the plan runs one block per CTA already)
  double gemv_one_block_us = 0;
  // dense int4 rows the wgmma kernel takes (opt-in in the replay): the same op on it, and the
  // FLOPs at the bf16 tensor peak given to the bench (--tensor-tflops, default 800)
  double wgmma_us = 0, tensor_floor_us = 0;
  std::string wgmma_variant;
};

constexpr double kRotateBytes = 256e6;        // several times the 60 MB L2
constexpr double kMaxWeightAlloc = 8e9;
// The bf16 tensor peak the wgmma rows are held to (--tensor-tflops; the replay's roofline
// measures it with cuBLAS in process: ~890 on an H100 SXM, ~900 on an H200).
double tensor_tflops = 800;
constexpr double kMmaSyncTflops = 600;        // what mma.sync reaches on an H100/H200 (about 60% of wgmma)
constexpr double kReferenceMaxMacs = 2e10;    // larger shapes skip the slow reference

// A shape's inputs on the device: routing, weight sets rotated so L2 does not serve weights,
// activations, offsets, and the bytes and floor of one op. The same for every kernel variant.
struct Inputs {
  std::vector<int> off;
  int rows = 0, busiest = 0, active = 0, sets = 1;
  std::int64_t w_expert = 0, s_expert = 0;
  unsigned char* wbase = nullptr;
  std::size_t set_stride = 0, wset_aligned = 0;
  unsigned char* xb = nullptr;
  std::size_t xbytes = 0, ybytes = 0, yoff = 0, ooff = 0;
  double bytes = 0, floor_us = 0, macs = 0;

  eaglesim::cuda::GroupedGemmArgs args(const Shape& s, int set) const {
    eaglesim::cuda::GroupedGemmArgs a;
    a.x = xb;
    a.expert_offsets = s.dense ? nullptr : reinterpret_cast<const int*>(xb + ooff);
    a.rows = rows;
    a.weights = wbase + set_stride * set;
    a.scales = s.format == F::bf16 ? nullptr : wbase + set_stride * set + wset_aligned;
    a.y = xb + yoff;
    return a;
  }
};

// The plan of shape `s` for kernel variant `variant` (-1: the default).
eaglesim::cuda::GroupedGemmPlan plan_for(const Shape& s, const Inputs& in, int sms, int variant, int gemv = -1,
                                         int gemv_blocks_per_cta = 0, int gemv_split = 0, int wgmma = 0) {
  using namespace eaglesim::cuda;
  GroupedGemmShape gs;
  gs.format = s.format;
  gs.experts = s.experts;
  gs.n = s.n;
  gs.k = s.k;
  gs.max_rows = in.rows;
  gs.rows_per_expert = in.busiest;
  gs.variant = variant;
  gs.gemv = gemv;
  gs.gemv_blocks_per_cta = gemv_blocks_per_cta;
  gs.gemv_split = gemv_split;
  gs.wgmma = wgmma;
  if (s.dense) gs.rows_per_expert = gs.max_rows = in.rows;
  return plan_grouped_gemm(gs, sms);
}

// Routing and sizes only (no device work): enough to know the bytes before filling anything.
Inputs size_inputs(const Shape& s, double read_gbps, int sms) {
  Inputs in;
  std::vector<int> counts = s.dense ? std::vector<int>{s.tokens} : route(s.experts, s.tokens, 8);
  in.off.assign(counts.size() + 1, 0);
  for (std::size_t e = 0; e < counts.size(); ++e) in.off[e + 1] = in.off[e] + counts[e];
  in.rows = in.off.back();
  in.busiest = *std::max_element(counts.begin(), counts.end());
  for (int c : counts) in.active += c > 0;
  const eaglesim::cuda::GroupedGemmPlan plan = plan_for(s, in, sms, 0);
  in.w_expert = plan.weight_bytes_per_expert;
  in.s_expert = plan.scale_bytes_per_expert;
  in.xbytes = static_cast<std::size_t>(in.rows) * s.k * 2;
  in.ybytes = static_cast<std::size_t>(in.rows) * s.n * 2;
  in.bytes = static_cast<double>(in.w_expert + in.s_expert) * in.active + in.xbytes + in.ybytes;
  in.floor_us = in.bytes / (read_gbps * 1e9) * 1e6;
  in.macs = static_cast<double>(in.rows) * s.n * s.k;
  return in;
}

void fill_inputs(const Shape& s, Inputs& in, DevPool& wpool, DevPool& xpool) {
  const double per_expert = static_cast<double>(in.w_expert + in.s_expert);
  const double touched = per_expert * in.active;
  const double set_bytes = per_expert * s.experts;
  int sets = static_cast<int>(std::ceil(kRotateBytes / touched));
  in.sets = std::max(1, std::min({sets, 16, static_cast<int>(kMaxWeightAlloc / set_bytes)}));
  const std::size_t wset = static_cast<std::size_t>(in.w_expert) * s.experts;
  const std::size_t sset = (static_cast<std::size_t>(in.s_expert) * s.experts + 255) / 256 * 256;
  in.wset_aligned = (wset + 255) / 256 * 256;
  in.set_stride = in.wset_aligned + sset;
  in.wbase = static_cast<unsigned char*>(wpool.get(in.set_stride * in.sets));
  for (int i = 0; i < in.sets; ++i)
    fill_weights(s.format, in.wbase + in.set_stride * i, wset, in.wbase + in.set_stride * i + in.wset_aligned, sset,
                 1000 + i);
  in.yoff = (in.xbytes + 255) / 256 * 256;
  in.ooff = in.yoff + (in.ybytes + 255) / 256 * 256;
  in.xb = static_cast<unsigned char*>(xpool.get(in.ooff + in.off.size() * sizeof(int) + 256));
  fill_bf16<<<1024, 256>>>(reinterpret_cast<__nv_bfloat16*>(in.xb), in.xbytes / 2, 77, 1.f, 0.f);
  EAGLESIM_BENCH_CHECK(
      cudaMemcpy(in.xb + in.ooff, in.off.data(), in.off.size() * sizeof(int), cudaMemcpyHostToDevice));
  EAGLESIM_BENCH_CHECK(cudaDeviceSynchronize());
}

// Median µs of one launch of `plan`, in a graph, rotating the weight sets.
double time_plan(const Shape& s, const Inputs& in, const eaglesim::cuda::GroupedGemmPlan& plan, void* ws,
                 int replays) {
  const int per_graph = std::max(2, std::min(20, static_cast<int>(2000.0 / std::max(in.floor_us, 1.0))));
  int next = 0;
  return eb::time_in_graph_us(
      [&](cudaStream_t st) { eaglesim::cuda::launch_grouped_gemm(plan, in.args(s, next++ % in.sets), ws, st); },
      per_graph, replays, 3);
}

Result run_shape(const Shape& s, double read_gbps, int sms, bool with_reference, DevPool& wpool, DevPool& xpool,
                 DevPool& ws_pool, const std::map<std::string, TorchRow>& torch) {
  using namespace eaglesim::cuda;
  Inputs in = size_inputs(s, read_gbps, sms);
  const GroupedGemmPlan plan = plan_for(s, in, sms, -1);
  prepare_grouped_gemm(plan);
  fill_inputs(s, in, wpool, xpool);
  void* ws = ws_pool.get(plan.workspace_bytes);
  EAGLESIM_BENCH_CHECK(cudaMemset(ws, 0, plan.workspace_bytes));
  EAGLESIM_BENCH_CHECK(cudaDeviceSynchronize());
  const double us = time_plan(s, in, plan, ws, 15);

  Result r;
  if (plan.gemv) {
    GroupedGemmPlan no_pdl = plan;
    no_pdl.gemv_pdl = no_pdl.pdl = false;
    r.gemv_no_pdl_us = time_plan(s, in, no_pdl, ws, 15);
    const GroupedGemmPlan sk = plan_for(s, in, sms, -1, 0);
    prepare_grouped_gemm(sk);
    void* sk_ws = ws_pool.get(std::max(plan.workspace_bytes, sk.workspace_bytes));
    EAGLESIM_BENCH_CHECK(cudaMemset(sk_ws, 0, sk.workspace_bytes));
    r.stream_k_us = time_plan(s, in, sk, sk_ws, 15);
    r.stream_k_variant = sk.variant;
    if (plan.gemv_blocks_per_cta > 1) {
      const GroupedGemmPlan one = plan_for(s, in, sms, -1, 1, 1);
      prepare_grouped_gemm(one);
      r.gemv_one_block_us = time_plan(s, in, one, ws, 15);
    }
  }
  if (const GroupedGemmPlan wgp = plan_for(s, in, sms, -1, -1, 0, 0, 1); wgp.wgmma) {
    prepare_grouped_gemm(wgp);
    void* wg_ws = ws_pool.get(std::max(plan.workspace_bytes, wgp.workspace_bytes));
    EAGLESIM_BENCH_CHECK(cudaMemset(wg_ws, 0, wgp.workspace_bytes));
    r.wgmma_us = time_plan(s, in, wgp, wg_ws, 15);
    r.wgmma_variant = wgp.variant;
  }
  r.active = in.active;
  r.variant = plan.variant;
  r.row.kernel = s.kernel;
  r.row.shape = s.label;
  r.row.bytes = in.bytes;
  r.row.us = us;
  r.row.floor_us = in.floor_us;
  r.mma_floor_us = 2.0 * in.macs / (kMmaSyncTflops * 1e12) * 1e6;
  r.tensor_floor_us = 2.0 * in.macs / (tensor_tflops * 1e12) * 1e6;
  const auto t = torch.find(s.key);
  if (t != torch.end()) {
    r.row.reference_us = t->second.us;
    r.row.reference = t->second.what;
  }
  if (with_reference && in.macs <= kReferenceMaxMacs) {
    int next_ref = 0;
    r.ref_kernel_us = eb::time_in_graph_us(
        [&](cudaStream_t st) { launch_grouped_gemm_reference(plan, in.args(s, next_ref++ % in.sets), st); }, 1, 3, 1);
  }
  return r;
}

// ---------------------------------------------------------------- --variants

// Every kernel variant (src/cuda/ops/moe_gemm_plan.hpp, grouped_gemm_variant_name) on every shape of
// the table that reads >= 16 MB, inputs filled once per shape: µs, % of floor, and the output
// against the plain reference kernel (or, where that would be too slow, against variant 0,
// which the GPU tests check against the CPU). A variant with any wrong row in a class is
// reported as wrong and never named the winner of that class.
struct VariantRow {
  std::string cls, shape, plan, against, note;
  int variant = 0, row_tile = 0;
  double us = 0, floor_us = 0, bytes = 0, rel = 0;
  long nan = 0;
  bool ok = false;
};

constexpr double kVariantMinBytes = 16e6;
constexpr double kVariantMaxRel = 1e-2;
constexpr double kVariantWinMargin = 1.02;  // a median speed-up below this is noise, not a win

std::vector<std::uint16_t> read_y(const Inputs& in) {
  std::vector<std::uint16_t> y(in.ybytes / 2);
  EAGLESIM_BENCH_CHECK(cudaMemcpy(y.data(), in.xb + in.yoff, in.ybytes, cudaMemcpyDeviceToHost));
  return y;
}

// y of one launch of `plan` on weight set 0, the output NaN-poisoned first (unwritten outputs show).
std::vector<std::uint16_t> poisoned_run(const Shape& s, const Inputs& in, const eaglesim::cuda::GroupedGemmPlan& plan,
                                        void* ws) {
  EAGLESIM_BENCH_CHECK(cudaMemset(in.xb + in.yoff, 0xff, in.ybytes));
  eaglesim::cuda::launch_grouped_gemm(plan, in.args(s, 0), ws, nullptr);
  EAGLESIM_BENCH_CHECK(cudaDeviceSynchronize());
  return read_y(in);
}

// ||y - ref|| / ||ref|| over the elements where ref is a number; `nan`: elements of y that are not.
double rel_error(const std::vector<std::uint16_t>& y, const std::vector<std::uint16_t>& ref, long& nan) {
  double num = 0, den = 0;
  nan = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double v = eaglesim::kernels::moe::bf16_bits_to_float(y[i]),
                 r = eaglesim::kernels::moe::bf16_bits_to_float(ref[i]);
    if (!std::isfinite(v)) {
      ++nan;
      continue;
    }
    num += (v - r) * (v - r);
    den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Whether two launches of `plan` capture into a graph that runs (a variant's launch attributes
// must survive capture); on failure `why` says what failed and no capture is left open.
bool capturable(const Shape& s, const Inputs& in, const eaglesim::cuda::GroupedGemmPlan& plan, void* ws,
                std::string& why) {
  cudaStream_t st = nullptr;
  EAGLESIM_BENCH_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  EAGLESIM_BENCH_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < 2; ++i) eaglesim::cuda::launch_grouped_gemm(plan, in.args(s, i % in.sets), ws, st);
  } catch (const std::exception& e) {
    why = e.what();
  }
  cudaGraph_t g = nullptr;
  cudaError_t rc = cudaStreamEndCapture(st, &g);
  if (rc == cudaSuccess && why.empty()) {
    cudaGraphExec_t exec = nullptr;
    rc = cudaGraphInstantiate(&exec, g, 0);
    if (rc == cudaSuccess) rc = cudaGraphLaunch(exec, st);
    if (rc == cudaSuccess) rc = cudaStreamSynchronize(st);
    if (exec) cudaGraphExecDestroy(exec);
  }
  if (g) cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  if (why.empty() && rc != cudaSuccess) why = cudaGetErrorString(rc);
  cudaGetLastError();  // a failed capture leaves no error behind for the next variant
  return why.empty();
}

std::string json_escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

bool counters_zero(const eaglesim::cuda::GroupedGemmPlan& plan, const void* ws) {
  std::vector<unsigned char> c(plan.counter_bytes);
  EAGLESIM_BENCH_CHECK(cudaMemcpy(c.data(), ws, c.size(), cudaMemcpyDeviceToHost));
  return std::all_of(c.begin(), c.end(), [](unsigned char b) { return b == 0; });
}

// The output every variant of shape `s` is held to: the plain reference kernel's, unless that
// would be too slow; else empty, and variant 0's output once it ran. `against` names it.
std::vector<std::uint16_t> variants_reference(const Shape& s, const Inputs& in, int sms, std::string& against) {
  using namespace eaglesim::cuda;
  std::vector<std::uint16_t> ref;
  against = "base";
  if (in.macs <= kReferenceMaxMacs) {
    EAGLESIM_BENCH_CHECK(cudaMemset(in.xb + in.yoff, 0xff, in.ybytes));
    launch_grouped_gemm_reference(plan_for(s, in, sms, 0), in.args(s, 0), nullptr);
    EAGLESIM_BENCH_CHECK(cudaDeviceSynchronize());
    ref = read_y(in);
    against = "reference kernel";
  }
  return ref;
}

// Kernel variant v of shape `s` (its plan `plan`): its output checked against `ref` (which
// becomes its output when empty), then timed in a graph if it captures into one.
VariantRow measure_variant(const Shape& s, const Inputs& in, const eaglesim::cuda::GroupedGemmPlan& plan, int v,
                           const std::string& against, std::vector<std::uint16_t>& ref, DevPool& wspool) {
  using namespace eaglesim::cuda;
  VariantRow r;
  r.cls = s.kernel;
  r.shape = s.label;
  r.plan = plan.variant;
  r.variant = v;
  r.row_tile = plan.row_tile;
  r.bytes = in.bytes;
  r.floor_us = in.floor_us;
  r.against = against;
  try {
    prepare_grouped_gemm(plan);
    void* ws = wspool.get(plan.workspace_bytes);
    EAGLESIM_BENCH_CHECK(cudaMemset(ws, 0, plan.workspace_bytes));
    const std::vector<std::uint16_t> y = poisoned_run(s, in, plan, ws);
    if (ref.empty()) {
      ref = y;  // variant 0 runs first: the others are held to it
      r.against = "itself (GPU tests check it against the CPU)";
    }
    r.rel = rel_error(y, ref, r.nan);
    r.ok = r.nan == 0 && r.rel < kVariantMaxRel && counters_zero(plan, ws);
    const int resident = grouped_gemm_resident_ctas(plan);
    if (resident < plan.ctas_per_sm) {
      r.note = " [only " + std::to_string(resident) + " CTAs per SM resident]";
      r.plan += r.note;
    }
    std::string why;
    if (capturable(s, in, plan, ws, why)) {
      r.us = time_plan(s, in, plan, ws, 7);
    } else {
      r.ok = false;
      r.against += "; not capturable: " + why;
    }
  } catch (const std::exception& e) {
    // a launch that fails is a wrong variant, not the end of the sweep (a kernel fault would
    // end it: the context is lost)
    r.ok = false;
    r.against += std::string("; failed: ") + e.what();
    cudaGetLastError();
  }
  if (r.us <= 0) r.us = 1e9;  // never a winner, never in a median that matters
  return r;
}

// One variant row: on stdout, and as a JSON line to `jf` if given.
void print_variant_row(const VariantRow& r, std::FILE* jf) {
  using namespace eaglesim::cuda;
  const int v = r.variant;
  std::printf("%-16s %-44s %-22s %9.2f %9.2f %6.1f%% %9.2e %s\n", r.cls.c_str(), r.shape.c_str(),
              grouped_gemm_variant_name(v), r.us, r.floor_us, 100.0 * r.floor_us / r.us, r.rel,
              ((r.ok ? std::string("ok") : "WRONG (vs " + r.against + ")") + r.note).c_str());
  std::fflush(stdout);
  if (jf) {
    std::fprintf(jf,
                 "{\"kernel\": \"%s\", \"shape\": \"%s\", \"variant\": \"%s\", \"row_tile\": %d, \"plan\": \"%s\", "
                 "\"bytes\": %.0f, \"us\": %.3f, \"floor_us\": %.3f, \"pct_floor\": %.2f, \"rel_err\": %.3e, "
                 "\"nan\": %ld, \"ok\": %s, \"checked_against\": \"%s\"}\n",
                 r.cls.c_str(), r.shape.c_str(), grouped_gemm_variant_name(v), r.row_tile, r.plan.c_str(), r.bytes,
                 r.us,
                 r.floor_us, 100.0 * r.floor_us / r.us, r.rel, r.nan, r.ok ? "true" : "false",
                 json_escaped(r.against).c_str());
    std::fflush(jf);
  }
}

// Per class and variant: % of floor over the rows where the variant is its own kernel, and the
// paired speed-up over base on exactly those rows (the fair comparison: same shapes).
struct VariantStats {
  std::size_t rows = 0;
  double median_pct = 0, min_pct = 0, median_speedup = 0;
  int wrong = 0;
};

using BaseUs = std::map<std::pair<std::string, std::string>, double>;  // (class, shape) -> base's µs

BaseUs base_us_of(const std::vector<VariantRow>& rows) {
  BaseUs base_us;
  for (const VariantRow& r : rows)
    if (r.variant == 0) base_us[{r.cls, r.shape}] = r.us;
  return base_us;
}

VariantStats stats_of(const std::vector<const VariantRow*>& rs, const BaseUs& base_us) {
  VariantStats st;
  std::vector<double> pct, speedup;
  for (const VariantRow* r : rs) {
    pct.push_back(100.0 * r->floor_us / r->us);
    const auto b = base_us.find({r->cls, r->shape});
    if (b != base_us.end()) speedup.push_back(b->second / r->us);
    st.wrong += !r->ok;
  }
  st.rows = rs.size();
  st.median_pct = eb::median_of(pct);
  st.min_pct = *std::min_element(pct.begin(), pct.end());
  st.median_speedup = speedup.empty() ? 0.0 : eb::median_of(speedup);
  return st;
}

void print_variants_summary(const std::vector<VariantRow>& rows, const BaseUs& base_us) {
  using namespace eaglesim::cuda;
  std::printf("\nvariants summary (ops >= 16 MB): class, variant, rows, median %%floor, min %%floor, "
              "median speed-up over base on the same rows, wrong rows\n");
  std::map<std::string, std::map<int, std::vector<const VariantRow*>>> by_class;
  for (const VariantRow& r : rows) by_class[r.cls][r.variant].push_back(&r);
  for (auto& [cls, per_v] : by_class)
    for (auto& [v, rs] : per_v) {
      const VariantStats st = stats_of(rs, base_us);
      std::printf("  %-18s %-22s %4zu  %6.1f%%  %6.1f%%  %6.3fx  %d%s\n", cls.c_str(), grouped_gemm_variant_name(v),
                  st.rows, st.median_pct, st.min_pct, st.median_speedup, st.wrong,
                  st.wrong ? "  WRONG: never the default" : "");
    }
}

// The winner per class and row tile (what default_grouped_gemm_variant picks by): the correct
// variant with the largest median paired speed-up, if that beats base by more than the noise.
void print_variant_winners(const std::vector<VariantRow>& rows, const BaseUs& base_us) {
  using namespace eaglesim::cuda;
  std::map<std::pair<std::string, int>, std::map<int, std::vector<const VariantRow*>>> by_tile;
  for (const VariantRow& r : rows) by_tile[{r.cls, r.row_tile}][r.variant].push_back(&r);
  std::printf("\nwinners (class, row tile: variant, median speed-up over base, rows; base where none wins by > %.0f%%)\n",
              100.0 * (kVariantWinMargin - 1.0));
  for (auto& [key, per_v] : by_tile) {
    int best = 0;
    double best_speedup = kVariantWinMargin;
    std::size_t best_rows = per_v.count(0) ? per_v.at(0).size() : 0;
    for (auto& [v, rs] : per_v) {
      const VariantStats st = stats_of(rs, base_us);
      if (v != 0 && st.wrong == 0 && st.median_speedup > best_speedup) {
        best = v;
        best_speedup = st.median_speedup;
        best_rows = st.rows;
      }
    }
    std::printf("  %-18s r%-3d %-22s", key.first.c_str(), key.second, grouped_gemm_variant_name(best));
    if (best != 0) std::printf(" %6.3fx on %zu rows (variant %d)", best_speedup, best_rows, best);
    std::printf("\n");
  }
}

void run_variants(const std::vector<Shape>& shapes, const std::string& filter, double gbps, int sms,
                  const std::vector<int>& variants, std::FILE* jf) {
  using namespace eaglesim::cuda;
  DevPool wpool, xpool, wspool;
  std::vector<VariantRow> rows;
  std::printf("%-16s %-44s %-22s %9s %9s %7s %9s %s\n", "kernel", "shape", "variant", "us", "floor_us", "%floor",
              "rel_err", "check");
  for (const Shape& s : shapes) {
    if (!filter.empty() && (s.label + " " + s.kernel).find(filter) == std::string::npos) continue;
    Inputs in = size_inputs(s, gbps, sms);
    if (in.bytes < kVariantMinBytes) continue;
    fill_inputs(s, in, wpool, xpool);
    std::string against;
    std::vector<std::uint16_t> ref = variants_reference(s, in, sms, against);
    for (int v : variants) {
      const GroupedGemmPlan plan = plan_for(s, in, sms, v);
      if (plan.kernel_variant != v) continue;  // not a kernel of its own for this format and row tile
      const VariantRow r = measure_variant(s, in, plan, v, against, ref, wspool);
      print_variant_row(r, jf);
      rows.push_back(r);
    }
  }

  const BaseUs base_us = base_us_of(rows);
  print_variants_summary(rows, base_us);
  print_variant_winners(rows, base_us);
}

// ---------------------------------------------------------------- --gemv-sweep

// Every GEMV grid of the dense shapes of <= 16 rows the plan runs on the GEMV kernel: k-split
// (CTAs per cluster) 1-8 x 16-channel blocks per CTA 1-8, each checked against the plan's own
// grid on the same inputs and timed as the plain table times it. Prints per shape the plan's
// grid, the fastest and their ratio, and per (format, rows) the geometric mean of that ratio:
// the data a split rule is judged on, not a per-shape table.
void run_gemv_sweep(const std::vector<Shape>& shapes, const std::string& filter, double gbps, int sms,
                    std::FILE* jf) {
  using namespace eaglesim::cuda;
  DevPool wpool, xpool, wspool;
  std::map<std::string, std::vector<double>> ratios;  // "int4_g32 m4" -> plan us / best us
  long wrong = 0;
  std::printf("%-48s %-16s %-34s %8s %-34s %8s %7s %s\n", "shape", "kernel", "plan", "us", "best", "us", "ratio",
              "grids (wrong)");
  for (const Shape& s : shapes) {
    if (!s.dense || s.tokens > kGemvMaxRows) continue;
    if (!filter.empty() && (s.label + " " + s.kernel).find(filter) == std::string::npos) continue;
    Inputs in = size_inputs(s, gbps, sms);
    const GroupedGemmPlan plan = plan_for(s, in, sms, -1);
    if (!plan.gemv) continue;
    fill_inputs(s, in, wpool, xpool);
    void* ws = wspool.get(plan.workspace_bytes);
    prepare_grouped_gemm(plan);
    const std::vector<std::uint16_t> ref = poisoned_run(s, in, plan, ws);
    const double plan_us = time_plan(s, in, plan, ws, 15);
    double best_us = plan_us;
    std::string best = plan.variant;
    std::set<std::string> seen{plan.variant};
    int grids = 1, bad = 0;
    for (int split = 1; split <= 8; ++split)
      for (int bpc : {1, 2, 3, 4, 6, 8}) {
        GroupedGemmPlan g;
        try {
          g = plan_for(s, in, sms, -1, 1, bpc, split);
        } catch (const std::exception&) {
          continue;  // no such grid for this shape (shared memory)
        }
        if (!seen.insert(g.variant).second) continue;
        prepare_grouped_gemm(g);
        long nan = 0;
        const double rel = rel_error(poisoned_run(s, in, g, ws), ref, nan);
        const bool ok = nan == 0 && rel <= 1e-3;
        const double us = time_plan(s, in, g, ws, 15);
        ++grids;
        if (!ok) ++bad;
        if (ok && us < best_us) {
          best_us = us;
          best = g.variant;
        }
        if (jf)
          std::fprintf(jf,
                       "{\"shape\": \"%s\", \"kernel\": \"%s\", \"grid\": \"%s\", \"us\": %.3f, \"floor_us\": %.3f, "
                       "\"rel\": %.3g, \"nan\": %ld, \"plan\": \"%s\", \"plan_us\": %.3f}\n",
                       s.label.c_str(), s.kernel.c_str(), g.variant.c_str(), us, in.floor_us, rel, nan,
                       plan.variant.c_str(), plan_us);
      }
    wrong += bad;
    std::printf("%-48s %-16s %-34s %8.2f %-34s %8.2f %7.3f %d (%d)\n", s.label.c_str(), s.kernel.c_str(),
                plan.variant.c_str(), plan_us, best.c_str(), best_us, plan_us / best_us, grids, bad);
    std::fflush(stdout);
    ratios[std::string(to_string(s.format)) + " m" + std::to_string(s.tokens)].push_back(plan_us / best_us);
  }
  std::printf("\nplan grid / fastest grid, geometric mean (max) per format and rows; %ld wrong grids\n", wrong);
  for (const auto& [key, v] : ratios) {
    double lg = 0, mx = 0;
    for (double r : v) {
      lg += std::log(r);
      mx = std::max(mx, r);
    }
    std::printf("  %-18s %3zu shapes  %.3f (%.3f)\n", key.c_str(), v.size(), std::exp(lg / v.size()), mx);
  }
}

std::string arg_value(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return {};
}
bool has_flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const bool quick = has_flag(argc, argv, "--quick");
    const bool with_reference = !has_flag(argc, argv, "--no-reference");
    const std::string torch_path = arg_value(argc, argv, "--torch"), json_path = arg_value(argc, argv, "--json");
    const std::string filter = arg_value(argc, argv, "--filter");
    if (const std::string t = arg_value(argc, argv, "--tensor-tflops"); !t.empty()) tensor_tflops = std::stod(t);
    const bool variants_mode = has_flag(argc, argv, "--variants");
    std::vector<int> variants;
    if (variants_mode) {
      // --variant-list a,b,...: a subset by name (base always runs first: the others are paired with it)
      const std::string list = arg_value(argc, argv, "--variant-list");
      variants.push_back(0);
      for (int v = 1; v < eaglesim::cuda::grouped_gemm_variant_count(); ++v)
        if (list.empty() || ("," + list + ",").find(std::string(",") + eaglesim::cuda::grouped_gemm_variant_name(v) + ",") !=
                                std::string::npos)
          variants.push_back(v);
      if (!list.empty() && variants.size() == 1 && list != "base") {
        std::fprintf(stderr, "bench_gemm: --variant-list: no known variant in '%s' (expected names such as occ3,straight)\n",
                     list.c_str());
        return 2;
      }
    }
    int device_count = 0;
    if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count < 1) {
      std::fprintf(stderr, "bench_gemm: no CUDA device\n");
      return 3;
    }
    cudaDeviceProp prop{};
    EAGLESIM_BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
    const std::map<std::string, TorchRow> torch = torch_path.empty() ? std::map<std::string, TorchRow>{}
                                                                     : read_torch(torch_path);
    std::FILE* jf = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");
    if (!json_path.empty() && !jf) {
      std::fprintf(stderr, "bench_gemm: cannot write %s\n", json_path.c_str());
      return 2;
    }
    const double gbps = eb::measure_read_gbps();
    std::printf("device: %s, %d SMs, L2 %d MB; read bandwidth measured %.0f GB/s; torch rows: %zu\n", prop.name,
                prop.multiProcessorCount, prop.l2CacheSize >> 20, gbps, torch.size());
    if (has_flag(argc, argv, "--gemv-sweep")) {
      run_gemv_sweep(all_shapes(quick), filter, gbps, prop.multiProcessorCount, jf);
      if (jf) std::fclose(jf);
      return 0;
    }
    if (variants_mode) {
      run_variants(all_shapes(quick), filter, gbps, prop.multiProcessorCount, variants, jf);
      if (jf) std::fclose(jf);
      return 0;
    }
    eb::print_header();
    DevPool wpool, xpool, wspool;
    std::vector<Result> results;
    for (const Shape& s : all_shapes(quick)) {
      if (!filter.empty() && (s.label + " " + s.kernel).find(filter) == std::string::npos) continue;
      Result r = run_shape(s, gbps, prop.multiProcessorCount, with_reference, wpool, xpool, wspool, torch);
      eb::print_row(r.row);
      if (jf) {
        eb::print_json_row(jf, r.row);
        eb::BenchRow ref = r.row;  // the plain reference kernel on the same shape, as its own row
        ref.kernel = r.row.kernel + " reference";
        ref.us = r.ref_kernel_us;
        ref.reference.clear();
        ref.reference_us = 0;
        if (r.ref_kernel_us > 0) eb::print_json_row(jf, ref);
        std::fprintf(jf,
                     "{\"kernel\": \"%s\", \"shape\": \"%s\", \"variant\": \"%s\", \"active_experts\": %d, "
                     "\"reference_kernel_us\": %.3f, \"mma_floor_us\": %.3f, \"torch\": \"%s\", \"torch_us\": %.3f, "
                     "\"gemv_no_pdl_us\": %.3f, \"stream_k_us\": %.3f, \"gemv_one_block_us\": %.3f, "
                     "\"wgmma_us\": %.3f}\n",
                     r.row.kernel.c_str(), r.row.shape.c_str(), r.variant.c_str(), r.active, r.ref_kernel_us,
                     r.mma_floor_us, r.row.reference.c_str(), r.row.reference_us, r.gemv_no_pdl_us, r.stream_k_us,
                     r.gemv_one_block_us, r.wgmma_us);
        std::fflush(jf);
      }
      results.push_back(r);
    }
    if (jf) std::fclose(jf);

    // The dense rows the GEMV kernel runs, against the stream-K kernel on the same op. The graph
    // repeats one op, so the PDL column lets each launch stream its weights during the previous
    // one's work; in a verify step the previous kernel is another op (the replay measures that).
    std::printf("\nGEMV kernel vs stream-K kernel (dense, m <= 16): shape, floor us, GEMV us (PDL), GEMV us "
                "(no PDL), stream-K us, stream-K / GEMV (no PDL), GEMV us with one block per CTA (PDL; - where the "
                "plan has one already)\n");
    for (const Result& r : results)
      if (r.stream_k_us > 0) {
        char one[32] = "-";
        if (r.gemv_one_block_us > 0) std::snprintf(one, sizeof one, "%.2f", r.gemv_one_block_us);
        std::printf("  %-16s %-44s %7.2f %8.2f %8.2f %8.2f %6.2fx %8s  %s | %s\n", r.row.kernel.c_str(),
                    r.row.shape.c_str(), r.row.floor_us, r.row.us, r.gemv_no_pdl_us, r.stream_k_us,
                    r.stream_k_us / r.gemv_no_pdl_us, one, r.variant.c_str(), r.stream_k_variant.c_str());
      }

    // The dense int4 rows the wgmma kernel takes, beside the plan's kernel on the same op, against
    // the larger of the byte floor and the FLOPs at the tensor peak.
    std::printf("\nwgmma kernel vs the plan's kernel (dense int4, m >= 33): shape, byte floor us, FLOPs at %.0f "
                "TFLOP/s us, wgmma us, %% of max(floors), plan's us, plan's / wgmma, torch us\n", tensor_tflops);
    for (const Result& r : results)
      if (r.wgmma_us > 0) {
        const double fl = std::max(r.row.floor_us, r.tensor_floor_us);
        std::printf("  %-44s %7.2f %7.2f %8.2f %5.1f%% %8.2f %6.2fx %8.2f  %s | %s\n", r.row.shape.c_str(), r.row.floor_us,
                    r.tensor_floor_us, r.wgmma_us, 100.0 * fl / r.wgmma_us, r.row.us, r.row.us / r.wgmma_us,
                    r.row.reference_us, r.wgmma_variant.c_str(), r.variant.c_str());
      }

    // Summary per class: rows reading >= 16 MB are the ones the 60% target applies to; "mma-bound"
    // rows are those whose FLOPs at mma.sync speed exceed the byte floor.
    std::printf("\nsummary (ops >= 16 MB): class, rows, median %%floor, min %%floor, median speedup vs torch, "
                "mma-bound rows\n");
    std::map<std::string, std::vector<const Result*>> by_class;
    for (const Result& r : results)
      if (r.row.bytes >= 16e6) by_class[r.row.kernel].push_back(&r);
    for (auto& [cls, rs] : by_class) {
      std::vector<double> pct, sp;
      int mma_bound = 0;
      for (const Result* r : rs) {
        pct.push_back(100.0 * r->row.floor_us / r->row.us);
        if (r->row.reference_us > 0) sp.push_back(r->row.reference_us / r->row.us);
        mma_bound += r->mma_floor_us > r->row.floor_us;
      }
      std::printf("  %-18s %4zu  %6.1f%%  %6.1f%%  %8s  %d\n", cls.c_str(), rs.size(), eb::median_of(pct),
                  *std::min_element(pct.begin(), pct.end()),
                  sp.empty() ? "-" : (std::to_string(eb::median_of(sp)).substr(0, 5) + "x").c_str(), mma_bound);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm: %s\n", e.what());
    return 1;
  }
}
