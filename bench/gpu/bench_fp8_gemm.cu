// The replay's dense fp8 GEMMs at a verify step's 1-256 rows, every way it can run them, against
// the floor measured in this run and torch._scaled_mm on the same shapes (docs/kernels/
// fp8-gemm.md):
//   lt tensor / channel / block   cuBLASLt's fp8 GEMM (cuda::LtGemm, tuned per shape as the replay
//                                 tunes it) in each scale mode (cuda/ops/fp8_scaling.hpp), over e4m3
//                                 activations; W8A8 as engines run fp8 checkpoints;
//   quant                         the activation quantisation kernel of each mode (bf16 -> e4m3 +
//                                 scales) the engine runs before the GEMM, timed on its own;
//   weight-only                   eaglesim's GEMV / stream-K kernel over packed e4m3 weights (W8A16),
//                                 what the replay ran before and runs at few rows
//                                 (cost/low_bit_gemm_kernel.hpp);
//   torch                         tools/torch_fp8_gemm_bench.py: torch._scaled_mm per tensor,
//                                 row-wise, block-wise (where this PyTorch takes it) on the same shapes.
// Shapes: the Llama-3.1-70B TP8 per-rank projections and the Kimi-K2 / DeepSeek-V3 TP8 dense
// projections (traces/kimi-k2_tp8_t4.json), at 1, 4, 16, 32, 64, 128 and 256 rows. Every timed
// op runs in a CUDA graph over weight copies that L2 cannot hold, median of the replays.
//
//   bench_fp8_gemm [--torch torch-fp8.json] [--json out.jsonl] [--quick] [--filter TEXT] [--budget-s S]
//
// Summaries: per mode, cuBLASLt against torch's same recipe (ratio <= 1.1 is the target) and
// against torch's fastest recipe; the replay's pick (the rule, in the block mode) against the best
// library kernel; and the rule check: on how many rows the kernel the rule picks is the faster of
// the weight-only kernel and cuBLASLt.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "bench/gpu/kernel_bench.cuh"
#include "core/dtype.hpp"
#include "cost/low_bit_gemm_kernel.hpp"
#include "cuda/ops/fp8_act_quant.hpp"
#include "cuda/ops/fp8_scaling.hpp"
#include "cuda/ops/lt_gemm.hpp"
#include "cuda/ops/moe_gemm_plan.hpp"

