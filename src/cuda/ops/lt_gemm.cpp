#include "cuda/ops/lt_gemm.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/median.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/cuda_graph.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "cuda/ops/gemm_fingerprint.hpp"
#include "cuda/runtime/graph_timer.hpp"
#include "cuda/ops/l2_read_flush.hpp"
#include "cuda/runtime/stream.hpp"

namespace eaglesim::cuda {

namespace {

// The timing (docs/kernels/dense-gemm.md): every candidate in a graph of kCallsPerGraph calls,
// each after a read of twice the L2 (l2_read_flush.hpp: the weights of a replayed step's GEMM
// were last read a layer ago), the flush's own time subtracted. Screening: kScreenRuns replays
// each (one for a candidate kClearlySlower than the best so far), the fastest counting. Final:
// the candidates within kFinalistMargin (+ kFinalistSlackUs) of the best, at most kFinalists,
// plus cuBLAS's default, kFinalRuns replays each, interleaved so that clock drift falls on all
// alike, the median counting.
constexpr int kCallsPerGraph = 2;
constexpr int kScreenRuns = 2;
constexpr int kFinalists = 4;
constexpr double kFinalistMargin = 0.05;
constexpr double kFinalistSlackUs = 0.5;
constexpr int kFinalRuns = 5;
// A candidate whose first screening replay takes this many times the best so far gets no second.
constexpr double kClearlySlower = 2.0;
// Past this much time on a shape, the candidates not yet screened are skipped (the reference
// and the heuristic's first proposals come first): long compute-bound GEMMs of prefill steps.
constexpr double kScreenBudgetS = 1.0;
// Keeps the GPU busy while the host submits a graph of a few nodes (graph_timer.hpp).
constexpr double kPreRollUs = 20;

// The choice per shape, for the rest of the process: calibration and the replay build many
// programs with the same GEMM shapes.
using ShapeKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, int, int, std::size_t, bool>;
std::mutex& remembered_mutex() {
  static std::mutex m;
  return m;
}
std::map<ShapeKey, GemmCandidate>& remembered_choices() {
  static std::map<ShapeKey, GemmCandidate> choices;
  return choices;
}

bool fits_int(std::int64_t v) { return v > 0 && v <= INT_MAX; }

bool scale_aligned(const float* p) { return reinterpret_cast<std::uintptr_t>(p) % kLtScaleAlignment == 0; }

// cuBLASLt's scale modes of the weights (A) and the activations (B) in each of our modes.
std::pair<std::int32_t, std::int32_t> lt_scale_modes(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::channel:
      return {CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F};
    case Fp8Scaling::block:
      return {CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F};
    case Fp8Scaling::tensor: break;
  }
  return {CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F};
}

// The buffers tune() runs every candidate on.
struct GemmOperands {
  const void* weight;
  const void* x;
  void* y;
  void* workspace;
};

// Weights of more than twice the L2 flush it themselves: each call streams them through the
// cache and finds none of them left from the call before. No flush then, and nothing to
// subtract (the flush kernel's time varies a little; leaving it out leaves out its noise).
std::optional<L2ReadFlush> flush_unless_streamed(double weight_bytes) {
  if (weight_bytes <= 2.0 * static_cast<double>(current_l2_bytes())) return std::optional<L2ReadFlush>(std::in_place);
  return std::nullopt;
}

// What one tune() times the candidates with: a stream of its own, the fingerprint's scratch, the
// L2 flush before each call (if any) and the flush's own time.
struct TuningBench {
  TuningBench(const LtGemm& gemm_, const GemmOperands& io_, double weight_bytes)
      : gemm(gemm_),
        io(io_),
        scratch(5 * sizeof(double)),
        flush(flush_unless_streamed(weight_bytes)),
        timer("GEMM tuning", kPreRollUs, kNoDeadline) {}

  // kCallsPerGraph calls of candidate c, each after the flush; c < 0: the L2 flushes alone.
  std::optional<CudaGraph> capture(int c) {
    try {
      return CudaGraph::capture(stream.get(), [&](cudaStream_t s) {
        for (int r = 0; r < kCallsPerGraph; ++r) {
          if (flush) flush->launch(s);
          if (c >= 0) EAGLESIM_CUBLAS_CHECK(gemm.run_candidate(c, io.weight, io.x, io.y, io.workspace, s));
        }
      });
    } catch (const DeviceError&) {
      (void)cudaGetLastError();
      return std::nullopt;
    }
  }
  double replay_us(const CudaGraph& g) {
    timer.launch(g, stream.get());
    return timer.finish("a GEMM candidate's graph");
  }
  // The flushes' graph and its fastest of kScreenRuns replays (none without a flush).
  void time_flush_alone() {
    if (!flush) return;
    flush_only = capture(-1);
    if (!flush_only) throw DeviceError("GEMM tuning: cannot capture the L2 flush in a graph");
    flush_us = std::numeric_limits<double>::infinity();
    for (int r = 0; r < kScreenRuns; ++r) flush_us = std::min(flush_us, replay_us(*flush_only));
  }

