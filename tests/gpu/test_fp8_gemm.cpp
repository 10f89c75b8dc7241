// Correctness of the W8A8 fp8 path the replay runs dense fp8 GEMMs on (docs/kernels/
// fp8-gemm.md):
//   - the activation quantisation kernels (kernels/fp8_act_quant.cuh and its plain reference)
//     against a host reference, bit for bit, in every mode (static per tensor, per token, per
//     1 x 128 group), rows 1-256 (padding rows included), k not a multiple of 128;
//   - cuBLASLt's fp8 GEMM (cuda::LtGemm) in each scale mode (per tensor, per channel and token,
//     128 x 128 weight blocks with 1 x 128 activation groups), every candidate of the tuner and the
//     tuned choice, against a host double reference over the very operands and scales it read,
//     at 1, 4, 16, 64, 128 and 256 rows, k a multiple of 128 and not; outputs poisoned with NaN
//     first, and the unused entries of the block-scale tensors NaN too (a layout read wrong
//     shows as NaN); per-call scales; the shapes cuBLASLt cannot take refused with the reason;
//   - the replay: an `act_quant_fp8` op and the fp8 GEMM after it run as the quantisation kernel
//     and cuBLASLt's fp8 GEMM, and as before under EAGLESIM_FP8_GEMM=weight_only.
// EAGLESIM_TEST_QUICK=1 keeps a few small shapes (for compute-sanitizer runs).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "cuda/comm/ideal_comm_group.hpp"
#include "cuda/ops/fp8_act_quant.hpp"
#include "cuda/ops/fp8_scaling.hpp"
#include "cuda/ops/lt_gemm.hpp"
#include "cuda/replay/rank_program.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "fp8_quant_layout.cuh"
#include "gpu_skip.hpp"
#include "host_bf16.hpp"
#include "moe_gemm_layout.cuh"