namespace {

namespace eb = eaglesim::bench;
using eaglesim::cuda::Fp8Scaling;
using eaglesim::cuda::GemmWeightFormat;

constexpr const char* kTool = "bench_fp8_gemm";
constexpr const char* kUsage =
    "bench_fp8_gemm [--torch torch-fp8.json] [--json out.jsonl] [--quick] [--filter TEXT] [--budget-s S]";
constexpr std::size_t kWorkspace = 32u << 20;
constexpr double kRotateBytes = 256e6;  // several times the 50-60 MB L2
constexpr int kMaxCopies = 16;
constexpr double kTarget = 1.1;         // ours / the best library kernel, issue #53
constexpr double kRuleMargin = 1.05;    // the other kernel this much faster: the rule picked wrong
const Fp8Scaling kModes[] = {Fp8Scaling::tensor, Fp8Scaling::channel, Fp8Scaling::block};
constexpr int kModeCount = 3;
// The mode the replay runs by default (EAGLESIM_FP8_SCALING unset).
constexpr Fp8Scaling kReplayMode = Fp8Scaling::block;

struct Shape {
  const char* model;
  const char* proj;
  int n, k;
  GemmWeightFormat weight_only;  // the packed format of the checkpoint's scales
};

const Shape kShapes[] = {
    {"llama-3.1-70b/tp8", "qkv", 1280, 8192, GemmWeightFormat::fp8_channel},
    {"llama-3.1-70b/tp8", "o", 8192, 1024, GemmWeightFormat::fp8_channel},
    {"llama-3.1-70b/tp8", "gate_up", 7168, 8192, GemmWeightFormat::fp8_channel},
    {"llama-3.1-70b/tp8", "down", 8192, 3584, GemmWeightFormat::fp8_channel},
    {"kimi-k2/tp8", "fused_qkv_a", 2112, 7168, GemmWeightFormat::fp8_block},
    {"kimi-k2/tp8", "q_b", 1536, 1536, GemmWeightFormat::fp8_block},
    {"kimi-k2/tp8", "k_absorb", 4096, 128, GemmWeightFormat::fp8_block},
    {"kimi-k2/tp8", "v_up", 1024, 512, GemmWeightFormat::fp8_block},
    {"kimi-k2/tp8", "o", 7168, 1024, GemmWeightFormat::fp8_block},
    {"kimi-k2/tp8", "mlp gate_up", 4608, 7168, GemmWeightFormat::fp8_block},
    {"kimi-k2/tp8", "mlp down", 7168, 2304, GemmWeightFormat::fp8_block},
    {"kimi-k2/tp8", "shared gate_up", 512, 7168, GemmWeightFormat::fp8_block},
    {"kimi-k2/tp8", "shared down", 7168, 256, GemmWeightFormat::fp8_block},
};

// The shape's name, shared with tools/torch_fp8_gemm_bench.py.
std::string shape_name(const Shape& s, int m) {
  return std::string(s.model) + " " + s.proj + " m=" + std::to_string(m) + " n=" + std::to_string(s.n) +
         " k=" + std::to_string(s.k);
}
std::string torch_key(Fp8Scaling mode, const Shape& s, int m) {
  return std::string(to_string(mode)) + "|" + shape_name(s, m);
}

// ---------------------------------------------------------------- fills (never zeros)

__device__ __forceinline__ std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// Random e4m3 bytes, the NaN codes avoided.
__global__ void fill_e4m3(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint8_t b = static_cast<std::uint8_t>(mix64(seed ^ (i * 0xD1B54A32D192ED03ull)) >> 56);
    if ((b & 0x7f) == 0x7f) b ^= 1;
    p[i] = b;
  }
}
// Positive scales around `mean`.
__global__ void fill_scales(float* p, std::size_t n, std::uint64_t seed, float mean) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = mean * (0.5f + static_cast<float>(mix64(seed ^ i) >> 40) * (1.0f / 16777216.0f));
}

std::size_t round256(std::size_t v) { return (v + 255) / 256 * 256; }

struct Buffer {
  void* p = nullptr;
  explicit Buffer(std::size_t bytes) { EAGLESIM_BENCH_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 256))); }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// ---------------------------------------------------------------- torch rows

struct TorchTime {
  double us = 0;
  std::string what;
};

std::map<std::string, TorchTime> read_torch(const std::string& path) {
  std::map<std::string, TorchTime> out;
  if (path.empty()) return out;
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) {
    std::fprintf(stderr, "%s: cannot read %s (no torch columns)\n", kTool, path.c_str());
    return out;
  }
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), f)) {
    const std::string line(buf);
    const std::string key = eb::json_line_field(line, "key"), us = eb::json_line_field(line, "us");
    if (key.empty() || us.empty()) continue;
    const double t = std::atof(us.c_str());
    if (t > 0) out[key] = {t, eb::json_line_field(line, "what")};
  }
  std::fclose(f);
  return out;
}

// ---------------------------------------------------------------- one shape

// Weight copies of one shape for cuBLASLt (e4m3 [n][k] then each mode's scales) and for the
// weight-only kernel (packed, with its scales), rotated so that L2 never serves them.
struct Weights {
  int copies = 1;
  std::size_t lt_stride = 0, lt_scale_at = 0;  // bytes per copy; the scales' offset in it
  std::unique_ptr<Buffer> lt;
  std::size_t wo_stride = 0, wo_scale_at = 0;
  std::unique_ptr<Buffer> wo;
};

