// GPU tests of the CUDA replay backend (label gpu). Every test skips, with a message, on a
// machine without a CUDA GPU. Kernels are checked against plain CPU references in double
// precision on fresh random inputs, with poisoned outputs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "cuda/comm/allreduce_self_check.hpp"
#include "cuda/replay/cuda_backend.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "cuda/ops/gemm_fingerprint.hpp"
#include "cuda/comm/ideal_comm_group.hpp"
#include "cuda/ops/l2_read_flush.hpp"
#include "cuda/ops/lt_gemm.hpp"
#include "cuda/replay/rank_program.hpp"
#include "cuda/ops/replay_kernels.hpp"
#include "cuda/replay/step_replay.hpp"
#include "cuda/ops/weight_arena.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;
using namespace eaglesim::cuda;

namespace {

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

#define REQUIRE_GPUS(n)                                                                         \
  do {                                                                                          \
    if (gpu_count() < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA GPU(s), found " << gpu_count(); \
  } while (0)

std::vector<float> download_bf16(const DeviceBuffer& b, std::size_t count) {
  std::vector<__nv_bfloat16> h(count);
  EXPECT_EQ(cudaMemcpy(h.data(), b.get(), count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<float> f(count);
  for (std::size_t i = 0; i < count; ++i) f[i] = __bfloat162float(h[i]);
  return f;
}

DeviceBuffer random_bf16(std::size_t count, std::uint64_t seed, float scale = 1.f) {
  DeviceBuffer b(count * 2);
  fill_random(b.get(), count, DType::bf16, seed, scale, nullptr);
  return b;
}

DeviceBuffer poisoned(std::size_t bytes) {
  DeviceBuffer b(bytes);
  EXPECT_EQ(cudaMemset(b.get(), 0xFF, bytes), cudaSuccess);  // 0xFFFF is a bf16 NaN
  return b;
}

double rel_l2(const std::vector<float>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Plain decode attention in double: causal over the newest q_tokens positions.
std::vector<double> attention_reference(const AttentionShape& s, const std::vector<float>& q,
                                        const std::vector<float>& k, const std::vector<float>& v, int pitch) {
  const int group = s.heads / s.kv_heads;
  std::vector<double> out(static_cast<std::size_t>(s.q_tokens) * s.heads * s.dv, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.dk));
  for (int t = 0; t < s.q_tokens; ++t)
    for (int h = 0; h < s.heads; ++h) {
      const int kvh = h / group;
      const int last = s.kv_len - s.q_tokens + t;
      std::vector<double> sc(last + 1);
      double mx = -1e300;
      for (int p = 0; p <= last; ++p) {
        double d = 0;
        for (int c = 0; c < s.dk; ++c)
          d += static_cast<double>(q[(static_cast<std::size_t>(t) * s.heads + h) * s.dk + c]) *
               k[(static_cast<std::size_t>(p) * s.kv_heads + kvh) * pitch + c];
        sc[p] = d * scale;
        mx = std::max(mx, sc[p]);
      }
      double sum = 0;
      for (auto& x : sc) { x = std::exp(x - mx); sum += x; }
      for (int c = 0; c < s.dv; ++c) {
        double acc = 0;
        for (int p = 0; p <= last; ++p) acc += sc[p] * v[(static_cast<std::size_t>(p) * s.kv_heads + kvh) * pitch + c];
        out[(static_cast<std::size_t>(t) * s.heads + h) * s.dv + c] = acc / sum;
      }
    }
  return out;
}

void check_attention(const AttentionShape& s) {
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const AttentionPlan plan = plan_attention(s, sms);
  const std::size_t q_n = static_cast<std::size_t>(s.q_tokens) * s.heads * s.dk;
  const std::size_t kv_n = static_cast<std::size_t>(s.kv_len) * s.kv_heads * s.dk;
  const std::size_t o_n = static_cast<std::size_t>(s.q_tokens) * s.heads * s.dv;
  DeviceBuffer q = random_bf16(q_n, 11), k = random_bf16(kv_n, 12);
  DeviceBuffer v = s.shared_kv ? DeviceBuffer() : random_bf16(kv_n, 13);
  DeviceBuffer acc(plan.part_acc_floats * 4), ml(plan.part_ml_floats * 4);
  DeviceBuffer out = poisoned(o_n * 2);
  const void* vp = s.shared_kv ? k.get() : v.get();
  launch_attention(s, plan, q.get(), k.get(), vp, s.dk, s.dk, acc.as<float>(), ml.as<float>(), out.get(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto hq = download_bf16(q, q_n), hk = download_bf16(k, kv_n);
  auto hv = s.shared_kv ? hk : download_bf16(v, kv_n);
  const auto ref = attention_reference(s, hq, hk, hv, s.dk);
  const auto got = download_bf16(out, o_n);
  EXPECT_LT(rel_l2(got, ref), 1e-2) << "splits=" << plan.splits << " split_len=" << plan.split_len;
}

// A tiny 2-layer dense trace (per-rank shapes of a TP2 model with hidden 1024).
Trace tiny_trace(int tp) {
  Trace t;
  t.meta.model = "tiny";
  t.meta.tp = tp;
  t.meta.tokens = 4;
  Step s;
  s.name = "verify";
  auto add = [&](Op op) { s.ops.push_back(op); };
  for (int layer = 0; layer < 2; ++layer) {
    Op norm; norm.kind = OpKind::rmsnorm; norm.name = "input_norm"; norm.layer = layer; norm.tokens = 4; norm.hidden = 1024; add(norm);
    Op qkv; qkv.kind = OpKind::gemm; qkv.name = "qkv"; qkv.layer = layer; qkv.m = 4; qkv.n = 768; qkv.k = 1024; add(qkv);
    Op at; at.kind = OpKind::attention; at.name = "attn"; at.layer = layer; at.q_tokens = 4; at.kv_len = 512;
    at.heads = 4; at.kv_heads = 1; at.head_dim = 128; add(at);
    Op o; o.kind = OpKind::gemm; o.name = "o_proj"; o.layer = layer; o.m = 4; o.n = 1024; o.k = 512; add(o);
    Op ar; ar.kind = OpKind::allreduce; ar.name = "attn_allreduce"; ar.layer = layer; ar.bytes = 4 * 1024 * 2; add(ar);
    Op res; res.kind = OpKind::residual_add; res.name = "residual"; res.layer = layer; res.tokens = 4; res.hidden = 1024; add(res);
    Op gu; gu.kind = OpKind::gemm; gu.name = "gate_up"; gu.layer = layer; gu.m = 4; gu.n = 4096; gu.k = 1024; add(gu);
    Op act; act.kind = OpKind::act; act.name = "act"; act.layer = layer; act.tokens = 4; act.hidden = 2048; add(act);
    Op down; down.kind = OpKind::gemm; down.name = "down"; down.layer = layer; down.m = 4; down.n = 1024; down.k = 2048; add(down);
    Op ar2 = ar; ar2.name = "mlp_allreduce"; add(ar2);
    Op other; other.kind = OpKind::other; other.name = "misc"; other.layer = layer; other.us = 5.0; add(other);
  }
  t.steps.push_back(s);
  return t;
}

// tiny_trace with the post-attention RMSNorm after each residual add, so that `fused` absorbs
// allreduce + residual + RMSNorm triples.
Trace tiny_fused_trace(int tp) {
  Trace t = tiny_trace(tp);
  std::vector<Op> ops;
  for (const Op& op : t.steps[0].ops) {
    ops.push_back(op);
    if (op.kind == OpKind::residual_add) {
      Op norm = op;
      norm.kind = OpKind::rmsnorm;
      norm.name = "post_attention_norm";
      ops.push_back(norm);
    }
  }
  t.steps[0].ops = ops;
  return t;
}

bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

}  // namespace

TEST(CudaKernels, GqaAttentionMatchesCpuReference) {
  REQUIRE_GPUS(1);
  AttentionShape s;
  s.q_tokens = 3; s.kv_len = 333; s.heads = 8; s.kv_heads = 2; s.dk = s.dv = 128;
  check_attention(s);
  s.q_tokens = 8; s.heads = 16; s.kv_heads = 4; s.kv_len = 1000;  // 32 rows per KV head: two row blocks
  check_attention(s);
}

TEST(CudaKernels, MlaAttentionMatchesCpuReference) {
  REQUIRE_GPUS(1);
  AttentionShape s;
  s.q_tokens = 2; s.kv_len = 150; s.heads = 4; s.kv_heads = 1; s.dk = 576; s.dv = 512; s.shared_kv = true;
  check_attention(s);
}

// A memory-bound GEMM (m=4, 117 MB of weights) must stream its weights at a rate between a
// third of and about the device-to-device copy rate measured here.
TEST(CudaGemm, SmallMGemmTimeMatchesWeightBandwidth) {
  REQUIRE_GPUS(1);
  const std::int64_t m = 4, n = 14336, k = 4096;
  const std::size_t wbytes = static_cast<std::size_t>(n) * k * 2;
  cublasLtHandle_t lt;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  DeviceBuffer ws(32u << 20);
  std::vector<DeviceBuffer> weights;  // rotate 3 copies: 350 MB, far beyond L2
  for (int i = 0; i < 3; ++i) weights.push_back(random_bf16(wbytes / 2, 50 + i, 0.05f));
  DeviceBuffer x = random_bf16(m * k, 60), y = poisoned(m * n * 2);
  LtGemm gemm(lt, nullptr, m, n, k, DType::bf16, ws.bytes());
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) gemm.run(weights[i % 3].get(), x.get(), y.get(), ws.get(), nullptr);
  const int reps = 30;
  cudaEventRecord(a);
  for (int i = 0; i < reps; ++i) gemm.run(weights[i % 3].get(), x.get(), y.get(), ws.get(), nullptr);
  cudaEventRecord(b);
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  float gemm_ms = 0;
  cudaEventElapsedTime(&gemm_ms, a, b);
  const double gemm_bw = wbytes * reps / (gemm_ms * 1e-3);
  // Copy ceiling: bytes read + written per second.
  cudaMemcpyAsync(weights[1].get(), weights[0].get(), wbytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(a);
  for (int i = 0; i < 5; ++i) cudaMemcpyAsync(weights[(i + 1) % 3].get(), weights[i % 3].get(), wbytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(b);
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  float copy_ms = 0;
  cudaEventElapsedTime(&copy_ms, a, b);
  const double copy_bw = 2.0 * wbytes * 5 / (copy_ms * 1e-3);
  std::printf("GEMM m=4 n=14336 k=4096 bf16: %.1f us, %.0f GB/s; D2D copy %.0f GB/s\n", gemm_ms * 1000 / reps,
              gemm_bw / 1e9, copy_bw / 1e9);
  EXPECT_GT(gemm_bw, copy_bw / 3);
  EXPECT_LT(gemm_bw, copy_bw * 1.5);
  auto out = download_bf16(y, m * n);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cublasLtDestroy(lt);
}

// The tuner compares candidates by fingerprint: rounding-level differences pass, a wrong product
// (lost elements, shifted elements, a NaN) does not.
TEST(GemmFingerprint, SeparatesRoundingFromWrongProducts) {
  REQUIRE_GPUS(1);
  const std::size_t n = 1 << 16;
  DeviceBuffer y = random_bf16(n, 71), scratch(5 * sizeof(double));
  std::vector<std::uint16_t> h(n);
  ASSERT_EQ(cudaMemcpy(h.data(), y.get(), n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  const GemmFingerprint reference = fingerprint_bf16(y.get(), n, scratch.as<double>(), nullptr);
  auto print_of = [&](const std::vector<std::uint16_t>& v) {
    DeviceBuffer d(n * 2);
    EXPECT_EQ(cudaMemcpy(d.get(), v.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
    return fingerprint_bf16(d.get(), n, scratch.as<double>(), nullptr);
  };
  std::vector<std::uint16_t> rounded = h, lost = h, shifted(n), with_nan = h;
  for (std::size_t i = 0; i < n; ++i) {
    if ((i * 2654435761u) >> 31 & 1) rounded[i] ^= 1;  // one unit in the last place, half the elements
    if (i % 10 == 0) lost[i] = 0;
    shifted[i] = h[(i + 1) % n];
  }
  with_nan[n / 2] = 0x7fc0;
  EXPECT_EQ(fingerprint_mismatch(print_of(h), reference), "");
  EXPECT_EQ(fingerprint_mismatch(print_of(rounded), reference), "");
  EXPECT_NE(fingerprint_mismatch(print_of(lost), reference), "");
  EXPECT_NE(fingerprint_mismatch(print_of(shifted), reference), "");
  EXPECT_NE(fingerprint_mismatch(print_of(with_nan), reference), "");
}

// The tuner's cold L2: after the flush, a buffer that was in L2 is read from HBM again (slower
// than from L2), and the flush has written nothing (its buffer and its sink hold zeros).
TEST(CudaGemm, ReadFlushEvictsTheL2AndWritesNothing) {
  REQUIRE_GPUS(1);
  const L2ReadFlush flush;
  ASSERT_GE(flush.bytes(), 2 * current_l2_bytes());
  // A quarter of the L2, read by the same kernel: small enough to stay in L2 between two reads.
  const L2ReadFlush probe(current_l2_bytes() / 4);
  cudaEvent_t a, b;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  auto probe_us = [&] {
    cudaEventRecord(a);
    probe.launch(nullptr);
    cudaEventRecord(b);
    EXPECT_EQ(cudaEventSynchronize(b), cudaSuccess);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return 1000.0 * ms;
  };
  double hot_us = 1e30, cold_us = 1e30;
  for (int r = 0; r < 10; ++r) {
    probe.launch(nullptr);
    hot_us = std::min(hot_us, probe_us());
    flush.launch(nullptr);
    cold_us = std::min(cold_us, probe_us());
  }
  std::printf("%zu MB read: %.2f us from L2, %.2f us after the flush of %zu MB\n", probe.bytes() >> 20, hot_us,
              cold_us, flush.bytes() >> 20);
  EXPECT_GT(cold_us, 1.15 * hot_us);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  unsigned sink = 1;
  ASSERT_EQ(cudaMemcpy(&sink, flush.sink().get(), sizeof(sink), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(sink, 0u);
  std::vector<unsigned char> h(flush.bytes());
  ASSERT_EQ(cudaMemcpy(h.data(), flush.buffer().get(), h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::all_of(h.begin(), h.end(), [](unsigned char v) { return v == 0; }));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

// An fp8 GEMM with a scale pointer off 16 bytes is refused when it is made, with the reason (the
// library would refuse every algorithm at launch only).
TEST(CudaGemm, Fp8ScalePointerOffAlignmentIsRefusedWhenMade) {
  REQUIRE_GPUS(1);
  cublasLtHandle_t lt;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  const UnitFp8Scales scales;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(scales.a()) % kLtScaleAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(scales.b()) % kLtScaleAlignment, 0u);
  try {
    LtGemm gemm(lt, nullptr, 16, 2048, 4096, DType::fp8, 32u << 20, scales.a(), scales.a() + 1);
    ADD_FAILURE() << "an fp8 GEMM with a scale pointer 4 bytes past a 16-byte boundary was made";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("aligned"), std::string::npos) << e.what();
  }
  cublasLtDestroy(lt);
}

struct GemmCase {
  std::int64_t m, n, k;
  DType dtype;
};

// y[m, n] = x[m, k] . W[n, k]^T in double from the device's operands (bf16 or e4m3 bytes).
std::vector<double> gemm_reference(const DeviceBuffer& w, const DeviceBuffer& x, const GemmCase& g) {
  auto decode = [&](const DeviceBuffer& b, std::size_t count) {
    std::vector<double> out(count);
    if (g.dtype == DType::fp8) {
      std::vector<__nv_fp8_e4m3> h(count);
      EXPECT_EQ(cudaMemcpy(h.data(), b.get(), count, cudaMemcpyDeviceToHost), cudaSuccess);
      for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(h[i]);
    } else {
      const std::vector<float> f = download_bf16(b, count);
      out.assign(f.begin(), f.end());
    }
    return out;
  };
  const std::vector<double> hw = decode(w, g.n * g.k), hx = decode(x, g.m * g.k);
  std::vector<double> y(g.m * g.n);
  for (std::int64_t r = 0; r < g.m; ++r)
    for (std::int64_t c = 0; c < g.n; ++c) {
      double s = 0;
      for (std::int64_t i = 0; i < g.k; ++i) s += hx[r * g.k + i] * hw[c * g.k + i];
      y[r * g.n + c] = s;
    }
  return y;
}

// Every candidate the tuner may choose, cuBLAS's default (what PyTorch's F.linear calls) and the
// split-K and enumerated cuBLASLt configurations included, computes the product; so does the
// choice tune() makes.
TEST(CudaGemm, EveryCandidateMatchesCpuReference) {
  REQUIRE_GPUS(1);
  cublasLtHandle_t lt;
  cublasHandle_t blas;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
  DeviceBuffer ws(32u << 20);
  const UnitFp8Scales scales;
  const GemmCase cases[] = {{1, 2048, 4096, DType::bf16},
                            {16, 1024, 8192, DType::bf16},
                            {64, 3072, 1024, DType::bf16},
                            {200, 1024, 1536, DType::bf16},
                            {16, 2048, 4096, DType::fp8}};
  for (const GemmCase& g : cases) {
    SCOPED_TRACE(fmt::format("m={} n={} k={} {}", g.m, g.n, g.k, to_string(g.dtype)));
    const bool fp8 = g.dtype == DType::fp8;
    const std::size_t elem = fp8 ? 1 : 2;
    DeviceBuffer w(g.n * g.k * elem), x(g.m * g.k * elem), y = poisoned(g.m * g.n * 2);
    fill_random(w.get(), g.n * g.k, g.dtype, 81, fp8 ? 0.5f : 0.05f, nullptr);
    fill_random(x.get(), g.m * g.k, g.dtype, 82, 1.f, nullptr);
    const std::vector<double> ref = gemm_reference(w, x, g);
    LtGemm gemm(lt, blas, g.m, g.n, g.k, g.dtype, ws.bytes(), scales.a(), scales.b());
    gemm.add_all_candidates();
    int ran = 0, cublas_default = 0;
    std::map<GemmSource, int> per_source;
    for (int c = 0; c < gemm.candidate_count(); ++c) {
      const GemmCandidate& cand = gemm.candidate(c);
      ASSERT_EQ(cudaMemset(y.get(), 0xFF, g.m * g.n * 2), cudaSuccess);
      const cublasStatus_t st = gemm.run_candidate(c, w.get(), x.get(), y.get(), ws.get(), nullptr);
      // The heuristic's first choice and cuBLAS's default must run; others may be refused at launch.
      if (c == 0 || cand.source == GemmSource::cublas_default) EXPECT_EQ(st, CUBLAS_STATUS_SUCCESS) << cand.name;
      if (st != CUBLAS_STATUS_SUCCESS) continue;
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cand.name;
      EXPECT_LT(rel_l2(download_bf16(y, g.m * g.n), ref), 1e-2) << cand.name;
      ++ran;
      ++per_source[cand.source];
      if (cand.source == GemmSource::cublas_default) ++cublas_default;
    }
    EXPECT_EQ(cublas_default, fp8 ? 0 : 1);
    std::printf("m=%lld n=%lld k=%lld %s: %d of %d candidates ran (heuristic %d, split-K %d, enumerated %d, cublas %d)\n",
                static_cast<long long>(g.m), static_cast<long long>(g.n), static_cast<long long>(g.k),
                to_string(g.dtype), ran, gemm.candidate_count(), per_source[GemmSource::heuristic],
                per_source[GemmSource::split_k], per_source[GemmSource::enumerated], per_source[GemmSource::cublas_default]);
    gemm.tune(w.get(), x.get(), y.get(), ws.get());
    ASSERT_EQ(cudaMemset(y.get(), 0xFF, g.m * g.n * 2), cudaSuccess);
    gemm.run(w.get(), x.get(), y.get(), ws.get(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(rel_l2(download_bf16(y, g.m * g.n), ref), 1e-2) << gemm.describe();
    for (const std::string& r : gemm.tuning().rejected) std::printf("  rejected %s\n", r.c_str());
    std::printf("  %s, %.3f s\n", gemm.describe().c_str(), gemm.tuning().seconds);
  }
  cublasDestroy(blas);
  cublasLtDestroy(lt);
}

// A shape tuned once is not tuned again in the process: the next GEMM of the shape takes the
// same candidate without timing anything.
TEST(CudaGemm, TunedChoiceIsRememberedPerShape) {
  REQUIRE_GPUS(1);
  const std::int64_t m = 3, n = 5120, k = 3072;  // a shape no other test tunes
  cublasLtHandle_t lt;
  cublasHandle_t blas;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
  DeviceBuffer ws(32u << 20), w = random_bf16(n * k, 91, 0.05f), x = random_bf16(m * k, 92), y = poisoned(m * n * 2);
  LtGemm first(lt, blas, m, n, k, DType::bf16, ws.bytes());
  first.tune(w.get(), x.get(), y.get(), ws.get());
  EXPECT_FALSE(first.tuning().remembered);
  EXPECT_GT(first.tuning().timed, 1);
  EXPECT_GT(first.tuning().us, 0);
  EXPECT_LT(first.tuning().seconds, 2.0) << "the tuning budget of one small shape";
  LtGemm second(lt, blas, m, n, k, DType::bf16, ws.bytes());
  second.tune(w.get(), x.get(), y.get(), ws.get());
  EXPECT_TRUE(second.tuning().remembered);
  EXPECT_EQ(second.tuning().timed, 0);
  EXPECT_EQ(second.candidate(second.chosen()).name, first.candidate(first.chosen()).name);
  first.run(w.get(), x.get(), y.get(), ws.get(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> a = download_bf16(y, m * n);
  ASSERT_EQ(cudaMemset(y.get(), 0xFF, m * n * 2), cudaSuccess);
  second.run(w.get(), x.get(), y.get(), ws.get(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_LT(rel_l2(download_bf16(y, m * n), std::vector<double>(a.begin(), a.end())), 1e-2);
  cublasDestroy(blas);
  cublasLtDestroy(lt);
}

// What the replay tests run: 10 timed replays (check_replay_result expects 10 samples), 2 untimed.
RunOptions ten_replays() {
  RunOptions opts;
  opts.iters = 10;
  opts.warmup = 2;
  return opts;
}

void check_replay_result(const StepResult& r, const Trace& t, int ranks) {
  EXPECT_EQ(r.step, "verify");
  EXPECT_GT(r.step_us, 0);
  EXPECT_LE(r.step_us_min, r.step_us);
  EXPECT_GE(r.step_us_max, r.step_us);
  EXPECT_EQ(r.samples, 10);
  EXPECT_EQ(r.allreduce_count, 4);
  EXPECT_GT(r.kind_us[static_cast<int>(OpKind::gemm)], 0);
  EXPECT_GT(r.kind_us[static_cast<int>(OpKind::attention)], 0);
  // The `other` ops spin 5 us each.
  EXPECT_GE(r.kind_us[static_cast<int>(OpKind::other)], 2 * 4.0);
  EXPECT_GT(r.comm_us, 0);
  EXPECT_NEAR(r.comm_us + r.compute_us, [&] { double s = 0; for (double v : r.kind_us) s += v; return s; }(), 1e-6);
  // Attribution (events between ops) and the graph step time describe the same work.
  EXPECT_GT(r.comm_us + r.compute_us, 0.5 * r.step_us);
  EXPECT_LT(r.comm_us + r.compute_us, 4.0 * r.step_us + 50);
  EXPECT_EQ(r.timeline.ranks, ranks);
  EXPECT_EQ(r.timeline.spans.size(), t.steps[0].ops.size() * ranks);
  for (const auto& s : r.timeline.spans) EXPECT_LE(s.start_us, s.end_us);
  EXPECT_FALSE(r.notes.empty());
}

TEST(WeightArena, NextArenaWithTheSameLayoutTakesOverTheMemory) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  release_parked_weights();
  const std::vector<std::size_t> sizes{16 << 20, 1000, 4096, 12 << 20};  // two own allocations, two pooled
  const std::size_t free_bytes = std::size_t(8) << 30;
  std::vector<void*> first;
  {
    WeightArena a(sizes, free_bytes);
    EXPECT_FALSE(a.adopted());
    EXPECT_FALSE(a.reused());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      first.push_back(a.region(i));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.region(i)) % 256, 0u) << i;
      EXPECT_EQ(cudaMemset(a.region(i), 1, sizes[i]), cudaSuccess) << i;  // the whole region is ours
    }
    EXPECT_NE(first[1], first[2]);
  }
  {
    WeightArena b(sizes, free_bytes);  // same layout: the same memory
    EXPECT_TRUE(b.adopted());
    for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(b.region(i), first[i]) << i;
  }
  {
    std::vector<std::size_t> other = sizes;
    other[3] += 256;
    WeightArena c(other, free_bytes);  // another layout: the parked memory is freed, fresh allocations
    EXPECT_FALSE(c.adopted());
  }
  release_parked_weights();
  WeightArena d(sizes, free_bytes);
  EXPECT_FALSE(d.adopted());
  // More than the budget (16 + 12 MiB of big regions for 80 % of 25 MiB): the 16 MiB region keeps
  // its own allocation and the 12 MiB one reuses it; the small ones keep their pool; said so.
  {
    WeightArena e(sizes, std::size_t(25) << 20);
    EXPECT_TRUE(e.reused());
    EXPECT_EQ(e.region(3), e.region(0));
    EXPECT_NE(e.region(1), e.region(2));
    EXPECT_NE(e.region(1), e.region(0));
    EXPECT_LT(e.pool_bytes(), std::size_t(17) << 20);
    for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(cudaMemset(e.region(i), 2, sizes[i]), cudaSuccess) << i;
  }
  release_parked_weights();
  // A big region larger than every allocation the budget allowed: one pool, reused cyclically.
  const std::vector<std::size_t> growing{12 << 20, 16 << 20};
  WeightArena f(growing, std::size_t(25) << 20);
  EXPECT_TRUE(f.reused());
  EXPECT_EQ(f.region(1), f.region(0));  // both at the start of the pool
  EXPECT_EQ(cudaMemset(f.region(1), 3, growing[1]), cudaSuccess);
}

namespace {

// One decoder layer of a shipped trace: the first layer with a grouped GEMM when the model has
// experts (Kimi-K2's first layer is dense), else layer 0.
Trace one_layer(const std::string& file) {
  Trace t = read_trace(std::string(EAGLESIM_REPO) + "/traces/" + file);
  t.steps.resize(1);
  const std::vector<Op>& ops = t.steps[0].ops;
  int layer = 0;
  for (const Op& op : ops)
    if (op.kind == OpKind::grouped_gemm) {
      layer = op.layer;
      break;
    }
  std::vector<Op> kept;
  for (const Op& op : ops)
    if (op.layer == layer) kept.push_back(op);
  t.steps[0].ops = kept;
  return t;
}

// The layer replays on one GPU (its TP shapes, allreduces free) with time in every compute
// kind, and each op's detail names the kernel `expected` says its kind and dtype map to.
void check_layer_replay(const std::string& file, const std::map<std::string, std::string>& expected) {
  SCOPED_TRACE(file);
  const Trace t = one_layer(file);
  const Step& step = t.steps[0];
  ASSERT_FALSE(step.ops.empty());
  std::size_t absorbed = 0;  // ops a fused kernel runs (a residual add's RMSNorm): no span of their own
  {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    CommGroupConfig cc;
    cc.strategy = "ideal";
    cc.ranks = 1;
    cc.devices = {0};
    auto group = create_ideal_comm_group(cc);
    RankProgram program(step, 0, group->rank(0), nullptr, ProgramOptions{});
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      const Op& op = step.ops[i];
      const auto it = expected.find(std::string(to_string(op.kind)) + " " + to_string(op.dtype));
      const auto any = expected.find(to_string(op.kind));
      const std::string want = it != expected.end() ? it->second : any != expected.end() ? any->second : "";
      if (!want.empty()) EXPECT_NE(program.detail(i).find(want), std::string::npos) << program.label(i) << ": " << program.detail(i);
      if (program.absorbed(i)) ++absorbed;
    }
  }
  RunOptions opts = ten_replays();
  opts.ranks = 1;
  auto backend = make_cuda_backend();
  const StepResult r = backend->run_step(t, step, "ideal", nullptr, opts);
  EXPECT_GT(r.step_us, 0);
  EXPECT_GT(absorbed, 0u) << "the attention's residual add and the post-attention norm run as one kernel";
  EXPECT_EQ(r.timeline.spans.size(), step.ops.size() - absorbed);
  for (const Op& op : step.ops)
    if (!op.is_comm()) EXPECT_GT(r.kind_us[static_cast<int>(op.kind)], 0) << to_string(op.kind);
}


}  // namespace

TEST(CudaReplay, TinyTraceOnOneGpu) {
  REQUIRE_GPUS(1);
  const Trace t = tiny_trace(1);
  const RunOptions opts = ten_replays();
  auto backend = make_cuda_backend();
  const StepResult r = backend->run_step(t, t.steps[0], "nccl", nullptr, opts);
  check_replay_result(r, t, 1);
}

// A Kimi-K2 TP8 MoE layer (absorbed MLA, int4 dense and expert weights, a bf16 router) and a
// Llama-3.1-8B TP1 layer (GQA, bf16) through the backend on eaglesim's kernels.
TEST(CudaReplay, KimiK2MoeLayerOnOneGpu) {
  REQUIRE_GPUS(1);
  check_layer_replay("kimi-k2_tp8_t4.json", {{"gemm int4", "weight-only GEMM kernel int4_g32"},
                                             {"gemm bf16", "cublasLt bf16"},
                                             {"grouped_gemm", "grouped MoE GEMM kernel int4_g32"},
                                             {"attention", "verify-attention kernel mla"}});
}

TEST(CudaReplay, Llama8bLayerOnOneGpu) {
  REQUIRE_GPUS(1);
  check_layer_replay("llama-3.1-8b_tp1_t4.json",
                     {{"gemm bf16", "cublasLt bf16"}, {"attention", "verify-attention kernel gqa_d128"}});
}

// The roofline's floors come from the device itself: plausible on any GPU (HBM or GDDR from
// 1 to 10 TB/s, tensor cores above 10 TFLOP/s), and the same figures for every step of the process.
TEST(CudaReplay, StepCarriesTheDevicesMeasuredCeilings) {
  REQUIRE_GPUS(1);
  const Trace t = tiny_trace(1);
  auto backend = make_cuda_backend();
  const StepResult r = backend->run_step(t, t.steps[0], "nccl", nullptr, ten_replays());
  ASSERT_TRUE(r.ceilings.has_value());
  EXPECT_FALSE(r.ceilings->device.empty());
  EXPECT_GT(r.ceilings->read_gbps, 1000.0);
  EXPECT_LT(r.ceilings->read_gbps, 10000.0);
  EXPECT_GT(r.ceilings->bf16_tflops, 10.0);
  const StepResult again = backend->run_step(t, t.steps[0], "nccl", nullptr, ten_replays());
  ASSERT_TRUE(again.ceilings.has_value());
  EXPECT_EQ(again.ceilings->read_gbps, r.ceilings->read_gbps);
}

// --op-times on the replay: an imported trace's compute ops run as timed kernels of their
// recorded durations (only the allreduces for real), so the step is their sum plus the kernel
// boundaries; --op-times model runs eaglesim's kernels on the same trace instead.
TEST(CudaReplay, RecordedComputeRunsTheRecordedDurations) {
  REQUIRE_GPUS(1);
  Trace t = tiny_trace(1);
  t.meta.source = "imported";
  double recorded_sum = 0;
  int compute_ops = 0;
  for (Op& op : t.steps[0].ops) {
    if (op.is_comm()) continue;
    op.us = 40.0;
    recorded_sum += 40.0;
    ++compute_ops;
  }
  auto backend = make_cuda_backend();
  RunOptions opts = ten_replays();
  opts.op_times = OpTimes::automatic;
  const StepResult r = backend->run_step(t, t.steps[0], "nccl", nullptr, opts);
  const auto noted = [](const StepResult& res, const char* text) {
    return std::any_of(res.notes.begin(), res.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(noted(r, "recorded durations")) << "auto on an imported trace replays the recorded times";
  EXPECT_GE(r.compute_us, recorded_sum * 0.99);
  EXPECT_LE(r.compute_us, recorded_sum + compute_ops * 6.0);
  for (const Span& span : r.timeline.spans)
    if (span.kind != OpKind::allreduce) EXPECT_NE(span.detail.find("recorded"), std::string::npos) << span.name;

  opts.op_times = OpTimes::model;
  const StepResult ours = backend->run_step(t, t.steps[0], "nccl", nullptr, opts);
  EXPECT_TRUE(noted(ours, "eaglesim's kernels"));
  EXPECT_LT(ours.compute_us, recorded_sum * 0.5) << "the tiny trace's own kernels take a few us each";

  Trace generated = tiny_trace(1);
  opts.op_times = OpTimes::measured;
  EXPECT_THROW(backend->run_step(generated, generated.steps[0], "nccl", nullptr, opts), InputError);
}

// Kind marginals: the step graph against one graph per compute kind without that kind's ops. The
// two `other` ops spin 5 us each, so theirs is about 10 us whatever the kernels around them; the
// fused add + RMSNorm reports as rmsnorm and takes its add with it (no residual_add marginal);
// allreduces get none.
TEST(CudaReplay, KindMarginalsTimeTheStepWithoutEachKind) {
  REQUIRE_GPUS(1);
  const Trace t = tiny_fused_trace(1);
  RunOptions opts = ten_replays();
  opts.ranks = 1;
  opts.kind_marginals = true;
  auto backend = make_cuda_backend();
  const StepResult r = backend->run_step(t, t.steps[0], "ideal", nullptr, opts);
  const auto marginal = [&](OpKind k) { return r.kind_marginal_us[static_cast<std::size_t>(k)]; };
  for (OpKind k : {OpKind::gemm, OpKind::attention, OpKind::rmsnorm, OpKind::act, OpKind::other})
    ASSERT_TRUE(marginal(k).has_value()) << to_string(k);
  EXPECT_FALSE(marginal(OpKind::residual_add).has_value());
  EXPECT_FALSE(marginal(OpKind::allreduce).has_value());
  EXPECT_GT(*marginal(OpKind::other), 2 * 5.0 - 3.0);
  EXPECT_LT(*marginal(OpKind::other), 2 * 5.0 + 4.0);
  EXPECT_GT(*marginal(OpKind::gemm), 0.0);
  EXPECT_LT(*marginal(OpKind::gemm), r.step_us);
  EXPECT_TRUE(has_note(r.notes, "kind marginals: the step graph and 5 graphs"));
  opts.kind_marginals = false;
  const StepResult plain = backend->run_step(t, t.steps[0], "ideal", nullptr, opts);
  for (const auto& m : plain.kind_marginal_us) EXPECT_FALSE(m.has_value());
}

// A residual add and the RMSNorm of the same rows right after it run as one fused add + RMSNorm
// kernel, the norm absorbed, unless the options turn that off (RunOptions::fuse_add_norm reaches
// the program through the backend).
TEST(CudaReplay, ResidualAddAndRmsNormRunAsOneFusedKernel) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const Trace t = tiny_fused_trace(1);
  const Step& step = t.steps[0];
  {
    CommGroupConfig cc;
    cc.strategy = "ideal";
    cc.ranks = 1;
    cc.devices = {0};
    auto group = create_ideal_comm_group(cc);
    for (bool fuse : {true, false}) {
      ProgramOptions popts;
      popts.fuse_add_norm = fuse;
      RankProgram program(step, 0, group->rank(0), nullptr, popts);
      int pairs = 0;
      for (std::size_t i = 0; i + 1 < step.ops.size(); ++i) {
        if (step.ops[i].kind != OpKind::residual_add || step.ops[i + 1].kind != OpKind::rmsnorm) continue;
        ++pairs;
        EXPECT_EQ(program.absorbed(i + 1), fuse) << program.label(i);
        EXPECT_FALSE(program.absorbed(i)) << program.label(i);
        EXPECT_EQ(program.detail(i), fuse ? "fused add + rmsnorm kernel" : "residual add kernel");
        EXPECT_EQ(program.detail(i + 1), fuse ? "fused into " + step.ops[i].name : std::string("rmsnorm kernel"));
      }
      EXPECT_EQ(pairs, 2);
      EXPECT_EQ(has_note(program.notes(), "2 residual add + RMSNorm pairs ran as one fused add + RMSNorm kernel"), fuse);
    }
  }
  RunOptions opts = ten_replays();
  opts.ranks = 1;
  auto backend = make_cuda_backend();
  for (bool fuse : {true, false}) {
    opts.fuse_add_norm = fuse;
    const StepResult r = backend->run_step(t, step, "nccl", nullptr, opts);
    EXPECT_GT(r.step_us, 0);
    EXPECT_EQ(has_note(r.notes, "residual add + RMSNorm pairs ran as one fused add + RMSNorm kernel"), fuse);
    // Fused: the two norms have no span of their own, and the kernel reports as rmsnorm (as the
    // simulator's does), so no time is left under residual_add.
    EXPECT_EQ(r.timeline.spans.size(), step.ops.size() - (fuse ? 2 : 0));
    EXPECT_GT(r.kind_us[static_cast<int>(OpKind::rmsnorm)], 0);
    EXPECT_EQ(r.kind_us[static_cast<int>(OpKind::residual_add)] > 0, !fuse);
    const bool named = std::any_of(r.timeline.spans.begin(), r.timeline.spans.end(), [](const Span& s) {
      return s.name == "residual+post_attention_norm" && s.kind == OpKind::rmsnorm;
    });
    EXPECT_EQ(named, fuse);
  }
}

TEST(CudaReplay, TinyTraceOnTwoGpus) {
  REQUIRE_GPUS(2);
  const Trace t = tiny_trace(2);
  const RunOptions opts = ten_replays();
  auto backend = make_cuda_backend();
  const StepResult r = backend->run_step(t, t.steps[0], "nccl", nullptr, opts);
  check_replay_result(r, t, 2);
  const StepResult ideal = backend->run_step(t, t.steps[0], "ideal", nullptr, opts);
  EXPECT_LT(ideal.comm_us, r.comm_us);
}

// An NCCL step is replayed once, untimed, before the measured replay (and the notes say so):
// by default (RunOptions::nccl_prime), not with --no-nccl-prime (nccl_prime = false), and never
// for our own kernels.
TEST(CudaReplay, NcclPrimingIsNotedAndCanBeTurnedOff) {
  REQUIRE_GPUS(2);
  const Trace t = tiny_trace(2);
  RunOptions opts = ten_replays();
  auto backend = make_cuda_backend();
  auto primed = [](const StepResult& r) {
    return std::any_of(r.notes.begin(), r.notes.end(),
                       [](const std::string& n) { return n.find("untimed") != std::string::npos; });
  };
  ASSERT_TRUE(opts.nccl_prime) << "priming is the default";
  {
    const StepResult r = backend->run_step(t, t.steps[0], "nccl", nullptr, opts);
    check_replay_result(r, t, 2);
    EXPECT_TRUE(primed(r));
    EXPECT_FALSE(primed(backend->run_step(t, t.steps[0], "oneshot", nullptr, opts)));  // NCCL only
  }
  {
    opts.nccl_prime = false;
    const StepResult r = backend->run_step(t, t.steps[0], "nccl", nullptr, opts);
    check_replay_result(r, t, 2);
    EXPECT_FALSE(primed(r));
  }
}

TEST(CudaReplay, FewerRanksThanTpNeedsRanksFlagThenNotes) {
  REQUIRE_GPUS(1);
  const Trace t = tiny_trace(gpu_count() + 1);
  RunOptions opts;
  opts.iters = 10;
  opts.warmup = 1;
  auto backend = make_cuda_backend();
  try {
    backend->run_step(t, t.steps[0], "nccl", nullptr, opts);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--ranks"), std::string::npos) << e.what();
  }
  opts.ranks = 1;
  const StepResult r = backend->run_step(t, t.steps[0], "nccl", nullptr, opts);
  const bool noted = std::any_of(r.notes.begin(), r.notes.end(),
                                 [](const std::string& n) { return n.find("per-rank shapes on 1 GPU") != std::string::npos; });
  EXPECT_TRUE(noted);
}

TEST(CudaReplay, UnknownStrategyIsAnInputError) {
  REQUIRE_GPUS(1);
  const Trace t = tiny_trace(1);
  ReplayConfig c;
  c.devices = {0};
  c.strategy = "no-such-strategy";
  EXPECT_THROW(replay_step(t.steps[0], c), InputError);
}

// Rank 1 never joins the allreduces: rank 0 must be aborted within the timeout, with a
// DeviceError (exit 3) naming rank 0 and its first allreduce.
TEST(CudaReplay, StuckAllreduceAbortsWithinTimeout) {
  REQUIRE_GPUS(2);
  const Trace t = tiny_trace(2);
  ReplayConfig c;
  c.devices = {0, 1};
  c.strategy = "nccl";
  c.opts.iters = 3;
  c.opts.warmup = 1;
  c.opts.timeout_s = 2.0;
  c.skip_allreduces_rank = 1;
  const auto start = std::chrono::steady_clock::now();
  try {
    replay_step(t.steps[0], c);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("rank 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("attn_allreduce"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 s"), std::string::npos) << msg;
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 2.0 + 20.0);  // setup + abort, never a hang
}

// A communicator that only copies its input: right for one rank, wrong for two.
class CopyComm final : public RankComm {
 public:
  explicit CopyComm(int ranks) : ranks_(ranks) {}
  std::string strategy() const override { return "copy"; }
  int rank() const override { return 0; }
  int ranks() const override { return ranks_; }
  void allreduce(const void* in, void* out, std::size_t count, DType dtype, cudaStream_t stream) override {
    const std::size_t bytes = count * element_bytes(dtype);
    ASSERT_EQ(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream), cudaSuccess);
  }
  std::size_t max_bytes() const override { return SIZE_MAX; }

 private:
  int ranks_;
};

std::string run_self_check(RankComm& comm, std::vector<CollectiveUse> uses) {
  for (auto& u : uses) u.comm = &comm;
  AllreduceSelfCheck check(uses, 0);
  check.enqueue(nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return check.verify();
}

// The self-check passes a communicator that sums right and stops one that does not, naming the
// rank, the strategy, the shape and the first wrong element; odd sizes and every dtype.
TEST(AllreduceSelfCheck, PassesARightSumAndStopsAWrongOne) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const std::vector<CollectiveUse> uses{{nullptr, DType::bf16, 4096, false, 0, 0, 1e-5f},
                                        {nullptr, DType::fp16, 1001, false, 0, 0, 1e-5f},
                                        {nullptr, DType::fp32, 7, false, 0, 0, 1e-5f}};
  CopyComm alone(1);
  const std::string note = run_self_check(alone, uses);
  EXPECT_NE(note.find("allreduce of 4096 bf16, allreduce of 1001 fp16, allreduce of 7 fp32 matched"),
            std::string::npos) << note;
  CopyComm pretends_two(2);
  try {
    run_self_check(pretends_two, uses);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("rank 0: copy allreduce of 4096 bf16 is wrong"), std::string::npos) << msg;
    EXPECT_NE(msg.find("first: element 0"), std::string::npos) << msg;
  }
}

// Every strategy of a two-GPU replay passes the self-check before it is timed, fused on its
// fused shape, and says so; `ideal` moves nothing and is not checked.
TEST(CudaReplay, EveryStrategyPassesTheSelfCheckOnTwoGpus) {
  REQUIRE_GPUS(2);
  const Trace t = tiny_fused_trace(2);
  const RunOptions opts = ten_replays();
  auto backend = make_cuda_backend();
  for (const char* s : {"nccl", "oneshot", "twoshot", "fused", "quant"}) {
    const StepResult r = backend->run_step(t, t.steps[0], s, nullptr, opts);
    EXPECT_TRUE(has_note(r.notes, "allreduce self-check on 2 ranks before timing")) << s;
    // fused: the attention allreduce is fused (a norm follows its residual add), the MLP's is not.
    const char* shape = std::string(s) == "fused"
                            ? "fused allreduce + residual + RMSNorm of 4 x 1024 bf16, allreduce of 4096 bf16 matched"
                            : "allreduce of 4096 bf16 matched";
    EXPECT_TRUE(has_note(r.notes, shape)) << s;
    // The residual add + RMSNorm after the attention allreduce: absorbed by `fused`, else one
    // fused add + RMSNorm kernel per layer.
    EXPECT_EQ(has_note(r.notes, "2 residual add + RMSNorm pairs ran as one fused add + RMSNorm kernel"),
              std::string(s) != "fused")
        << s;
  }
  EXPECT_FALSE(has_note(backend->run_step(t, t.steps[0], "ideal", nullptr, opts).notes, "self-check"));
}

// Each allreduce of one step through its own communicator (ReplayConfig::op_strategy): the
// attention allreduces through the one-shot kernel, the MLP's through NCCL, each checked against
// the host reference before timing and captured in one graph.
TEST(CudaReplay, AllreducesOfOneStepThroughDifferentCommunicators) {
  REQUIRE_GPUS(2);
  const Trace t = tiny_fused_trace(2);
  ReplayConfig c;
  c.devices = {0, 1};
  c.opts = ten_replays();
  c.strategy = "sglang";
  c.op_strategy.assign(t.steps[0].ops.size(), "");
  int k = 0;
  for (std::size_t i = 0; i < t.steps[0].ops.size(); ++i)
    if (t.steps[0].ops[i].is_comm()) c.op_strategy[i] = k++ % 2 == 0 ? "oneshot" : "nccl";
  ASSERT_EQ(k, 4);
  const StepResult r = replay_step(t.steps[0], c);
  check_replay_result(r, t, 2);
  EXPECT_TRUE(has_note(r.notes, "allreduce self-check on 2 ranks before timing")) << r.notes.size();
  // A route the replay cannot take is refused before any GPU work.
  c.op_strategy.pop_back();
  EXPECT_THROW(replay_step(t.steps[0], c), std::logic_error);
}

// The engine strategies on the GPUs present: every allreduce routed to the strategy of the path
// the engine takes on this machine (probed), the groups reported, the step measured.
TEST(CudaReplay, EngineStrategiesRouteEveryAllreduceOnTwoGpus) {
  REQUIRE_GPUS(2);
  const Trace t = tiny_fused_trace(2);
  RunOptions opts = ten_replays();
  opts.ranks = 2;
  auto backend = make_cuda_backend();
  int allreduces = 0;
  for (const Op& op : t.steps[0].ops) allreduces += op.is_comm();
  for (const char* engine : {"sglang", "vllm"}) {
    SCOPED_TRACE(engine);
    const StepResult r = backend->run_step(t, t.steps[0], engine, nullptr, opts);
    EXPECT_GT(r.step_us, 0);
    EXPECT_EQ(r.allreduce_count, allreduces);
    EXPECT_TRUE(has_note(r.notes, "probed")) << "the setup note names the probed machine";
    ASSERT_FALSE(r.dispatch.empty());
    int routed = 0;
    for (const DispatchGroup& g : r.dispatch) {
      routed += g.count;
      EXPECT_FALSE(g.reason.empty());
      EXPECT_FALSE(g.model.empty());
    }
    EXPECT_EQ(routed, allreduces);
    EXPECT_TRUE(has_note(r.notes, "allreduce self-check on 2 ranks before timing"));
  }
}

namespace {

bool has_mpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

// Runs `args` under `mpirun -np n` with the log in the test's temp dir; returns system()'s
// status and fills `log` with what the processes printed.
int mpirun_eaglesim(int n, const std::string& args, std::string& log) {
  const std::string log_path = ::testing::TempDir() + "eaglesim_mpirun.log";
  const std::string cmd = "mpirun --allow-run-as-root --bind-to none -np " + std::to_string(n) +
                          " -x NCCL_NVLS_ENABLE=0 " + EAGLESIM_EXE + " " + args + " > " + log_path + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(log_path);
  log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return status;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// The notes of every result in a `run --json` report, by strategy.
std::map<std::string, std::vector<std::string>> notes_by_strategy(const std::string& report) {
  std::ifstream in(report);
  std::map<std::string, std::vector<std::string>> out;
  if (!in.good()) return out;
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& r : j.at("results")) out[r.at("strategy")] = r.at("notes").get<std::vector<std::string>>();
  return out;
}

}  // namespace

// `run --no-nccl-prime` (shared with `fidelity` through cli/replay_flags) reaches the backend:
// the NCCL step is measured without the untimed replay first, which the default does.
TEST(CudaReplayCli, NoNcclPrimeFlagTurnsThePrimingOff) {
  REQUIRE_GPUS(2);
  const std::string dir = ::testing::TempDir();
  const std::string trace = dir + "eaglesim_prime_tiny.json", report = dir + "eaglesim_prime_report.json";
  write_trace(tiny_trace(2), trace);
  for (const bool flag : {false, true}) {
    std::remove(report.c_str());
    const std::string cmd = std::string(EAGLESIM_EXE) + " run " + trace + " --backend cuda --strategy nccl --iters 3 " +
                            "--warmup 1 " + (flag ? "--no-nccl-prime " : "") + "--json " + report + " > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const auto notes = notes_by_strategy(report);
    ASSERT_EQ(notes.count("nccl"), 1u) << report;
    EXPECT_EQ(has_note(notes.at("nccl"), "untimed"), !flag) << (flag ? "with" : "without") << " --no-nccl-prime";
  }
}

// Under mpirun (one process per GPU), our own strategies map the peer's buffers through CUDA
// IPC: every strategy runs, passes the self-check on 2 ranks and reports a step.
TEST(CudaReplayMpi, EveryStrategyAcrossTwoProcesses) {
  REQUIRE_GPUS(2);
#ifndef EAGLESIM_HAVE_MPI
  GTEST_SKIP() << "built without MPI";
#else
  if (!has_mpirun()) GTEST_SKIP() << "no mpirun on PATH";
  const std::string dir = ::testing::TempDir();
  const std::string trace = dir + "eaglesim_mpi_tiny.json", report = dir + "eaglesim_mpi_report.json";
  write_trace(tiny_fused_trace(2), trace);
  std::remove(report.c_str());
  std::string log;
  ASSERT_EQ(mpirun_eaglesim(2, "run " + trace + " --backend cuda --strategy nccl,oneshot,twoshot,fused,quant --iters 5 "
                               "--warmup 1 --json " + report, log),
            0)
      << log;
  std::ifstream in(report);
  ASSERT_TRUE(in.good()) << report;
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j.at("results").size(), 5u);
  for (const auto& r : j.at("results")) {
    const std::string s = r.at("strategy");
    ASSERT_TRUE(r.at("supported").get<bool>()) << s;
    EXPECT_GT(r.at("verify_us").get<double>(), 0) << s;
    const auto notes = r.at("notes").get<std::vector<std::string>>();
    EXPECT_TRUE(has_note(notes, "multi-process replay: 2 MPI ranks")) << s;
    EXPECT_TRUE(has_note(notes, "allreduce self-check on 2 ranks before timing")) << s;
    if (s == "fused") EXPECT_TRUE(has_note(notes, "fused allreduce + residual + RMSNorm of 4 x 1024 bf16")) << s;
  }
#endif
}

// One GPU per process: more processes than GPUs would put two on one GPU. Every process sees
// the same pair and refuses before any collective (no hang), and no report is written.
TEST(CudaReplayMpi, TwoProcessesOnOneGpuAreRefused) {
  REQUIRE_GPUS(1);
  if (!has_mpirun()) GTEST_SKIP() << "no mpirun on PATH";
  const std::string dir = ::testing::TempDir();
  const std::string trace = dir + "eaglesim_mpi_refused.json", report = dir + "eaglesim_mpi_refused_report.json";
  const int n = gpu_count() + 1;
  write_trace(tiny_fused_trace(n), trace);
  std::remove(report.c_str());
  std::string log;
  const int status = mpirun_eaglesim(n, "run " + trace + " --backend cuda --strategy nccl --iters 2 --json " + report, log);
  EXPECT_NE(status, 0) << log;
  EXPECT_NE(log.find("would drive the same GPU"), std::string::npos) << log;
  EXPECT_NE(log.find("start at most one process per GPU"), std::string::npos) << log;
  EXPECT_FALSE(exists(report));
}

// calibrate and bench-comm drive every GPU from one process: under mpirun they refuse, with no
// output file, instead of running once per process on the same GPUs.
TEST(CudaReplayMpi, CalibrateAndBenchCommRefuseMpirun) {
  REQUIRE_GPUS(1);
  if (!has_mpirun()) GTEST_SKIP() << "no mpirun on PATH";
  const std::string dir = ::testing::TempDir();
  const std::string trace = dir + "eaglesim_mpi_calibrate.json", topo = dir + "eaglesim_mpi_topology.json",
                    bench = dir + "eaglesim_mpi_bench.json";
  write_trace(tiny_fused_trace(1), trace);
  std::remove(topo.c_str());
  std::remove(bench.c_str());
  std::string log;
  EXPECT_NE(mpirun_eaglesim(2, "calibrate --traces " + trace + " --ranks 1 --iters 2 -o " + topo, log), 0) << log;
  EXPECT_NE(log.find("calibrate drives every GPU of this machine from one process"), std::string::npos) << log;
  EXPECT_FALSE(exists(topo));
  EXPECT_NE(mpirun_eaglesim(2, "bench-comm --sizes 4K --iters 2 --json " + bench, log), 0) << log;
  EXPECT_NE(log.find("bench-comm drives every GPU of this machine from one process"), std::string::npos) << log;
  EXPECT_FALSE(exists(bench));
}
