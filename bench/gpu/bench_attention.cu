// bench_attention: verify attention (kernels/verify_attention.cuh) on the shapes of the issue's
// table, against the memory floor measured in this run, the plain kernel
// (kernels/verify_attention_reference.cuh) and PyTorch's best SDPA backend
// (tools/torch_attention_bench.py --out FILE, read with --torch FILE).
//
// Shapes: Llama-3.1-8B TP1 (32/8 heads, D 128) and Llama-3.1-70B TP1 (64/8) over B 1/8/32/64 x
// q 1/4/16/32 x kv 512/2048/8192/32768/ragged (512..32768 spread evenly over the batch);
// Llama-3.1-70B TP8 (8/1) over B 1/8/32/64 x q 1/4 x kv 2048/8192; Kimi-K2 TP8 (8 heads) and
// DeepSeek-V3 TP8 (16 heads), absorbed MLA 576/512, over B 1/8/32 x q 1/4 x kv
// 2048/4096/8192/32768. q > 1 uses a tree mask per request (a binary tree), q = 1 is plain decode.
// The shape strings are the keys of the torch JSON; tools/torch_attention_bench.py makes the
// same list.
//
// Timing: kernel_bench.cuh's graph timer (median replay). K/V rotate over enough copies that one
// graph touches >= 1 GiB (L2 is 60 MB), so small shapes are timed from HBM. Before timing, each
// shape's output is compared with the plain kernel's on the same inputs.
//
// Build (the CUDA part of the repo is not needed): nvcc -std=c++17 -O3 -arch=sm_90 -Isrc -Ikernels \
//   bench/gpu/bench_attention.cu src/cuda/ops/verify_attention_launch.cpp -o bench_attention
// Run: bench_attention [--torch FILE] [--json FILE] [--filter TEXT] [--no-plain] [--splits] [--quick] [--budget-s S]
// (--budget-s: no new shape starts after S seconds; the summary says how many were left;
// --splits: every shape also with the planner's split length x 1/4, 1/2, 2 and 4, to check the
// planner's choice; without it a subset gets x 1/2 and x 2)
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

#include "cuda/ops/verify_attention_launch.hpp"
#include "kernel_bench.cuh"
#include "verify_attention.cuh"
#include "verify_attention_reference.cuh"

namespace {
using namespace eaglesim::cuda;
namespace bench = eaglesim::bench;
namespace kv = eaglesim::kernels::verify;
#define CHECK(call) EAGLESIM_BENCH_CHECK(call)

struct Model {
  const char* name;
  bool mla;
  int heads, kv_heads;
};
// "70b-tp8" is Llama-3.1-70B's per-rank shape at TP8 (8 query heads, one KV head): the replay's
// verify step at 32 requests runs it.
const Model kModels[] = {{"8b", false, 32, 8},  {"70b", false, 64, 8},  {"70b-tp8", false, 8, 1},
                         {"kimi", true, 8, 1},  {"dsv3", true, 16, 1}};

struct Shape {
  const Model* model;
  int batch, q;
  int kv;  // 0: ragged
  std::string key;
  VerifyAttentionShape shape;
  std::vector<std::int32_t> kv_len;
};

// The ragged rows: request r of B gets 512 + 32256 * (2r + 1) / (2B) tokens (integer division).
std::vector<std::int32_t> lengths(int batch, int kv) {
  std::vector<std::int32_t> v(batch);
  for (int r = 0; r < batch; ++r)
    v[r] = kv ? kv : 512 + static_cast<int>((32256LL * (2 * r + 1)) / (2 * batch));
  return v;
}

std::vector<Shape> all_shapes() {
  std::vector<Shape> out;
  for (const Model& m : kModels) {
    const bool tp8 = !m.mla && m.kv_heads == 1;
    const std::vector<int> batches = m.mla ? std::vector<int>{1, 8, 32} : std::vector<int>{1, 8, 32, 64};
    const std::vector<int> qs = m.mla || tp8 ? std::vector<int>{1, 4} : std::vector<int>{1, 4, 16, 32};
    const std::vector<int> kvs = m.mla ? std::vector<int>{2048, 4096, 8192, 32768}
                                 : tp8  ? std::vector<int>{2048, 8192}
                                        : std::vector<int>{512, 2048, 8192, 32768, 0};
    for (int b : batches)
      for (int q : qs)
        for (int kvl : kvs) {
          Shape s;
          s.model = &m;
          s.batch = b;
          s.q = q;
          s.kv = kvl;
          s.key = std::string(m.name) + " B=" + std::to_string(b) + " q=" + std::to_string(q) +
                  " kv=" + (kvl ? std::to_string(kvl) : std::string("ragged")) + (q > 1 ? " tree" : " decode");
          s.shape.kind = m.mla ? VerifyAttentionKind::mla : VerifyAttentionKind::gqa;
          s.shape.batch = b;
          s.shape.q_tokens = q;
          s.shape.heads = m.heads;
          s.shape.kv_heads = m.kv_heads;
          s.shape.head_dim_qk = m.mla ? 576 : 128;
          s.shape.head_dim_v = m.mla ? 512 : 128;
          s.kv_len = lengths(b, kvl);
          out.push_back(std::move(s));
        }
  }
  return out;
}

// The draft tree of every benchmark row: a binary tree (parent of i is (i - 1) / 2).
std::vector<std::uint32_t> bench_tree(int q) {
  std::vector<int> parent(q);
  for (int i = 0; i < q; ++i) parent[i] = i == 0 ? -1 : (i - 1) / 2;
  return tree_mask_from_parents(parent);
}

double rel_error(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b, long long* nan) {
  double num = 0, den = 0;
  *nan = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    float x, y;
    const std::uint32_t ux = static_cast<std::uint32_t>(a[i]) << 16, uy = static_cast<std::uint32_t>(b[i]) << 16;
    std::memcpy(&x, &ux, 4);
    std::memcpy(&y, &uy, 4);
    if (std::isnan(x) || std::isnan(y)) {
      ++*nan;
      continue;
    }
    num += (double(x) - y) * (double(x) - y);
    den += double(y) * y;
  }
  return den > 0 ? std::sqrt(num / den) : 0;
}

