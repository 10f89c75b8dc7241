// bench_elementwise: the replay's memory-bound kernels (kernels/row_norm.cuh,
// kernels/pointwise_bf16.cuh, launched through src/cuda/ops/replay_kernels.hpp as the replay launches
// them) against the HBM floor measured in this run, an empty kernel's time in the same kind of
// graph, and PyTorch on the same shapes (tools/torch_elementwise_bench.py --out FILE, read with
// --torch FILE).
//
// Ops (bf16 in and out, fp32 arithmetic) and the bytes each must move (its floor):
//   rmsnorm              out = rmsnorm(x) * w                          r*w*2 in + r*w*2 out + w*2
//   add_rmsnorm          residual += x; out = rmsnorm(residual) * w   (x, residual in; residual, out out) 4*r*w*2 + w*2
//                        the fused kernel (SGLang's / vLLM's fused_add_rmsnorm)
//   add_rmsnorm_unfused  the same as a residual add kernel then an RMSNorm kernel (same floor)
//   residual_add         residual += x                                 3*r*w*2
//   silu_mul             out = silu(gate_up[:, :w]) * gate_up[:, w:]   3*r*w*2
// Shapes: rows {1, 4, 16, 64, 256, 1024, 4096} x widths {4096, 7168, 8192} for the first four;
// SiLU * mul over the same rows at the intermediate widths of Llama-3.1-8B (14336; TP8 1792),
// Llama-3.1-70B (28672; TP8 3584) and Kimi-K2 (dense 18432, TP8 2304; experts 2048, TP8 256).
// The shape strings ("rmsnorm rows=64 width=4096") are the keys of the torch JSON;
// tools/torch_elementwise_bench.py makes the same list.
//
// Timing: kernel_bench.cuh's graph timer (median replay per launch). Every shape's buffers
// rotate over enough copies that one graph touches at least twice the L2 (up to 4096 copies), so
// ops are timed from HBM, as a step's weights and activations mostly are. Before timing, each
// shape's outputs are checked against a CPU reference on its first, middle and last rows.
// A launch in a graph costs about as much as an empty kernel (printed): ops of about 1 MB are
// bound by it, and "%net" in the summary is the floor over (us - empty kernel us).
//
// Run: bench_elementwise [--torch FILE] [--json FILE] [--filter TEXT] [--quick] [--budget-s S]
// (--quick: rows 1, 16, 256, 4096 only; --budget-s: no new shape starts after S seconds)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda/measure/calibrate_kernels.hpp"
#include "cuda/ops/replay_kernels.hpp"
#include "kernel_bench.cuh"