namespace eaglesim::cuda {
namespace {

namespace kf = eaglesim::kernels::fp8;
using eaglesim::test::from_bf;
using eaglesim::test::to_bf;

constexpr std::size_t kWorkspace = 32u << 20;
const Fp8Scaling kModes[] = {Fp8Scaling::tensor, Fp8Scaling::channel, Fp8Scaling::block};

bool quick() { return std::getenv("EAGLESIM_TEST_QUICK") != nullptr; }

bool have_sm90() {
  if (!eaglesim::test::has_gpu()) return false;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return false;
  return prop.major == 9 && prop.minor == 0;
}

#define SKIP_WITHOUT_SM90()                                                                              \
  if (!have_sm90())                                                                                      \
  GTEST_SKIP() << "needs a GPU of compute capability 9.0 (cuBLASLt's per-channel and 128-block fp8 modes)"

float e4m3(std::uint8_t b) { return eaglesim::kernels::moe::e4m3_to_float(b); }

template <typename T>
void upload(const DeviceBuffer& d, const std::vector<T>& v) {
  ASSERT_EQ(cudaMemcpy(d.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
}
template <typename T>
std::vector<T> download(const DeviceBuffer& d, std::size_t count) {
  std::vector<T> v(count);
  EXPECT_EQ(cudaMemcpy(v.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

// Activations with magnitudes that differ by row (1e-3 to 1e3), an all-zero row, and one
// outlier per row (the value its scale follows).
std::vector<std::uint16_t> make_activations(int rows, int k, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<std::uint16_t> x(static_cast<std::size_t>(rows) * k);
  for (int r = 0; r < rows; ++r) {
    const float mag = std::pow(10.f, static_cast<float>(r % 7) - 3.f);
    for (int c = 0; c < k; ++c) x[static_cast<std::size_t>(r) * k + c] = to_bf(r == 2 ? 0.f : mag * u(rng));
    if (r != 2) x[static_cast<std::size_t>(r) * k + rng() % k] = to_bf(mag * 7.5f);
  }
  return x;
}

// The quantisation's host reference: the rule of fp8_quant_layout.cuh, float arithmetic as the
// kernels do it, the conversion of cuda_fp8.h (host side).
struct HostQuant {
  std::vector<std::uint8_t> q;  // [rows_padded][k]
  std::vector<float> scales;
};

HostQuant host_quant(Fp8Scaling s, const std::vector<std::uint16_t>& x, int rows, int k, float static_scale) {
  const int padded = static_cast<int>(fp8_gemm_rows(s, rows));
  HostQuant h;
  h.q.assign(static_cast<std::size_t>(padded) * k, 0);
  h.scales.assign(fp8_act_scale_floats(s, rows, k), 0.f);
  const bool grouped = s == Fp8Scaling::block;
  const int units = grouped ? kf::groups_along_k(k) : 1;
  for (int r = 0; r < padded; ++r)
    for (int u = 0; u < units; ++u) {
      const int c0 = grouped ? u * kf::kGroupK : 0, c1 = grouped ? std::min(k, c0 + kf::kGroupK) : k;
      auto value = [&](int c) { return r < rows ? from_bf(x[static_cast<std::size_t>(r) * k + c]) : 0.f; };
      float scale = 1.f;
      if (s == Fp8Scaling::tensor) {
        scale = static_scale;
      } else if (r < rows) {
        float amax = 0.f;
        for (int c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(value(c)));
        scale = kf::scale_from_amax(amax);
      }
      const float inv = 1.0f / scale;
      for (int c = c0; c < c1; ++c)
        h.q[static_cast<std::size_t>(r) * k + c] = __nv_cvt_float_to_fp8(value(c) * inv, __NV_SATFINITE, __NV_E4M3);
      if (s == Fp8Scaling::channel) h.scales[r] = scale;
      if (grouped) h.scales[kf::group_scale_index(r, u, padded)] = scale;
    }
  if (s == Fp8Scaling::tensor) h.scales[0] = static_scale;
  return h;
}

// The quantisation's device buffers for one case: x uploaded, q and the scales poisoned
// (0xff bytes: e4m3 NaN codes and fp32 NaNs), the static scale written for the tensor mode.
struct QuantBuffers {
  DeviceBuffer x, q, scales;
  Fp8QuantArgs args;
  QuantBuffers(Fp8Scaling s, const std::vector<std::uint16_t>& host_x, int rows, int k, float static_scale)
      : x(host_x.size() * 2),
        q(static_cast<std::size_t>(fp8_gemm_rows(s, rows)) * k),
        scales(std::max<std::size_t>(16, fp8_act_scale_floats(s, rows, k) * sizeof(float))) {
    upload(x, host_x);
    poison();
    if (s == Fp8Scaling::tensor) upload(scales, std::vector<float>{static_scale});
    args.x = x.get();
    args.rows = rows;
    args.k = k;
    args.q = q.get();
    args.scales = scales.as<float>();
  }
  void poison() {
    EXPECT_EQ(cudaMemset(q.get(), 0xff, q.bytes()), cudaSuccess);
  }
};

void expect_same_quant(const HostQuant& want, const QuantBuffers& b, const char* which) {
  const std::vector<std::uint8_t> q = download<std::uint8_t>(b.q, want.q.size());
  const std::vector<float> s = download<float>(b.scales, want.scales.size());
  std::size_t bad_q = 0, bad_s = 0, first = want.q.size();
  for (std::size_t i = 0; i < q.size(); ++i)
    if (q[i] != want.q[i]) {
      ++bad_q;
      first = std::min(first, i);
    }
  for (std::size_t i = 0; i < s.size(); ++i) bad_s += std::memcmp(&s[i], &want.scales[i], 4) != 0;
  EXPECT_EQ(bad_q, 0u) << which << ": e4m3 values differ from the host reference (first at byte " << first << ": "
                       << (first < q.size() ? int(q[first]) : -1) << " vs "
                       << (first < q.size() ? int(want.q[first]) : -1) << ")";
  EXPECT_EQ(bad_s, 0u) << which << ": scales differ from the host reference";
}

TEST(Fp8ActQuant, KernelsMatchTheHostReferenceBitForBit) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(7);
  const std::vector<int> rows_list = quick() ? std::vector<int>{1, 5} : std::vector<int>{1, 3, 4, 16, 64, 256};
  const std::vector<int> k_list = quick() ? std::vector<int>{1088} : std::vector<int>{128, 1088, 7168};
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (Fp8Scaling s : kModes)
    for (int rows : rows_list)
      for (int k : k_list) {
        SCOPED_TRACE(::testing::Message() << to_string(s) << " rows=" << rows << " k=" << k);
        const std::vector<std::uint16_t> x = make_activations(rows, k, rng);
        const float static_scale = 0.0123f;
        const HostQuant want = host_quant(s, x, rows, k, static_scale);
        QuantBuffers b(s, x, rows, k, static_scale);
        // The uploads and the poison ran on the legacy stream, which a non-blocking stream does not
        // wait for.
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        // Programmatic dependent launch on a stream of its own, as the replay launches it.
        launch_fp8_act_quant(s, b.args, stream, true);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        expect_same_quant(want, b, "kernel");
        b.poison();
        launch_fp8_act_quant_reference(s, b.args, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        expect_same_quant(want, b, "reference kernel");
      }
  cudaStreamDestroy(stream);
}

TEST(Fp8ActQuant, RefusesWhatItCannotLoad) {
  Fp8QuantArgs a;
  a.rows = 4;
  a.k = 100;  // not a multiple of 8
  EXPECT_NE(fp8_act_quant_unsupported_reason(a).find("multiple of 8"), std::string::npos);
  EXPECT_THROW(launch_fp8_act_quant(Fp8Scaling::block, a, nullptr), InputError);
}

// ---------------------------------------------------------------- the GEMM

// An [n, k] e4m3 weight and its scales in the mode's layout; the block tensor's unused entries
// (k-blocks past ceil(k/128) in a row of L4) are NaN, so a layout read wrong shows.
struct HostWeights {
  std::vector<std::uint8_t> w;
  std::vector<float> scales;
};

HostWeights make_weights(Fp8Scaling s, int n, int k, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> pos(0.5f, 1.5f);
  HostWeights h;
  h.w.resize(static_cast<std::size_t>(n) * k);
  for (auto& b : h.w) {
    do b = static_cast<std::uint8_t>(rng() >> 56);
    while ((b & 0x7f) == 0x7f);  // NaN codes
  }
  h.scales.assign(std::max<std::size_t>(4, fp8_weight_scale_floats(s, n, k)), std::numeric_limits<float>::quiet_NaN());
  if (s == Fp8Scaling::block) {
    for (int nb = 0; nb < (n + 127) / 128; ++nb)
      for (int kb = 0; kb < kf::groups_along_k(k); ++kb) h.scales[kf::block_scale_index(nb, kb, k)] = 1e-2f * pos(rng);
  } else {
    for (std::size_t i = 0; i < fp8_weight_scale_floats(s, n, k); ++i) h.scales[i] = 1e-2f * pos(rng);
  }
  return h;
}

float weight_scale(Fp8Scaling s, const HostWeights& w, int c, int kk, int k) {
  switch (s) {
    case Fp8Scaling::channel: return w.scales[c];
    case Fp8Scaling::block: return w.scales[kf::block_scale_index(c / 128, kk / 128, k)];
    case Fp8Scaling::tensor: break;
  }
  return w.scales[0];
}

float act_scale(Fp8Scaling s, const HostQuant& a, int r, int kk, int padded) {
  switch (s) {
    case Fp8Scaling::channel: return a.scales[r];
    case Fp8Scaling::block: return a.scales[kf::group_scale_index(r, kk / 128, padded)];
    case Fp8Scaling::tensor: break;
  }
  return a.scales[0];
}

// y[r, c] over the operands and scales the GEMM read, in double; and the unquantised product
// (bf16 x, dequantised W) the quantisation approximates.
struct Reference {
  std::vector<double> exact, unquantised;
};

Reference reference(Fp8Scaling s, const HostQuant& a, const std::vector<std::uint16_t>& x, const HostWeights& w, int m,
                    int n, int k) {
  const int padded = static_cast<int>(fp8_gemm_rows(s, m));
  Reference ref;
  ref.exact.assign(static_cast<std::size_t>(m) * n, 0.0);
  ref.unquantised.assign(ref.exact.size(), 0.0);
  std::vector<double> wd(static_cast<std::size_t>(n) * k);
  for (int c = 0; c < n; ++c)
    for (int kk = 0; kk < k; ++kk)
      wd[static_cast<std::size_t>(c) * k + kk] =
          static_cast<double>(e4m3(w.w[static_cast<std::size_t>(c) * k + kk])) * weight_scale(s, w, c, kk, k);
  for (int r = 0; r < m; ++r) {
    std::vector<double> ad(k), xd(k);
    for (int kk = 0; kk < k; ++kk) {
      ad[kk] = static_cast<double>(e4m3(a.q[static_cast<std::size_t>(r) * k + kk])) * act_scale(s, a, r, kk, padded);
      xd[kk] = from_bf(x[static_cast<std::size_t>(r) * k + kk]);
    }
    for (int c = 0; c < n; ++c) {
      const double* wr = wd.data() + static_cast<std::size_t>(c) * k;
      double e = 0, u = 0;
      for (int kk = 0; kk < k; ++kk) {
        e += ad[kk] * wr[kk];
        u += xd[kk] * wr[kk];
      }
      ref.exact[static_cast<std::size_t>(r) * n + c] = e;
      ref.unquantised[static_cast<std::size_t>(r) * n + c] = u;
    }
  }
  return ref;
}

struct Outcome {
  double rel = 0;
  std::size_t nan = 0;
};

// ||y - scale * ref|| / ||scale * ref|| over the first m rows; NaN elements counted apart.
Outcome compare(const std::vector<std::uint16_t>& y, const std::vector<double>& ref, double scale = 1.0) {
  Outcome o;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = from_bf(y[i]), r = scale * ref[i];
    if (!std::isfinite(v)) {
      ++o.nan;
      continue;
    }
    num += (v - r) * (v - r);
    den += r * r;
  }
  o.rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return o;
}

// bf16 output (2^-9 relative) and the accumulation (Hopper's fast fp8 accumulation, per tensor and
// per channel, keeps about 14 bits): about a percent of the norm at worst; a wrong scale or layout
// is off by tens of percent (the scales vary by 3x).
constexpr double kMaxRel = 2e-2;
// The quantised product against the unquantised one: e4m3 keeps 3 mantissa bits (at most 2^-4
// relative per value), so a few percent; a scale applied the wrong way round is off by orders.
constexpr double kMaxQuantRel = 0.08;

struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() { EXPECT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS); }
  ~LtHandle() {
    if (h) cublasLtDestroy(h);
  }
};

void gemm_case(cublasLtHandle_t lt, Fp8Scaling s, int m, int n, int k, std::mt19937_64& rng) {
  SCOPED_TRACE(::testing::Message() << to_string(s) << " m=" << m << " n=" << n << " k=" << k);
  const int padded = static_cast<int>(fp8_gemm_rows(s, m));
  const std::vector<std::uint16_t> x = make_activations(m, k, rng);
  // The quantisation kernel makes the GEMM's activations and scales, as in the replay.
  QuantBuffers act(s, x, m, k, 0.02f);
  launch_fp8_act_quant(s, act.args, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  HostQuant a;
  a.q = download<std::uint8_t>(act.q, static_cast<std::size_t>(padded) * k);
  a.scales = download<float>(act.scales, fp8_act_scale_floats(s, m, k));
  const HostWeights w = make_weights(s, n, k, rng);
  DeviceBuffer dw(w.w.size()), dws(w.scales.size() * sizeof(float)), dy(static_cast<std::size_t>(padded) * n * 2);
  DeviceBuffer ws(kWorkspace);
  upload(dw, w.w);
  upload(dws, w.scales);
  const Reference ref = reference(s, a, x, w, m, n, k);

  std::unique_ptr<LtGemm> gemm;
  try {
    gemm = std::make_unique<LtGemm>(lt, nullptr, m, n, k, DType::fp8, kWorkspace, dws.as<const float>(),
                                    act.scales.as<const float>(), s);
  } catch (const DeviceError& e) {
    // cuBLASLt proposing nothing for a shape is a result, said clearly; never garbage.
    const std::string why = e.what();
    EXPECT_NE(why.find(to_string(s)), std::string::npos) << why;
    if (k % 128 == 0) ADD_FAILURE() << "cuBLASLt refused an fp8 GEMM with k a multiple of 128: " << why;
    else std::printf("[ note ] %s m=%d n=%d k=%d: %s\n", to_string(s), m, n, k, why.c_str());
    return;
  }
  EXPECT_EQ(gemm->rows(), padded);
  // Quick (compute-sanitizer) runs: the heuristic's proposals, untuned.
  if (!quick()) gemm->add_all_candidates();
  int ran = 0;
  for (int c = 0; c < gemm->candidate_count(); ++c) {
    ASSERT_EQ(cudaMemset(dy.get(), 0xff, dy.bytes()), cudaSuccess);
    const cublasStatus_t st = gemm->run_candidate(c, dw.get(), act.q.get(), dy.get(), ws.get(), nullptr);
    if (st != CUBLAS_STATUS_SUCCESS) {
      (void)cudaGetLastError();
      continue;
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << gemm->candidate(c).name;
    ++ran;
    const Outcome o = compare(download<std::uint16_t>(dy, ref.exact.size()), ref.exact);
    EXPECT_EQ(o.nan, 0u) << gemm->candidate(c).name;
    EXPECT_LT(o.rel, kMaxRel) << gemm->candidate(c).name;
  }
  EXPECT_GT(ran, 0) << "no candidate of the fp8 GEMM ran";

  // The tuned choice, with this call's scales given, and with the weights' scales doubled.
  if (!quick()) gemm->tune(dw.get(), act.q.get(), dy.get(), ws.get());
  ASSERT_EQ(cudaMemset(dy.get(), 0xff, dy.bytes()), cudaSuccess);
  gemm->run(dw.get(), act.q.get(), dy.get(), ws.get(), nullptr, LtScales{dws.as<const float>(), act.scales.as<const float>()});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint16_t> y = download<std::uint16_t>(dy, ref.exact.size());
  const Outcome tuned = compare(y, ref.exact);
  EXPECT_EQ(tuned.nan, 0u);
  EXPECT_LT(tuned.rel, kMaxRel) << gemm->describe();
  if (s != Fp8Scaling::tensor) {
    EXPECT_LT(compare(y, ref.unquantised).rel, kMaxQuantRel);
  }

  std::vector<float> doubled = w.scales;
  for (float& v : doubled) v *= 2.f;
  DeviceBuffer dws2(doubled.size() * sizeof(float));
  upload(dws2, doubled);
  gemm->run(dw.get(), act.q.get(), dy.get(), ws.get(), nullptr, LtScales{dws2.as<const float>(), nullptr});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_LT(compare(download<std::uint16_t>(dy, ref.exact.size()), ref.exact, 2.0).rel, kMaxRel)
      << "a call's own weight scales";
  // And back to the defaults the GEMM was made with.
  gemm->run(dw.get(), act.q.get(), dy.get(), ws.get(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_LT(compare(download<std::uint16_t>(dy, ref.exact.size()), ref.exact).rel, kMaxRel) << "the default scales";
  EXPECT_THROW(gemm->run(dw.get(), act.q.get(), dy.get(), ws.get(), nullptr,
                         LtScales{dws.as<const float>() + 1, nullptr}),
               DeviceError);
}

TEST(Fp8Gemm, EveryScalingMatchesTheReference) {
  SKIP_WITHOUT_SM90();
  LtHandle lt;
  std::mt19937_64 rng(11);
  struct Shape {
    int n, k;
  };
  // k = 1088: 8.5 groups of 128 (a partial last group and block).
  const std::vector<Shape> shapes = quick() ? std::vector<Shape>{{256, 1088}}
                                            : std::vector<Shape>{{256, 2048}, {384, 1088}};
  const std::vector<int> rows = quick() ? std::vector<int>{1, 16} : std::vector<int>{1, 4, 16, 64, 128, 256};
  for (Fp8Scaling s : kModes)
    for (const Shape& sh : shapes)
      for (int m : rows) gemm_case(lt.h, s, m, sh.n, sh.k, rng);
}

// What cuBLASLt's fp8 GEMMs cannot take is refused when the GEMM is made, with the reason, before
// any library call.
TEST(Fp8Gemm, RefusesShapesCublasLtCannotTake) {
  const float* scale = reinterpret_cast<const float*>(std::uintptr_t{256});
  for (Fp8Scaling s : kModes) {
    EXPECT_NE(fp8_lt_unsupported_reason(s, 4, 1024, 1000).find("multiple of 16"), std::string::npos);
    EXPECT_NE(fp8_lt_unsupported_reason(s, 4, 1020, 1024).find("multiple of 8"), std::string::npos);
    EXPECT_TRUE(fp8_lt_unsupported_reason(s, 1, 1024, 1088).empty());
    try {
      LtGemm g(nullptr, nullptr, 4, 1024, 1000, DType::fp8, kWorkspace, scale, scale, s);
      ADD_FAILURE() << "an fp8 GEMM with k = 1000 was made";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("multiple of 16"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(fp8_gemm_rows(Fp8Scaling::block, 1), 4);
  EXPECT_EQ(fp8_gemm_rows(Fp8Scaling::block, 17), 20);
  EXPECT_EQ(fp8_gemm_rows(Fp8Scaling::channel, 1), 1);
  EXPECT_EQ(fp8_act_scale_floats(Fp8Scaling::block, 1, 1088), 9u * 4u);
  EXPECT_EQ(fp8_weight_scale_floats(Fp8Scaling::block, 1280, 8192), 10u * 64u);
  EXPECT_EQ(fp8_weight_scale_floats(Fp8Scaling::block, 576, 1088), 5u * 12u);
}

// ---------------------------------------------------------------- the replay

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  std::string old;
  bool had = false;
  ScopedEnv(const char* n, const char* v) : name(n) {
    if (const char* o = std::getenv(n)) {
      had = true;
      old = o;
    }
    setenv(n, v, 1);
  }
  ~ScopedEnv() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};

Step quant_and_gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  Step step;
  step.name = "verify";
  Op q;
  q.kind = OpKind::elementwise;
  q.name = "act_quant_fp8";
  q.layer = 0;
  q.tokens = m;
  q.hidden = k;
  q.operands = 2;
  Op g;
  g.kind = OpKind::gemm;
  g.name = "o_proj";
  g.layer = 0;
  g.m = m, g.n = n, g.k = k;
  g.dtype = DType::fp8;
  step.ops = {q, g};
  return step;
}

// Runs the two ops once; the details of both.
std::pair<std::string, std::string> replay_details(const Step& step) {
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
  CommGroupConfig cc;
  cc.strategy = "ideal";
  cc.ranks = 1;
  cc.devices = {0};
  auto group = create_ideal_comm_group(cc);
  RankProgram program(step, 0, group->rank(0), nullptr, ProgramOptions{});
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (std::size_t i = 0; i < program.size(); ++i) program.enqueue(i, s);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaStreamDestroy(s);
  return {program.detail(0), program.detail(1)};
}

TEST(Fp8Replay, DenseFp8GemmsRunW8A8OnCublasLt) {
  SKIP_WITHOUT_SM90();
  const Step step = quant_and_gemm(32, 2048, 1024);  // 32 rows: beyond the GEMV kernel
  for (const char* mode : {"block", "channel", "tensor"}) {
    SCOPED_TRACE(mode);
    ScopedEnv scaling(kFp8ScalingEnv, mode);
    const auto [quant, gemm] = replay_details(step);
    EXPECT_NE(quant.find("fp8 activation quantisation kernel"), std::string::npos) << quant;
    EXPECT_NE(quant.find("into the fp8 GEMM after it"), std::string::npos) << quant;
    EXPECT_NE(gemm.find("cublasLt fp8 W8A8"), std::string::npos) << gemm;
  }
  {
    // At 4 rows the rule keeps the GEMV kernel; the quantisation still runs, for its cost.
    const auto [quant, gemm] = replay_details(quant_and_gemm(4, 2048, 1024));
    EXPECT_NE(gemm.find("weight-only GEMM"), std::string::npos) << gemm;
    EXPECT_NE(quant.find("reads bf16"), std::string::npos) << quant;
  }
  {
    ScopedEnv old_path(kFp8GemmEnv, "weight_only");
    const auto [quant, gemm] = replay_details(step);
    EXPECT_NE(gemm.find("weight-only GEMM"), std::string::npos) << gemm;
    EXPECT_NE(quant.find("streamed by the residual add kernel"), std::string::npos) << quant;
  }
  {
    ScopedEnv bad(kFp8GemmEnv, "fastest");
    EXPECT_THROW(replay_details(step), InputError);
  }
}

}  // namespace
}  // namespace eaglesim::cuda