struct Summary {
  std::string cls;
  int shapes = 0, big = 0, big_below_60 = 0, small_over_4us = 0, slower_than_2x_torch = 0, with_torch = 0;
  double worst_big_pct = 1e9, worst_small_gap = 0, min_speedup = 1e9;
  std::string worst_big_shape, worst_small_shape, min_speedup_shape;
  std::vector<double> big_pcts;
};
}  // namespace

int main(int argc, char** argv) {
  bool plain = true, split_sweep = false;
  const bench::CommonArgs args = bench::parse_common_args(
      argc, argv, "bench_attention",
      "bench_attention [--torch FILE] [--json FILE] [--filter TEXT] [--no-plain] [--splits] [--quick] [--budget-s S]",
      [&](const std::string& a) {
        if (a == "--no-plain") plain = false;
        else if (a == "--splits") split_sweep = true;
        else return false;
        return true;
      });
  const std::string &torch_path = args.torch, &json_path = args.json, &filter = args.filter;
  const bool quick = args.quick;
  const double budget_s = args.budget_s;
  const auto t_start = std::chrono::steady_clock::now();
  try {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s, %d SMs, L2 %.0f MB, %.0f MB shared/SM\n", prop.name, prop.multiProcessorCount,
                prop.l2CacheSize / 1e6, prop.sharedMemPerMultiprocessor / 1e6);
    const double read_gbps = bench::measure_read_gbps(std::size_t(1) << 30);  // 16x the L2
    std::printf("floor: streaming read %.0f GB/s (1 GiB, this run)\n", read_gbps);

    std::vector<Shape> shapes = all_shapes();
    if (!filter.empty())
      shapes.erase(std::remove_if(shapes.begin(), shapes.end(), [&](const Shape& s) { return s.key.find(filter) == std::string::npos; }),
                   shapes.end());
    if (quick)
      shapes.erase(std::remove_if(shapes.begin(), shapes.end(), [](const Shape& s) { return s.batch == 64 || s.kv == 512; }),
                   shapes.end());
    const auto torch = torch_path.empty() ? std::map<std::string, bench::ReferenceTime>{}
                                          : bench::load_fastest_per_shape(torch_path, "backend", "bench_attention");

    // One pool for every shape's K/V copies, the largest shape's K/V once or 1 GiB of copies.
    std::size_t pool_bytes = std::size_t(1) << 30;
    std::size_t max_rows = 0;
    for (const auto& s : shapes) {
      const double kvb = verify_attention_min_bytes(s.shape, s.kv_len);
      pool_bytes = std::max(pool_bytes, static_cast<std::size_t>(kvb) + (std::size_t(64) << 20));
      max_rows = std::max(max_rows, static_cast<std::size_t>(s.batch) * s.q * s.shape.heads * 576);
    }
    __nv_bfloat16* pool = nullptr;
    __nv_bfloat16 *q = nullptr, *out = nullptr, *out_plain = nullptr;
    CHECK(cudaMalloc(&pool, pool_bytes));
    CHECK(cudaMalloc(&q, max_rows * 2));
    CHECK(cudaMalloc(&out, max_rows * 2));
    CHECK(cudaMalloc(&out_plain, max_rows * 2));
    bench::fill_random_bf16<<<prop.multiProcessorCount * 8, 256>>>(pool, pool_bytes / 2, 0x1234567u, 1.f);
    bench::fill_random_bf16<<<prop.multiProcessorCount * 8, 256>>>(q, max_rows, 0x7654321u, 2.f);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::FILE* jf = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");
    if (!json_path.empty() && jf == nullptr) throw std::runtime_error("cannot write " + json_path);
    bench::print_header();
    std::map<std::string, Summary> summary;
    double worst_check = 0;
    long long check_nan = 0;
    int checked = 0, plain_skipped = 0, over_budget = 0;

    for (const Shape& sh : shapes) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count() > budget_s) {
        ++over_budget;
        continue;
      }
      const auto& s = sh.shape;
      const bool mla = s.kind == VerifyAttentionKind::mla;
      const int B = s.batch;
      long long total = 0;
      std::vector<std::int32_t> indptr(B + 1, 0);
      for (int r = 0; r < B; ++r) indptr[r + 1] = indptr[r] + sh.kv_len[r];
      total = indptr[B];
      const std::size_t k_elems = static_cast<std::size_t>(total) * (mla ? 576 : s.kv_heads * 128);
      const std::size_t set_elems = mla ? k_elems : 2 * k_elems;  // GQA: K then V
      const std::size_t set_bytes = (set_elems * 2 + 255) / 256 * 256;
      const int sets = static_cast<int>(std::clamp<std::size_t>(((std::size_t(1) << 30) + set_bytes - 1) / set_bytes, 1,
                                                                std::min<std::size_t>(256, pool_bytes / set_bytes)));

      int32_t *d_indptr = nullptr, *d_len = nullptr;
      std::uint32_t* d_mask = nullptr;
      CHECK(cudaMalloc(&d_indptr, indptr.size() * 4));
      CHECK(cudaMalloc(&d_len, sh.kv_len.size() * 4));
      CHECK(cudaMemcpy(d_indptr, indptr.data(), indptr.size() * 4, cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(d_len, sh.kv_len.data(), sh.kv_len.size() * 4, cudaMemcpyHostToDevice));
      if (s.q_tokens > 1) {
        const auto one = bench_tree(s.q_tokens);
        std::vector<std::uint32_t> m;
        for (int r = 0; r < B; ++r) m.insert(m.end(), one.begin(), one.end());
        CHECK(cudaMalloc(&d_mask, m.size() * 4));
        CHECK(cudaMemcpy(d_mask, m.data(), m.size() * 4, cudaMemcpyHostToDevice));
      }
      const VerifyAttentionPlan plan = plan_verify_attention(s, sh.kv_len);
      void* ws = nullptr;
      CHECK(cudaMalloc(&ws, std::max<std::size_t>(plan.workspace_bytes, 256)));
      CHECK(kv::upload_verify_attention_plan(plan, ws, nullptr));
      CHECK(cudaDeviceSynchronize());

      auto params_for = [&](int set, __nv_bfloat16* o) {
        VerifyAttentionParams p;
        const __nv_bfloat16* base = pool + static_cast<std::size_t>(set) * (set_bytes / 2);
        p.q = q;
        p.k = base;
        p.v = mla ? base : base + k_elems;
        p.out = o;
        p.kv_indptr = d_indptr;
        p.kv_len = d_len;
        p.mask_kind = s.q_tokens > 1 ? AttentionMaskKind::tree : AttentionMaskKind::chain;
        p.mask = d_mask;
        p.mask_per_request = true;
        return p;
      };

      // The check: the optimised op against the plain kernel on copy 0, both outputs poisoned first.
      const std::size_t out_elems = static_cast<std::size_t>(B) * s.q_tokens * s.heads * s.head_dim_v;
      const double plain_traffic = verify_attention_min_bytes(s, sh.kv_len) * (s.heads / s.kv_heads) * s.q_tokens;
      const bool run_plain = plain && plain_traffic <= 4e9;  // its blocks each re-read a KV head
      if (run_plain) {
        CHECK(cudaMemset(out, 0xff, out_elems * 2));
        CHECK(cudaMemset(out_plain, 0xff, out_elems * 2));
        CHECK(kv::launch_verify_attention(params_for(0, out), plan, ws, nullptr));
        CHECK(kv::launch_verify_attention_reference(params_for(0, out_plain), s, nullptr));
        CHECK(cudaDeviceSynchronize());
        std::vector<std::uint16_t> a(out_elems), b(out_elems);
        CHECK(cudaMemcpy(a.data(), out, out_elems * 2, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(b.data(), out_plain, out_elems * 2, cudaMemcpyDeviceToHost));
        long long nan = 0;
        const double e = rel_error(a, b, &nan);
        ++checked;
        check_nan += nan;
        worst_check = std::max(worst_check, e);
        if (nan || e > 1e-2) std::printf("CHECK FAILED %s: ||opt - plain|| / ||plain|| = %.3e, %lld NaN\n", sh.key.c_str(), e, nan);
      }

      const double bytes = verify_attention_min_bytes(s, sh.kv_len);
      const double floor_us = bytes / (read_gbps * 1e3);
      const double est = std::max(plan.estimated_us, 1.0);
      int counter = 0;
      const int per_graph = std::clamp(std::max(sets, static_cast<int>(std::ceil(1500.0 / est))), 1, 256);
      const double us = bench::time_in_graph_us(
          [&](cudaStream_t st) { CHECK(kv::launch_verify_attention(params_for(counter++ % sets, out), plan, ws, st)); },
          per_graph, 15, 3);

      bench::BenchRow row;
      row.kernel = mla ? "verify mla" : "verify gqa";
      row.shape = sh.key;
      row.bytes = bytes;
      row.us = us;
      row.floor_us = floor_us;
      const auto t = torch.find(sh.key);
      if (t != torch.end()) {
        row.reference_us = t->second.us;
        row.reference = "torch sdpa " + t->second.label;
      }
      bench::print_row(row);
      if (jf) {
        bench::print_json_row(jf, row);
        std::fflush(jf);  // what a timeout cuts short stays on disk
      }
      std::printf("    plan %s (%d K/V copies; the planner's model %.1f us)\n", describe(plan).c_str(), sets, plan.estimated_us);

      // Calibration rows on a subset: the attention kernel launched without early start and the
      // combine without PDL (what each overlap buys; the main row has both, as the replay does),
      // and the split length halved and doubled (whether the planner's choice is the best nearby).
      const double kv_only = bytes - 2.0 * B * s.q_tokens * s.heads * (s.head_dim_qk + s.head_dim_v);
      // The same op and plan under other launch options, as an indented row.
      auto launch_variant_row = [&](const char* label, const VerifyAttentionLaunchOptions& options) {
        int c = 0;
        bench::BenchRow vr = row;
        vr.kernel = label;
        vr.us = bench::time_in_graph_us(
            [&](cudaStream_t st) { CHECK(kv::launch_verify_attention(params_for(c++ % sets, out), plan, ws, st, options)); },
            per_graph, 15, 3);
        bench::print_row(vr);
      };
      if (kv_only < 64e6) {
        VerifyAttentionLaunchOptions late;
        late.early_start = false;
        launch_variant_row("  no early start", late);
      }
      if (!plan.combine.empty() && kv_only < 64e6) {
        VerifyAttentionLaunchOptions no_overlap;
        no_overlap.overlap_combine = false;
        launch_variant_row("  combine no-pdl", no_overlap);
      }
      const bool subset = B <= 8 && s.q_tokens <= 4 && (sh.kv == 2048 || sh.kv == 8192 || sh.kv == 0);
      if (subset || split_sweep) {
        for (const double f : split_sweep ? std::vector<double>{0.25, 0.5, 2.0, 4.0} : std::vector<double>{0.5, 2.0}) {
          if (f > 1 && plan.chunk_tokens >= *std::max_element(sh.kv_len.begin(), sh.kv_len.end())) continue;
          VerifyAttentionPlanOptions opt;
          opt.chunk_tokens = std::max(verify_attention_config::kSplitQuantum, static_cast<int>(plan.chunk_tokens * f));
          const VerifyAttentionPlan alt = plan_verify_attention(s, sh.kv_len, {}, opt);
          void* ws2 = nullptr;
          CHECK(cudaMalloc(&ws2, std::max<std::size_t>(alt.workspace_bytes, 256)));
          CHECK(kv::upload_verify_attention_plan(alt, ws2, nullptr));
          CHECK(cudaDeviceSynchronize());
          int c4 = 0;
          bench::BenchRow ar = row;
          char split_label[32];
          std::snprintf(split_label, sizeof split_label, "  split x%g", f);  // x0.25, x0.5, x2, x4
          ar.kernel = split_label;
          ar.us = bench::time_in_graph_us(
              [&](cudaStream_t st) { CHECK(kv::launch_verify_attention(params_for(c4++ % sets, out), alt, ws2, st)); },
              per_graph, 15, 3);
          bench::print_row(ar);
          std::printf("    plan %s (model %.1f us)\n", describe(alt).c_str(), alt.estimated_us);
          CHECK(cudaFree(ws2));
        }
      }

      if (run_plain) {
        int c2 = 0;
        const double pus = bench::time_in_graph_us(
            [&](cudaStream_t st) { CHECK(kv::launch_verify_attention_reference(params_for(c2++ % sets, out_plain), s, st)); },
            std::min(sets, 8), 5, 1);
        bench::BenchRow pr = row;
        pr.kernel = mla ? "plain mla" : "plain gqa";
        pr.us = pus;
        bench::print_row(pr);
        if (jf) {
          bench::print_json_row(jf, pr);
          std::fflush(jf);
        }
      } else {
        ++plain_skipped;
      }

      Summary& sm = summary[std::string(sh.model->name) + (s.q_tokens > 1 ? " q" + std::to_string(s.q_tokens) : " q1")];
      sm.cls = std::string(sh.model->name) + " q=" + std::to_string(s.q_tokens);
      ++sm.shapes;
      const double kv_bytes = bytes - 2.0 * B * s.q_tokens * s.heads * (s.head_dim_qk + s.head_dim_v);
      if (kv_bytes >= 16e6) {
        const double pct = 100.0 * floor_us / us;
        ++sm.big;
        sm.big_pcts.push_back(pct);
        if (pct < 60) ++sm.big_below_60;
        if (pct < sm.worst_big_pct) {
          sm.worst_big_pct = pct;
          sm.worst_big_shape = sh.key;
        }
      } else {
        const double gap = us - floor_us;
        if (gap > 4) ++sm.small_over_4us;
        if (gap > sm.worst_small_gap) {
          sm.worst_small_gap = gap;
          sm.worst_small_shape = sh.key;
        }
      }
      if (row.reference_us > 0) {
        ++sm.with_torch;
        const double sp = row.reference_us / us;
        if (sp < 2) ++sm.slower_than_2x_torch;
        if (sp < sm.min_speedup) {
          sm.min_speedup = sp;
          sm.min_speedup_shape = sh.key;
        }
      }
      std::fflush(stdout);
      CHECK(cudaFree(ws));
      CHECK(cudaFree(d_indptr));
      CHECK(cudaFree(d_len));
      if (d_mask) CHECK(cudaFree(d_mask));
    }
    if (jf) std::fclose(jf);

    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    std::printf("\n== summary (%zu shapes, %.0f s; read floor %.0f GB/s)\n", shapes.size() - over_budget, secs, read_gbps);
    if (over_budget) std::printf("NOT RUN: %d shapes left when the %.0f s budget ran out\n", over_budget, budget_s);
    std::printf("check vs plain kernel: %d shapes, worst ||opt - plain|| / ||plain|| = %.2e, NaN %lld%s\n", checked,
                worst_check, check_nan, plain_skipped ? (", plain kernel skipped on " + std::to_string(plain_skipped) +
                                                         " shapes (> 4 GB of re-reads)").c_str() : "");
    std::printf("%-10s %6s | %-34s | %-30s | %-22s\n", "class", "shapes", ">=16MB KV: n, <60%, median, worst %floor",
                "<16MB: n over floor+4us, worst", "torch: n, <2x, min x");
    for (auto& [k, sm] : summary) {
      double med = 0;
      if (!sm.big_pcts.empty()) {
        std::sort(sm.big_pcts.begin(), sm.big_pcts.end());
        med = sm.big_pcts[sm.big_pcts.size() / 2];
      }
      char big[64], small[64], tr[64];
      if (sm.big)
        std::snprintf(big, sizeof big, "%2d, %2d, %5.1f%%, %5.1f%%", sm.big, sm.big_below_60, med, sm.worst_big_pct);
      else
        std::snprintf(big, sizeof big, "-");
      std::snprintf(small, sizeof small, "%2d over, +%.1f us", sm.small_over_4us, sm.worst_small_gap);
      if (sm.with_torch)
        std::snprintf(tr, sizeof tr, "%2d, %2d, %.2fx", sm.with_torch, sm.slower_than_2x_torch, sm.min_speedup);
      else
        std::snprintf(tr, sizeof tr, "-");
      std::printf("%-10s %6d | %-34s | %-30s | %-22s\n", sm.cls.c_str(), sm.shapes, big, small, tr);
    }
    cudaFree(pool);
    cudaFree(q);
    cudaFree(out);
    cudaFree(out_plain);
    return (check_nan || worst_check > 1e-2) ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_attention: %s\n", e.what());
    return 1;
  }
}