Weights make_weights(const Shape& s, const eaglesim::cuda::GroupedGemmPlan& wo_plan) {
  Weights w;
  const std::size_t bytes = static_cast<std::size_t>(s.n) * s.k;
  w.copies = static_cast<int>(std::clamp<double>(std::ceil(kRotateBytes / static_cast<double>(bytes)), 2, kMaxCopies));
  std::size_t scale_floats = 0;
  for (Fp8Scaling m : kModes) scale_floats = std::max(scale_floats, eaglesim::cuda::fp8_weight_scale_floats(m, s.n, s.k));
  w.lt_scale_at = round256(bytes);
  w.lt_stride = round256(w.lt_scale_at + scale_floats * sizeof(float));
  w.lt = std::make_unique<Buffer>(w.lt_stride * w.copies);
  w.wo_scale_at = round256(static_cast<std::size_t>(wo_plan.weight_bytes_per_expert));
  w.wo_stride = round256(w.wo_scale_at + static_cast<std::size_t>(wo_plan.scale_bytes_per_expert));
  w.wo = std::make_unique<Buffer>(w.wo_stride * w.copies);
  for (int c = 0; c < w.copies; ++c) {
    char* lt = w.lt->as<char>() + w.lt_stride * c;
    fill_e4m3<<<1024, 256>>>(reinterpret_cast<std::uint8_t*>(lt), bytes, 100 + c);
    fill_scales<<<64, 256>>>(reinterpret_cast<float*>(lt + w.lt_scale_at), scale_floats, 200 + c, 1e-2f);
    char* wo = w.wo->as<char>() + w.wo_stride * c;
    fill_e4m3<<<1024, 256>>>(reinterpret_cast<std::uint8_t*>(wo), static_cast<std::size_t>(wo_plan.weight_bytes_per_expert),
                             300 + c);
    fill_scales<<<64, 256>>>(reinterpret_cast<float*>(wo + w.wo_scale_at),
                             static_cast<std::size_t>(wo_plan.scale_bytes_per_expert) / sizeof(float), 400 + c, 1e-3f);
  }
  EAGLESIM_BENCH_CHECK(cudaGetLastError());
  EAGLESIM_BENCH_CHECK(cudaDeviceSynchronize());
  return w;
}

// The activations every kernel of a shape reads: bf16 x, e4m3 x8 and its scales, bf16 y; for the
// most rows any mode computes.
struct Activations {
  std::unique_ptr<Buffer> x, x8, scales, y;
  Activations(int rows, int n, int k) {
    x = std::make_unique<Buffer>(static_cast<std::size_t>(rows) * k * 2);
    x8 = std::make_unique<Buffer>(static_cast<std::size_t>(rows) * k);
    scales = std::make_unique<Buffer>(eaglesim::cuda::fp8_act_scale_floats(Fp8Scaling::block, rows, k) * 4 +
                                      static_cast<std::size_t>(rows) * 4 + 256);
    y = std::make_unique<Buffer>(static_cast<std::size_t>(rows) * n * 2);
    eb::fill_random_bf16<<<256, 256>>>(x->as<__nv_bfloat16>(), static_cast<std::size_t>(rows) * k, 77, 1.f);
    EAGLESIM_BENCH_CHECK(cudaDeviceSynchronize());
  }
};

struct ModeResult {
  double lt_us = 0, heuristic_us = 0, quant_us = 0, tune_s = 0;
  std::string choice;
  TorchTime torch;
};

struct Row {
  std::string shape;
  int m = 0;
  double bytes = 0, floor_us = 0;  // bytes of the block-mode W8A8 op
  double wo_us = 0;
  std::string wo_variant;
  eaglesim::LowBitGemmKernel rule = eaglesim::LowBitGemmKernel::cublas;
  ModeResult mode[kModeCount];
  TorchTime torch_best;  // torch's fastest recipe on the shape
};