  const LtGemm& gemm;
  const GemmOperands io;
  Stream stream;
  const DeviceBuffer scratch;
  std::optional<L2ReadFlush> flush;
  GraphTimer timer;
  std::optional<CudaGraph> flush_only;
  double flush_us = 0;
};

// The candidates screened so far: the reference's output, and per candidate its graph (none:
// rejected or not reached) and screening time.
struct Screening {
  explicit Screening(int n) : graphs(n), screen_us(n, std::numeric_limits<double>::infinity()) {}
  int reference = -1;
  GemmFingerprint reference_print;
  std::vector<std::optional<CudaGraph>> graphs;
  std::vector<double> screen_us;
  double best_screen_us = std::numeric_limits<double>::infinity();
};

void reject(GemmTuning& tuning, const LtGemm& gemm, int c, const std::string& why) {
  tuning.rejected.push_back(gemm.candidate(c).name + ": " + why);
}

// 1. Once outside a graph (which also loads its kernels, as a capture cannot), into a
// poisoned output (NaN: an algorithm that leaves elements unwritten fails), the output
// compared with the reference's. False: rejected.
bool check_output(TuningBench& bench, Screening& s, int c, std::size_t y_count, GemmTuning& tuning) {
  EAGLESIM_CUDA_CHECK(cudaMemsetAsync(bench.io.y, 0xff, y_count * 2, bench.stream.get()));
  const cublasStatus_t st =
      bench.gemm.run_candidate(c, bench.io.weight, bench.io.x, bench.io.y, bench.io.workspace, bench.stream.get());
  if (st != CUBLAS_STATUS_SUCCESS) {
    (void)cudaGetLastError();  // a refused launch leaves its error for the next check to find
    reject(tuning, bench.gemm, c, fmt::format("does not run ({})", cublasLtGetStatusName(st)));
    return false;
  }
  const GemmFingerprint print = fingerprint_bf16(bench.io.y, y_count, bench.scratch.as<double>(), bench.stream.get());
  if (s.reference < 0) {
    if (!std::isfinite(print.sum_squares)) {
      reject(tuning, bench.gemm, c, "output not finite");
      return false;
    }
    s.reference = c;
    s.reference_print = print;
  } else if (const std::string why = fingerprint_mismatch(print, s.reference_print); !why.empty()) {
    reject(tuning, bench.gemm, c,
           fmt::format("output differs from {}'s: {}", bench.gemm.candidate(s.reference).name, why));
    return false;
  }
  return true;
}

// 2. Screening, in its graph. False: rejected.
bool screen_in_graph(TuningBench& bench, Screening& s, int c, GemmTuning& tuning) {
  s.graphs[c] = bench.capture(c);
  if (!s.graphs[c]) {
    reject(tuning, bench.gemm, c, "cannot be captured in a graph");
    return false;
  }
  for (int r = 0; r < kScreenRuns; ++r) {
    s.screen_us[c] =
        std::min(s.screen_us[c], std::max(0.0, bench.replay_us(*s.graphs[c]) - bench.flush_us) / kCallsPerGraph);
    if (s.best_screen_us > 0 && s.screen_us[c] > kClearlySlower * s.best_screen_us) break;  // no finalist either way
  }
  s.best_screen_us = std::min(s.best_screen_us, s.screen_us[c]);
  return true;
}

// Checks and screens the candidates in `order` until the shape's time budget runs out.
Screening screen_candidates(TuningBench& bench, const std::vector<int>& order, int n, std::size_t y_count,
                            std::chrono::steady_clock::time_point start, GemmTuning& tuning) {
  Screening s(n);
  for (int c : order) {
    if (tuning.timed >= 2 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > kScreenBudgetS) {
      ++tuning.skipped;
      continue;
    }
    if (!check_output(bench, s, c, y_count, tuning)) continue;
    if (!screen_in_graph(bench, s, c, tuning)) continue;
    ++tuning.timed;
  }
  return s;
}

// The candidates within kFinalistMargin (+ kFinalistSlackUs) of the fastest screened, at most
// kFinalists, plus cuBLAS's default; `ranked`: the screened ones, fastest first.
std::vector<int> pick_finalists(const LtGemm& gemm, const std::vector<int>& ranked,
                                const std::vector<double>& screen_us) {
  const double bound = screen_us[ranked[0]] * (1 + kFinalistMargin) + kFinalistSlackUs;
  std::vector<int> finalists;
  for (int c : ranked)
    if (static_cast<int>(finalists.size()) < kFinalists && screen_us[c] <= bound) finalists.push_back(c);
  for (int c : ranked)
    if (gemm.candidate(c).source == GemmSource::cublas_default &&
        std::find(finalists.begin(), finalists.end(), c) == finalists.end())
      finalists.push_back(c);
  return finalists;
}

// The finalist with the lowest median of kFinalRuns interleaved replays, and its µs per call
// less the flush's median.
struct FinalChoice {
  int candidate = 0;
  double us = 0;
};

FinalChoice time_finalists(TuningBench& bench, const Screening& s, const std::vector<int>& finalists) {
  std::vector<std::vector<double>> samples(finalists.size());
  std::vector<double> flush_samples;
  for (int r = 0; r < kFinalRuns; ++r) {
    flush_samples.push_back(bench.flush_only ? bench.replay_us(*bench.flush_only) : 0.0);
    for (std::size_t f = 0; f < finalists.size(); ++f) samples[f].push_back(bench.replay_us(*s.graphs[finalists[f]]));
  }
  std::size_t best = 0;
  for (std::size_t f = 1; f < finalists.size(); ++f)
    if (median(samples[f]) < median(samples[best])) best = f;
  return {finalists[best], std::max(0.0, (median(samples[best]) - median(flush_samples)) / kCallsPerGraph)};
}

}  // namespace