namespace {
namespace bench = eaglesim::bench;
namespace ec = eaglesim::cuda;
#define CHECK(call) EAGLESIM_BENCH_CHECK(call)

constexpr float kEps = 1e-5f;
constexpr int kMaxCopies = 4096;
constexpr double kBigBytes = 1e6;  // ops from this size on are held to 60 % of the floor

enum class Op { rmsnorm, add_rmsnorm, add_rmsnorm_unfused, residual_add, silu_mul };
const char* name_of(Op op) {
  switch (op) {
    case Op::rmsnorm: return "rmsnorm";
    case Op::add_rmsnorm: return "add_rmsnorm";
    case Op::add_rmsnorm_unfused: return "add_rmsnorm_unfused";
    case Op::residual_add: return "residual_add";
    case Op::silu_mul: return "silu_mul";
  }
  return "?";
}

struct Shape {
  Op op;
  int rows, width;
  std::string key;
};

std::vector<Shape> all_shapes(bool quick) {
  const std::vector<int> rows = quick ? std::vector<int>{1, 16, 256, 4096} : std::vector<int>{1, 4, 16, 64, 256, 1024, 4096};
  std::vector<Shape> out;
  auto add = [&](Op op, int r, int w) {
    out.push_back({op, r, w, std::string(name_of(op)) + " rows=" + std::to_string(r) + " width=" + std::to_string(w)});
  };
  for (Op op : {Op::rmsnorm, Op::add_rmsnorm, Op::add_rmsnorm_unfused, Op::residual_add})
    for (int w : {4096, 7168, 8192})
      for (int r : rows) add(op, r, w);
  for (int w : {14336, 1792, 28672, 3584, 18432, 2304, 2048, 256})
    for (int r : rows) add(Op::silu_mul, r, w);
  return out;
}

// Elements of each buffer one copy of the op uses: x (silu_mul: gate_up), residual, weight, out.
struct Sizes {
  std::size_t x = 0, residual = 0, weight = 0, out = 0;
  std::size_t total() const { return x + residual + weight + out; }
};
Sizes sizes_of(const Shape& s) {
  const std::size_t n = static_cast<std::size_t>(s.rows) * s.width;
  switch (s.op) {
    case Op::rmsnorm: return {n, 0, static_cast<std::size_t>(s.width), n};
    case Op::add_rmsnorm:
    case Op::add_rmsnorm_unfused: return {n, n, static_cast<std::size_t>(s.width), n};
    case Op::residual_add: return {n, n, 0, 0};
    case Op::silu_mul: return {2 * n, 0, 0, n};
  }
  return {};
}

// The fewest bytes the op must move.
double floor_bytes(const Shape& s) {
  const double n = static_cast<double>(s.rows) * s.width, w = s.width;
  switch (s.op) {
    case Op::rmsnorm: return 2 * n * 2 + w * 2;
    case Op::add_rmsnorm:
    case Op::add_rmsnorm_unfused: return 4 * n * 2 + w * 2;
    case Op::residual_add:
    case Op::silu_mul: return 3 * n * 2;
  }
  return 0;
}

float bf(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint16_t to_bf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// One copy's device pointers.
struct Copy {
  __nv_bfloat16 *x = nullptr, *residual = nullptr, *weight = nullptr, *out = nullptr;
};

void launch(const Shape& s, const Copy& c, cudaStream_t st) {
  switch (s.op) {
    case Op::rmsnorm: ec::launch_rmsnorm(c.x, c.weight, c.out, s.rows, s.width, kEps, st); break;
    case Op::add_rmsnorm: ec::launch_add_rmsnorm(c.x, c.residual, c.weight, c.out, s.rows, s.width, kEps, st); break;
    case Op::add_rmsnorm_unfused:
      ec::launch_residual_add(c.residual, c.x, static_cast<std::size_t>(s.rows) * s.width, st);
      ec::launch_rmsnorm(c.residual, c.weight, c.out, s.rows, s.width, kEps, st);
      break;
    case Op::residual_add: ec::launch_residual_add(c.residual, c.x, static_cast<std::size_t>(s.rows) * s.width, st); break;
    case Op::silu_mul: ec::launch_silu_mul(c.x, c.out, s.rows, s.width, st); break;
  }
}

std::vector<std::uint16_t> download(const __nv_bfloat16* p, std::size_t offset, std::size_t n) {
  std::vector<std::uint16_t> h(n);
  CHECK(cudaMemcpy(h.data(), p + offset, n * 2, cudaMemcpyDeviceToHost));
  return h;
}

// One launch on copy 0 against a CPU reference on rows {0, rows/2, rows-1}: the worst
// |got - ref| / max |ref| of a row (and NaN count). The residual of the add ops must equal
// x + residual rounded to bf16.
double check_shape(const Shape& s, const Copy& c, long long* nan) {
  const std::size_t w = static_cast<std::size_t>(s.width);
  std::vector<int> rows{0, s.rows / 2, s.rows - 1};
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  struct Before {
    std::vector<std::uint16_t> x, r;
  };
  std::vector<Before> before;
  const std::size_t xw = s.op == Op::silu_mul ? 2 * w : w;
  for (int r : rows) {
    Before b;
    b.x = download(c.x, static_cast<std::size_t>(r) * xw, xw);
    if (c.residual) b.r = download(c.residual, static_cast<std::size_t>(r) * w, w);
    before.push_back(std::move(b));
  }
  const std::vector<std::uint16_t> weight = c.weight ? download(c.weight, 0, w) : std::vector<std::uint16_t>{};
  if (c.out) CHECK(cudaMemset(c.out, 0xff, static_cast<std::size_t>(s.rows) * w * 2));
  launch(s, c, nullptr);
  CHECK(cudaDeviceSynchronize());
  double worst = 0;
  *nan = 0;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::size_t at = static_cast<std::size_t>(rows[k]) * w;
    const Before& b = before[k];
    std::vector<double> ref(w);
    std::vector<std::uint16_t> sum(w);
    if (s.op == Op::silu_mul) {
      for (std::size_t i = 0; i < w; ++i) {
        const double g = bf(b.x[i]), u = bf(b.x[w + i]);
        ref[i] = g / (1 + std::exp(-g)) * u;
      }
    } else {
      std::vector<double> in(w);
      for (std::size_t i = 0; i < w; ++i) {
        sum[i] = c.residual ? to_bf(bf(b.x[i]) + bf(b.r[i])) : b.x[i];
        in[i] = bf(sum[i]);
      }
      if (s.op == Op::residual_add) {
        ref = in;
      } else {
        double ss = 0;
        for (double v : in) ss += v * v;
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(w) + kEps);
        for (std::size_t i = 0; i < w; ++i) ref[i] = in[i] * inv * bf(weight[i]);
      }
    }
    const std::vector<std::uint16_t> got = download(s.op == Op::residual_add ? c.residual : c.out, at, w);
    double peak = 1e-30;
    for (double v : ref) peak = std::max(peak, std::fabs(v));
    for (std::size_t i = 0; i < w; ++i) {
      const double g = bf(got[i]);
      if (!std::isfinite(g)) {
        ++*nan;
        continue;
      }
      worst = std::max(worst, std::fabs(g - ref[i]) / peak);
    }
    if (c.residual && s.op != Op::residual_add && download(c.residual, at, w) != sum) worst = std::max(worst, 1.0);
  }
  return worst;
}