double time_lt(const eaglesim::cuda::LtGemm& g, const Weights& w, const Activations& a, void* ws) {
  int next = 0;
  const float* act_scales = a.scales->as<const float>();
  return eb::time_in_graph_us(
      [&](cudaStream_t st) {
        const int c = next++ % w.copies;
        const char* base = w.lt->as<const char>() + w.lt_stride * c;
        const float* wscale = reinterpret_cast<const float*>(base + w.lt_scale_at);
        g.run(base, a.x8->p, a.y->p, ws, st, eaglesim::cuda::LtScales{wscale, act_scales});
      },
      w.copies * 4);
}

ModeResult run_mode(cublasLtHandle_t lt, Fp8Scaling mode, const Shape& s, int m, const Weights& w,
                    const Activations& a, void* ws) {
  using namespace eaglesim::cuda;
  ModeResult r;
  const float* w_scales = reinterpret_cast<const float*>(w.lt->as<const char>() + w.lt_scale_at);
  // The activations' scales as the quantisation kernel writes them (per tensor: one, given).
  Fp8QuantArgs q;
  q.x = a.x->p;
  q.rows = m;
  q.k = s.k;
  q.q = a.x8->p;
  q.scales = a.scales->as<float>();
  fill_scales<<<16, 256>>>(a.scales->as<float>(), 1, 500, 0.02f);
  launch_fp8_act_quant(mode, q, nullptr);
  EAGLESIM_BENCH_CHECK(cudaDeviceSynchronize());
  r.quant_us = eb::time_in_graph_us([&](cudaStream_t st) { launch_fp8_act_quant(mode, q, st); }, 20);

  const LtGemm heuristic(lt, nullptr, m, s.n, s.k, eaglesim::DType::fp8, kWorkspace, w_scales, a.scales->as<const float>(), mode);
  r.heuristic_us = time_lt(heuristic, w, a, ws);
  LtGemm tuned(lt, nullptr, m, s.n, s.k, eaglesim::DType::fp8, kWorkspace, w_scales, a.scales->as<const float>(), mode);
  tuned.tune(w.lt->p, a.x8->p, a.y->p, ws);
  r.tune_s = tuned.tuning().seconds;
  r.lt_us = time_lt(tuned, w, a, ws);
  r.choice = tuned.candidate(tuned.chosen()).name;
  return r;
}

// The stream-K kernel's counters start at zero (each launch leaves them so) and differ in size
// between plans: the workspace is cleared before each plan's first launch.
double time_weight_only(const eaglesim::cuda::GroupedGemmPlan& plan, const Weights& w, const Activations& a,
                        void* ws) {
  using namespace eaglesim::cuda;
  EAGLESIM_BENCH_CHECK(cudaMemset(ws, 0, plan.workspace_bytes));
  int next = 0;
  return eb::time_in_graph_us(
      [&](cudaStream_t st) {
        const int c = next++ % w.copies;
        GroupedGemmArgs args;
        args.x = a.x->p;
        args.rows = plan.shape.max_rows;
        args.weights = w.wo->as<const char>() + w.wo_stride * c;
        args.scales = w.wo->as<const char>() + w.wo_stride * c + w.wo_scale_at;
        args.y = a.y->p;
        launch_grouped_gemm(plan, args, ws, st);
      },
      w.copies * 4);
}

const char* kernel_name(eaglesim::LowBitGemmKernel k) {
  switch (k) {
    case eaglesim::LowBitGemmKernel::gemv: return "gemv";
    case eaglesim::LowBitGemmKernel::stream_k: return "stream-K";
    case eaglesim::LowBitGemmKernel::cublas: return "cublasLt";
  }
  return "?";
}

int mode_index(Fp8Scaling m) { return static_cast<int>(m); }

// µs with two decimals, or "-" where nothing was measured.
std::string us_text(double us) {
  if (!(us > 0)) return "-";
  char b[32];
  std::snprintf(b, sizeof(b), "%.2f", us);
  return b;
}

// ---------------------------------------------------------------- summaries