UnitFp8Scales::UnitFp8Scales() : buffer_(2 * kLtScaleAlignment) {
  constexpr std::size_t stride = kLtScaleAlignment / sizeof(float);
  float host[2 * stride] = {};
  host[0] = host[stride] = 1.f;
  EAGLESIM_CUDA_CHECK(cudaMemcpy(buffer_.get(), host, sizeof(host), cudaMemcpyHostToDevice));
}

LtGemm::LtGemm(cublasLtHandle_t lt, cublasHandle_t blas, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
               std::size_t workspace_bytes, const float* a_scale, const float* b_scale, Fp8Scaling scaling)
    : handle_(lt),
      blas_(blas),
      m_(dtype == DType::fp8 ? fp8_gemm_rows(scaling, m) : m),
      n_(n),
      k_(k),
      dtype_(dtype),
      scaling_(dtype == DType::fp8 ? scaling : Fp8Scaling::tensor),
      workspace_bytes_(workspace_bytes) {
  if (dtype != DType::bf16 && dtype != DType::fp8)
    throw InputError(fmt::format("cuBLASLt replay GEMM takes bf16 or fp8 weights, got {}", to_string(dtype)));
  const bool fp8 = dtype == DType::fp8;
  if (fp8) {
    if (std::string why = fp8_lt_unsupported_reason(scaling, m, n, k); !why.empty())
      throw InputError(fmt::format("fp8 GEMM m={} n={} k={} ({}): {}", m, n, k, describe_scaling(scaling), why));
    if (!a_scale || !b_scale) throw DeviceError("fp8 GEMM needs device scale pointers");
    for (const float* p : {a_scale, b_scale})
      if (!scale_aligned(p))
        throw DeviceError(fmt::format("fp8 GEMM m={} n={} k={}: scale pointer {} is not {}-byte aligned (cuBLASLt "
                                      "refuses such a GEMM at launch)",
                                      m, n, k, static_cast<const void*>(p), kLtScaleAlignment));
    default_scales_ = current_scales_ = LtScales{a_scale, b_scale};
  }
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  try {
    EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    // Serving stacks run per-tensor and per-channel fp8 GEMMs with fast accumulation (the CUTLASS
    // kernels of vLLM and SGLang); block-scaled GEMMs promote the partial sums every 128 of k
    // anyway, and PyTorch refuses fast accumulation with them.
    const bool fast = fp8 && scaling_ != Fp8Scaling::block;
    if (fp8) {
      EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof(a_scale)));
      EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof(b_scale)));
      set_fp8_scaling(fast);
    }
    // A = W stored [n, k] row-major = k x n column-major (ld k), used transposed.
    EAGLESIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, in_type, k, n, k));
    // B = x stored [m, k] row-major = k x m column-major (ld k).
    EAGLESIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, in_type, k, m_, k));
    // C = D = y stored [m, n] row-major = n x m column-major (ld n).
    EAGLESIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c_, CUDA_R_16BF, n, m_, n));
    const GemmShapeDescriptors d{handle_, op_, a_, b_, c_, in_type, k_, workspace_bytes_};
    const std::string what =
        fp8 ? fmt::format("fp8 ({}: {})", to_string(scaling_), describe_scaling(scaling_)) : to_string(dtype);
    try {
      candidates_ = heuristic_candidates(d);
    } catch (const DeviceError& first) {
      // Without fast accumulation, in case the library has kernels for the mode only so.
      if (!fast) throw DeviceError(fmt::format("GEMM m={} n={} k={} {}: {}", m_, n, k, what, first.what()));
      set_fp8_scaling(false);
      try {
        candidates_ = heuristic_candidates(d);
      } catch (const DeviceError& e) {
        throw DeviceError(fmt::format("GEMM m={} n={} k={} {}: {} (with and without fast accumulation)", m_, n, k,
                                      what, e.what()));
      }
    }
  } catch (...) {
    release();
    throw;
  }
}