// Device-to-device copy rate (bytes read + written per second), for the header: what a kernel
// that reads and writes can reach at best.
double measure_copy_gbps(std::size_t bytes) {
  void *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMemset(a, 0x5a, bytes));
  const double us = bench::time_in_graph_us(
      [&](cudaStream_t s) { CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s)); }, 4, 9, 2);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return 2.0 * static_cast<double>(bytes) / (us * 1e-6) / 1e9;
}

struct Summary {
  int shapes = 0, big = 0, big_below_60 = 0, with_torch = 0, slower_than_torch = 0;
  std::vector<double> big_pcts, speedups;
  double worst_big_pct = 1e9, worst_big_net = 0, min_speedup = 1e9;
  std::string worst_big_shape, min_speedup_shape;
};

double median(std::vector<double> v) { return bench::median_of(std::move(v)); }

}  // namespace

int main(int argc, char** argv) {
  const bench::CommonArgs args = bench::parse_common_args(
      argc, argv, "bench_elementwise",
      "bench_elementwise [--torch FILE] [--json FILE] [--filter TEXT] [--quick] [--budget-s S]");
  const auto t_start = std::chrono::steady_clock::now();
  try {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const double l2 = static_cast<double>(prop.l2CacheSize);
    std::printf("device: %s, %d SMs, L2 %.0f MB\n", prop.name, prop.multiProcessorCount, l2 / 1e6);
    const double read_gbps = bench::measure_read_gbps(std::size_t(1) << 30);
    const double copy_gbps = measure_copy_gbps(std::size_t(1) << 30);
    const double empty_us = bench::time_in_graph_us([](cudaStream_t s) { ec::launch_empty_kernel(s); }, 512, 15, 3);
    std::printf("floor: streaming read %.0f GB/s (1 GiB, this run; the %%floor column); device copy %.0f GB/s "
                "(read + write)\n",
                read_gbps, copy_gbps);
    std::printf("empty kernel: %.2f us per launch, back to back in a CUDA graph (this run)\n", empty_us);

    std::vector<Shape> shapes = all_shapes(args.quick);
    if (!args.filter.empty())
      shapes.erase(std::remove_if(shapes.begin(), shapes.end(),
                                  [&](const Shape& s) { return s.key.find(args.filter) == std::string::npos; }),
                   shapes.end());
    const auto torch = args.torch.empty() ? std::map<std::string, bench::ReferenceTime>{}
                                          : bench::load_fastest_per_shape(args.torch, "what", "bench_elementwise");
    std::FILE* jf = args.json.empty() ? nullptr : std::fopen(args.json.c_str(), "w");
    if (!args.json.empty() && jf == nullptr) throw std::runtime_error("cannot write " + args.json);

    std::printf("%-20s %5s %6s %10s %9s %8s %7s %8s %9s %8s\n", "op", "rows", "width", "MB", "us", "GB/s", "%floor",
                "empty_us", "torch_us", "speedup");
    std::map<std::string, Summary> summary;
    double worst_check = 0;
    long long check_nan = 0;
    int over_budget = 0;
    for (const Shape& s : shapes) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count() > args.budget_s) {
        ++over_budget;
        continue;
      }
      const Sizes sz = sizes_of(s);
      const double copy_bytes = static_cast<double>(sz.total()) * 2;
      const int copies = static_cast<int>(std::clamp(std::ceil(2.0 * l2 / copy_bytes), 1.0, double(kMaxCopies)));
      // One allocation per buffer kind, `copies` slots each, every slot 256-byte aligned.
      auto slot = [](std::size_t elems) { return (elems * 2 + 255) / 256 * 256; };
      std::vector<void*> allocations;
      auto alloc = [&](std::size_t elems, std::uint32_t seed, float amp, float offset) -> char* {
        if (elems == 0) return nullptr;
        void* p = nullptr;
        const std::size_t bytes = slot(elems) * copies;
        CHECK(cudaMalloc(&p, bytes));
        bench::fill_random_bf16<<<prop.multiProcessorCount * 8, 256>>>(static_cast<__nv_bfloat16*>(p), bytes / 2, seed,
                                                                       amp, offset);
        CHECK(cudaGetLastError());
        allocations.push_back(p);
        return static_cast<char*>(p);
      };
      char* x = alloc(sz.x, 0x1234567u, 2.f, 0.f);         // [-2, 2)
      char* r = alloc(sz.residual, 0x2345678u, 3.f, 0.f);  // [-3, 3)
      char* w = alloc(sz.weight, 0x3456789u, 0.5f, 1.f);   // [0.5, 1.5)
      char* o = alloc(sz.out, 0x4567890u, 1.f, 0.f);
      CHECK(cudaDeviceSynchronize());
      auto copy_at = [&](int k) {
        Copy c;
        const auto at = [&](char* base, std::size_t elems) {
          return base ? reinterpret_cast<__nv_bfloat16*>(base + slot(elems) * static_cast<std::size_t>(k)) : nullptr;
        };
        c.x = at(x, sz.x);
        c.residual = at(r, sz.residual);
        c.weight = at(w, sz.weight);
        c.out = at(o, sz.out);
        return c;
      };

      long long nan = 0;
      const double err = check_shape(s, copy_at(0), &nan);
      worst_check = std::max(worst_check, err);
      check_nan += nan;
      if (nan || err > 2e-2) std::printf("CHECK FAILED %s: worst |got - ref| / max |ref| = %.3e, %lld NaN\n", s.key.c_str(), err, nan);

      const double bytes = floor_bytes(s);
      const double floor_us = bytes / (read_gbps * 1e3);
      const double est = std::max(floor_us, empty_us);
      const int per_graph = std::clamp(std::max(copies, static_cast<int>(std::ceil(2000.0 / est))), 1, kMaxCopies);
      int counter = 0;
      const double us = bench::time_in_graph_us([&](cudaStream_t st) { launch(s, copy_at(counter++ % copies), st); },
                                                per_graph, 15, 3);
      for (void* p : allocations) CHECK(cudaFree(p));

      const double pct = 100.0 * floor_us / us;
      const double net = 100.0 * floor_us / std::max(us - empty_us, 1e-3);
      const double gbps = bytes / (us * 1e-6) / 1e9;
      const auto t = torch.find(s.key);
      const double torch_us = t != torch.end() ? t->second.us : 0;
      std::printf("%-20s %5d %6d %10.3f %9.2f %8.0f %6.1f%% %8.2f ", name_of(s.op), s.rows, s.width, bytes / 1e6, us,
                  gbps, pct, empty_us);
      if (torch_us > 0) std::printf("%9.2f %7.2fx\n", torch_us, torch_us / us);
      else std::printf("%9s %8s\n", "-", "-");
      if (jf) {
        std::fprintf(jf,
                     "{\"op\": \"%s\", \"rows\": %d, \"width\": %d, \"shape\": \"%s\", \"bytes\": %.0f, \"us\": %.3f, "
                     "\"gbps\": %.1f, \"floor_us\": %.3f, \"pct_floor\": %.2f, \"pct_floor_net_of_launch\": %.2f, "
                     "\"empty_kernel_us\": %.3f, \"read_gbps\": %.1f, \"copies\": %d, \"reference\": \"%s\", "
                     "\"reference_us\": %.3f}\n",
                     name_of(s.op), s.rows, s.width, s.key.c_str(), bytes, us, gbps, floor_us, pct, net, empty_us,
                     read_gbps, copies, t != torch.end() ? ("torch " + t->second.label).c_str() : "", torch_us);
        std::fflush(jf);  // what a timeout cuts short stays on disk
      }

      Summary& sm = summary[name_of(s.op)];
      ++sm.shapes;
      if (bytes >= kBigBytes) {
        ++sm.big;
        sm.big_pcts.push_back(pct);
        if (pct < 60) ++sm.big_below_60;
        if (pct < sm.worst_big_pct) {
          sm.worst_big_pct = pct;
          sm.worst_big_net = net;
          sm.worst_big_shape = s.key;
        }
      }
      if (torch_us > 0) {
        ++sm.with_torch;
        const double sp = torch_us / us;
        sm.speedups.push_back(sp);
        if (sp < 1) ++sm.slower_than_torch;
        if (sp < sm.min_speedup) {
          sm.min_speedup = sp;
          sm.min_speedup_shape = s.key;
        }
      }
      std::fflush(stdout);
    }
    if (jf) std::fclose(jf);

    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    std::printf("\n== summary (%zu shapes, %.0f s; read floor %.0f GB/s, empty kernel %.2f us)\n",
                shapes.size() - over_budget, secs, read_gbps, empty_us);
    if (over_budget) std::printf("NOT RUN: %d shapes left when the %.0f s budget ran out\n", over_budget, args.budget_s);
    std::printf("check vs CPU reference: worst |got - ref| / max |ref| = %.2e, NaN %lld\n", worst_check, check_nan);
    std::printf("%-20s %6s | %-52s | %-28s\n", "op", "shapes", ">= 1 MB: n, <60%, median %floor, worst %floor (%net)",
                "torch: n, slower, median x, min x");
    for (auto& [op, sm] : summary) {
      char big[96], tr[64];
      if (sm.big)
        std::snprintf(big, sizeof big, "%2d, %2d, %5.1f%%, %5.1f%% (%5.1f%%) %s", sm.big, sm.big_below_60,
                      median(sm.big_pcts), sm.worst_big_pct, sm.worst_big_net,
                      sm.worst_big_pct < 60 ? sm.worst_big_shape.c_str() : "");
      else
        std::snprintf(big, sizeof big, "-");
      if (sm.with_torch)
        std::snprintf(tr, sizeof tr, "%2d, %2d, %.2fx, %.2fx", sm.with_torch, sm.slower_than_torch, median(sm.speedups),
                      sm.min_speedup);
      else
        std::snprintf(tr, sizeof tr, "-");
      std::printf("%-20s %6d | %-52s | %-28s\n", op.c_str(), sm.shapes, big, tr);
    }
    std::printf("%%net: the floor over (us - empty kernel us), what the kernel reaches once its launch is paid\n");
    return (check_nan || worst_check > 2e-2) ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_elementwise: %s\n", e.what());
    return 1;
  }
}