struct RatioCount {
  int compared = 0, within = 0;
  double worst = 0;
  std::string worst_shape;
  std::vector<double> ratios;
  void add(const std::string& shape, double ours, double ref) {
    if (!(ours > 0) || !(ref > 0)) return;
    const double r = ours / ref;
    ++compared;
    within += r <= kTarget;
    ratios.push_back(r);
    if (r > worst) {
      worst = r;
      worst_shape = shape;
    }
  }
  void print(const std::string& what) const {
    if (compared == 0) {
      std::printf("%s: no torch figures to compare with\n", what.c_str());
      return;
    }
    std::printf("%s: ratio <= %.1f on %d of %d shapes, median %.3f, worst %.3f (%s)\n", what.c_str(), kTarget, within,
                compared, eb::median_of(ratios), worst, worst_shape.c_str());
  }
};

void print_summaries(const std::vector<Row>& rows) {
  RatioCount same[kModeCount], vs_best[kModeCount], replay_vs_best;
  int rule_right = 0, rule_rows = 0;
  std::vector<double> pct[kModeCount], wo_pct;
  std::map<std::string, int> wo_wins_up_to;  // per shape: the most rows at which the weight-only kernel wins
  for (const Row& r : rows) {
    for (int i = 0; i < kModeCount; ++i) {
      const ModeResult& mr = r.mode[i];
      same[i].add(r.shape, mr.lt_us, mr.torch.us);
      vs_best[i].add(r.shape, mr.lt_us, r.torch_best.us);
      if (mr.lt_us > 0) pct[i].push_back(100.0 * r.floor_us / mr.lt_us);
    }
    if (r.wo_us > 0) wo_pct.push_back(100.0 * r.floor_us / r.wo_us);
    const double lt = r.mode[mode_index(kReplayMode)].lt_us;
    const double picked = r.rule == eaglesim::LowBitGemmKernel::cublas ? lt : r.wo_us;
    const double other = r.rule == eaglesim::LowBitGemmKernel::cublas ? r.wo_us : lt;
    replay_vs_best.add(r.shape, picked, r.torch_best.us);
    if (picked > 0 && other > 0) {
      ++rule_rows;
      rule_right += picked <= other * kRuleMargin;
      if (r.wo_us < lt) {
        const std::string key = r.shape.substr(0, r.shape.find(" m="));
        wo_wins_up_to[key] = std::max(wo_wins_up_to[key], r.m);
      }
    }
  }
  std::printf("\nsummaries (target: ours / the library's <= %.1f)\n", kTarget);
  for (Fp8Scaling m : kModes) {
    const int i = mode_index(m);
    same[i].print(std::string("cuBLASLt fp8 ") + to_string(m) + " vs torch._scaled_mm, same recipe");
    vs_best[i].print(std::string("cuBLASLt fp8 ") + to_string(m) + " vs torch's fastest recipe");
    if (!pct[i].empty())
      std::printf("cuBLASLt fp8 %s: median %.1f %% of the floor over %zu shapes\n", to_string(m),
                  eb::median_of(pct[i]), pct[i].size());
  }
  if (!wo_pct.empty())
    std::printf("weight-only kernels (W8A16): median %.1f %% of the floor over %zu shapes\n", eb::median_of(wo_pct),
                wo_pct.size());
  replay_vs_best.print(std::string("the replay's pick (the rule, ") + to_string(kReplayMode) +
                       " mode) vs torch's fastest recipe");
  std::printf("rule check (cost/low_bit_gemm_kernel.hpp: fp8 on the GEMV kernel where gemv_picked, else cuBLASLt): the "
              "kernel the rule picks is within %.0f %% of the faster of "
              "weight-only and cuBLASLt %s on %d of %d shapes\n",
              (kRuleMargin - 1) * 100, to_string(kReplayMode),
              rule_right, rule_rows);
  for (const auto& [shape, m] : wo_wins_up_to)
    std::printf("  weight-only faster than cuBLASLt %s up to m=%d: %s\n", to_string(kReplayMode), m, shape.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const eb::CommonArgs args = eb::parse_common_args(argc, argv, kTool, kUsage);
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
      std::fprintf(stderr, "%s: no CUDA device\n", kTool);
      return 3;
    }
    cudaDeviceProp prop{};
    EAGLESIM_BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major != 9 || prop.minor != 0) {
      std::fprintf(stderr, "%s: needs compute capability 9.0 (cuBLASLt's per-channel and 128-block fp8 modes), got %d.%d\n",
                   kTool, prop.major, prop.minor);
      return 3;
    }
    const std::map<std::string, TorchTime> torch = read_torch(args.torch);
    std::FILE* json = args.json.empty() ? nullptr : std::fopen(args.json.c_str(), "w");
    if (!args.json.empty() && !json) {
      std::fprintf(stderr, "%s: cannot write %s\n", kTool, args.json.c_str());
      return 2;
    }
    const double gbps = eb::measure_read_gbps();
    std::printf("device: %s, %d SMs; read bandwidth measured %.0f GB/s; torch rows: %zu\n", prop.name,
                prop.multiProcessorCount, gbps, torch.size());
    std::printf("floor: (e4m3 weights + block scales + e4m3 rows in + bf16 rows out) / read bandwidth; quant: the "
                "activation quantisation kernel of the mode, alone; rule: the kernel the replay picks\n");
    std::printf("%-44s %8s %7s %8s %8s %8s %8s %6s %6s %6s %8s %8s %8s %7s\n", "shape", "floor", "rule", "w-only",
                "lt_tens", "lt_chan", "lt_blk", "q_tok", "q_grp", "%flr", "pt_tens", "pt_row", "pt_blk", "blk/pt");
    cublasLtHandle_t lt = nullptr;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasLtCreate failed");
    Buffer ws(kWorkspace);
    Buffer wo_ws(64u << 20);
    const std::vector<int> row_counts = args.quick ? std::vector<int>{1, 16, 128} : std::vector<int>{1, 4, 16, 32, 64, 128, 256};
    const auto start = std::chrono::steady_clock::now();
    std::vector<Row> rows;
    double tune_s = 0;
    for (const Shape& s : kShapes) {
      if (!args.filter.empty() && shape_name(s, 0).find(args.filter) == std::string::npos) continue;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > args.budget_s) {
        std::printf("budget of %.0f s spent: the remaining shapes are left out\n", args.budget_s);
        break;
      }
      const int max_m = row_counts.back();
      const eaglesim::cuda::GroupedGemmPlan sizing =
          eaglesim::cuda::plan_weight_only_gemm(s.weight_only, 1, s.n, s.k, prop.multiProcessorCount);
      const Weights w = make_weights(s, sizing);
      const Activations a(static_cast<int>(eaglesim::cuda::fp8_gemm_rows(Fp8Scaling::block, max_m)), s.n, s.k);
      for (int m : row_counts) {
        Row r;
        r.shape = shape_name(s, m);
        r.m = m;
        const double scale_bytes = 4.0 * eaglesim::cuda::fp8_weight_scale_floats(Fp8Scaling::block, s.n, s.k);
        r.bytes = static_cast<double>(s.n) * s.k + scale_bytes + static_cast<double>(m) * s.k +
                  2.0 * static_cast<double>(m) * s.n;
        r.floor_us = r.bytes / (gbps * 1e3);
        eaglesim::Op op;
        op.kind = eaglesim::OpKind::gemm;
        op.m = m, op.n = s.n, op.k = s.k;
        op.dtype = eaglesim::DType::fp8;
        r.rule = eaglesim::low_bit_gemm_kernel(op);
        const eaglesim::cuda::GroupedGemmPlan wo =
            eaglesim::cuda::plan_weight_only_gemm(s.weight_only, m, s.n, s.k, prop.multiProcessorCount);
        eaglesim::cuda::prepare_grouped_gemm(wo);
        if (wo.workspace_bytes > (64u << 20)) throw std::runtime_error(r.shape + ": weight-only workspace over 64 MB");
        r.wo_us = time_weight_only(wo, w, a, wo_ws.p);
        r.wo_variant = wo.gemv ? "gemv" : wo.variant;
        for (Fp8Scaling mode : kModes) {
          try {
            r.mode[mode_index(mode)] = run_mode(lt, mode, s, m, w, a, ws.p);
          } catch (const std::exception& e) {
            // A mode cuBLASLt refuses for the shape is a result: said, and left out of the summaries.
            std::printf("  %s %s: %s\n", r.shape.c_str(), to_string(mode), e.what());
            (void)cudaGetLastError();
          }
          if (const auto t = torch.find(torch_key(mode, s, m)); t != torch.end()) r.mode[mode_index(mode)].torch = t->second;
          tune_s += r.mode[mode_index(mode)].tune_s;
          const TorchTime& t = r.mode[mode_index(mode)].torch;
          if (t.us > 0 && (r.torch_best.us == 0 || t.us < r.torch_best.us)) r.torch_best = t;
        }
        const ModeResult& tens = r.mode[mode_index(Fp8Scaling::tensor)];
        const ModeResult& chan = r.mode[mode_index(Fp8Scaling::channel)];
        const ModeResult& blk = r.mode[mode_index(Fp8Scaling::block)];
        std::printf("%-44s %8.2f %7s %8.2f %8.2f %8.2f %8.2f %6.2f %6.2f %5.1f%% %8s %8s %8s %7s\n", r.shape.c_str(),
                    r.floor_us, kernel_name(r.rule), r.wo_us, tens.lt_us, chan.lt_us, blk.lt_us, chan.quant_us,
                    blk.quant_us, blk.lt_us > 0 ? 100.0 * r.floor_us / blk.lt_us : 0.0, us_text(tens.torch.us).c_str(),
                    us_text(chan.torch.us).c_str(), us_text(blk.torch.us).c_str(),
                    blk.torch.us > 0 ? us_text(blk.lt_us / blk.torch.us).c_str() : "-");
        std::fflush(stdout);
        if (json) {
          eb::BenchRow b;
          b.shape = r.shape;
          b.bytes = r.bytes;
          b.floor_us = r.floor_us;
          b.kernel = "fp8 weight-only";
          b.us = r.wo_us;
          b.detail = r.wo_variant;
          eb::print_json_row(json, b);
          for (Fp8Scaling mode : kModes) {
            const ModeResult& mr = r.mode[mode_index(mode)];
            b.kernel = std::string("lt fp8 ") + to_string(mode);
            b.us = mr.lt_us;
            b.detail = mr.choice;
            b.reference = mr.torch.what;
            b.reference_us = mr.torch.us;
            eb::print_json_row(json, b);
            b.kernel = std::string("lt fp8 ") + to_string(mode) + " heuristic";
            b.us = mr.heuristic_us;
            b.detail = "lt#0";
            eb::print_json_row(json, b);
            b.kernel = std::string("fp8 quant ") + to_string(mode);
            b.us = mr.quant_us;
            b.bytes = 3.0 * m * s.k;  // bf16 in, e4m3 out
            b.floor_us = b.bytes / (gbps * 1e3);
            b.detail.clear();
            b.reference.clear();
            b.reference_us = 0;
            eb::print_json_row(json, b);
            b.bytes = r.bytes;
            b.floor_us = r.floor_us;
          }
          std::fprintf(json, "{\"kernel\": \"rule\", \"shape\": \"%s\", \"rule\": \"%s\", \"torch_best\": \"%s\", "
                             "\"torch_best_us\": %.3f}\n",
                       r.shape.c_str(), kernel_name(r.rule), r.torch_best.what.c_str(), r.torch_best.us);
          std::fflush(json);
        }
        rows.push_back(r);
      }
    }
    if (json) std::fclose(json);
    print_summaries(rows);
    std::printf("tuning: %.1f s over %zu shapes x %d modes\n", tune_s, rows.size(), kModeCount);
    cublasLtDestroy(lt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kTool, e.what());
    return 1;
  }
  return 0;
}