void LtGemm::set_fp8_scaling(bool fast_accumulation) {
  const auto [a_mode, b_mode] = lt_scale_modes(scaling_);
  EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode, sizeof(a_mode)));
  EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode, sizeof(b_mode)));
  const std::int8_t fast = fast_accumulation ? 1 : 0;
  EAGLESIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
}

bool LtGemm::point_scales(const LtScales& scales) const {
  const float* w = scales.weight ? scales.weight : default_scales_.weight;
  const float* a = scales.act ? scales.act : default_scales_.act;
  if (!scale_aligned(w) || !scale_aligned(a)) return false;
  if (w != current_scales_.weight) {
    if (cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w, sizeof(w)) !=
        CUBLAS_STATUS_SUCCESS)
      return false;
    current_scales_.weight = w;
  }
  if (a != current_scales_.act) {
    if (cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a, sizeof(a)) !=
        CUBLAS_STATUS_SUCCESS)
      return false;
    current_scales_.act = a;
  }
  return true;
}

void LtGemm::release() noexcept {
  if (c_) cublasLtMatrixLayoutDestroy(c_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  c_ = b_ = a_ = nullptr;
  op_ = nullptr;
}

LtGemm::~LtGemm() { release(); }

cublasStatus_t LtGemm::run_candidate(int c, const void* weight, const void* x, void* y, void* workspace,
                                     cudaStream_t stream, const LtScales& scales) const {
  const float alpha = 1.f, beta = 0.f;
  const GemmCandidate& cand = candidates_[c];
  if (dtype_ == DType::fp8 && !point_scales(scales)) return CUBLAS_STATUS_INVALID_VALUE;
  if (cand.source != GemmSource::cublas_default)
    return cublasLtMatmul(handle_, op_, &alpha, weight, a_, x, b_, &beta, y, c_, y, c_, &cand.algo, workspace,
                          workspace_bytes_, stream);
  // As at::cuda::blas::gemm<at::BFloat16> calls it: default math (reduced-precision reductions
  // allowed), fp32 compute, the library's default tensor-op algorithm. cublasSetStream resets the
  // workspace, so the workspace is set after it, on every call (the handle may serve other shapes).
  cublasStatus_t st = cublasSetStream(blas_, stream);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasSetWorkspace(blas_, workspace, workspace_bytes_);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  const int m = static_cast<int>(m_), n = static_cast<int>(n_), k = static_cast<int>(k_);
  return cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, weight, CUDA_R_16BF, k, x, CUDA_R_16BF, k,
                      &beta, y, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
}

void LtGemm::run(const void* weight, const void* x, void* y, void* workspace, cudaStream_t stream,
                 const LtScales& scales) const {
  if (dtype_ == DType::fp8)
    for (const float* p : {scales.weight, scales.act})
      if (p && !scale_aligned(p))
        throw DeviceError(fmt::format("fp8 GEMM m={} n={} k={}: scale pointer {} is not {}-byte aligned", m_, n_, k_,
                                      static_cast<const void*>(p), kLtScaleAlignment));
  EAGLESIM_CUBLAS_CHECK(run_candidate(chosen_, weight, x, y, workspace, stream, scales));
}

void LtGemm::add_all_candidates() {
  if (all_candidates_) return;
  all_candidates_ = true;
  const GemmShapeDescriptors d{handle_, op_, a_, b_, c_, dtype_ == DType::fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF, k_,
                               workspace_bytes_};
  const std::vector<GemmCandidate> split = split_k_candidates(d, candidates_);
  candidates_.insert(candidates_.end(), split.begin(), split.end());
  const std::vector<GemmCandidate> enumerated = enumerated_candidates(d, candidates_);
  candidates_.insert(candidates_.end(), enumerated.begin(), enumerated.end());
  // cublasGemmEx has no fp8 operands and takes int dimensions.
  if (blas_ && dtype_ == DType::bf16 && fits_int(m_) && fits_int(n_) && fits_int(k_))
    candidates_.push_back(cublas_default_candidate());
}

int LtGemm::reference_candidate() const {
  for (int c = 0; c < candidate_count(); ++c)
    if (candidates_[c].source == GemmSource::cublas_default) return c;
  return 0;
}

void LtGemm::tune(const void* weight, const void* x, void* y, void* workspace) {
  const auto start = std::chrono::steady_clock::now();
  tuning_ = GemmTuning{};
  tuning_.done = true;
  int device = 0;
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
  const ShapeKey key{device, m_, n_, k_, static_cast<int>(dtype_), static_cast<int>(scaling_), workspace_bytes_,
                     blas_ != nullptr};
  std::optional<GemmCandidate> earlier;
  {
    const std::lock_guard<std::mutex> lock(remembered_mutex());
    auto it = remembered_choices().find(key);
    if (it != remembered_choices().end()) earlier = it->second;
  }
  if (earlier) {
    auto same = std::find_if(candidates_.begin(), candidates_.end(),
                             [&](const GemmCandidate& c) { return c.name == earlier->name; });
    if (same == candidates_.end()) same = candidates_.insert(candidates_.end(), *earlier);
    *same = *earlier;
    chosen_ = static_cast<int>(same - candidates_.begin());
    tuning_.remembered = true;
  } else {
    add_all_candidates();
    time_candidates(weight, x, y, workspace);
    const std::lock_guard<std::mutex> lock(remembered_mutex());
    remembered_choices()[key] = candidates_[chosen_];
  }
  tuning_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void LtGemm::time_candidates(const void* weight, const void* x, void* y, void* workspace) {
  const auto start = std::chrono::steady_clock::now();
  const int n = candidate_count();
  const std::size_t y_count = static_cast<std::size_t>(m_) * static_cast<std::size_t>(n_);
  const double weight_bytes = static_cast<double>(n_) * static_cast<double>(k_) * bytes_per_element(dtype_);
  TuningBench bench(*this, GemmOperands{weight, x, y, workspace}, weight_bytes);
  bench.time_flush_alone();

  // The reference first, then the rest in the order of the list (the heuristic's best first).
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_partition(order.begin(), order.end(), [ref = reference_candidate()](int c) { return c == ref; });
  const Screening screened = screen_candidates(bench, order, n, y_count, start, tuning_);
  if (screened.reference < 0)
    throw DeviceError(fmt::format("GEMM m={} n={} k={} {}: no algorithm runs ({})", m_, n_, k_, to_string(dtype_),
                                  tuning_.rejected.empty() ? "none proposed" : tuning_.rejected.front()));

  // 3. The finalists, timed against each other.
  std::vector<int> ranked;
  for (int c = 0; c < n; ++c)
    if (screened.graphs[c]) ranked.push_back(c);
  if (ranked.empty()) throw DeviceError(fmt::format("GEMM m={} n={} k={}: no algorithm runs in a graph", m_, n_, k_));
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](int a, int b) { return screened.screen_us[a] < screened.screen_us[b]; });
  const FinalChoice choice = time_finalists(bench, screened, pick_finalists(*this, ranked, screened.screen_us));
  chosen_ = choice.candidate;
  tuning_.us = choice.us;
  EAGLESIM_CUDA_CHECK(cudaStreamSynchronize(bench.stream.get()));
}

std::string LtGemm::describe() const {
  std::string how = "cuBLASLt heuristic, untuned";
  if (tuning_.remembered) how = "tuned earlier for this shape";
  else if (tuning_.done && tuning_.timed > 0)
    how = fmt::format("fastest of {} timed{}, {:.1f} us per call in a graph, cold L2", tuning_.timed,
                      tuning_.skipped ? fmt::format(" ({} skipped: time budget)", tuning_.skipped) : "", tuning_.us);
  const std::string type =
      dtype_ == DType::fp8 ? fmt::format("fp8 {}-scaled", to_string(scaling_)) : std::string(to_string(dtype_));
  return fmt::format("{} for m={} n={} k={} {}, ws={} ({})", candidates_[chosen_].name, m_, n_, k_, type,
                     candidates_[chosen_].workspace, how);
}

}  // namespace eaglesim::cuda
