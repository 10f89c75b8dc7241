// bench-comm on real GPUs: for each message size and strategy, (1) correctness of one eager call
// against a float64 host reference plus bitwise equality across ranks (the reference and the
// comparisons of allreduce_self_check.hpp), (2) time per allreduce back-to-back inside one CUDA
// graph, (3) time per allreduce "in context", after a GEMM of the chosen shape, as
// (GEMM+allreduce graph) - (GEMM-only graph), each graph timed by a GraphTimer per rank. One host
// thread drives every rank; NCCL calls of one step are wrapped in an NCCL group as NCCL requires
// for that.
#include "cuda/measure/bench_comm_gpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "core/median.hpp"
#include "core/mpi_launch.hpp"
#include "cuda/comm/allreduce_self_check.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/cuda_graph.hpp"
#include "cuda/comm/custom_comm.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "cuda/runtime/device_guard.hpp"
#include "cuda/runtime/graph_timer.hpp"
#include "cuda/comm/nccl_comms.hpp"
#include "cuda/ops/replay_kernels.hpp"
#include "cuda/runtime/stream.hpp"
#include "cuda/runtime/unique_handle.hpp"
#include "calibration/gpu_tools.hpp"

namespace eaglesim::cuda {

namespace {

// Relative size of one rounding of the output type (a full ulp, to leave room for the fp32 sum).
double ulp_of(DType t) { return t == DType::bf16 ? 1.0 / 128 : t == DType::fp16 ? 1.0 / 1024 : 1.0 / (1 << 22); }

// How far a sum of random data may be from the float64 reference: one rounding of the output
// plus the fp32 accumulation's error over the ranks; NCCL sums in an order of its own (a rounding
// per rank); a lossy strategy adds its bound (the group's amax * 2^-4 per rank).
SumTolerance bench_tolerance(const std::string& strategy, DType t, int ranks) {
  const double u = ulp_of(t);
  SumTolerance tol;
  if (is_nccl(strategy)) {
    tol.of_abs_sum = ranks * u;
    return tol;
  }
  tol.of_sum = u;
  tol.of_abs_sum = ranks * 1.2e-7;
  if (!is_exact(strategy)) tol.of_group_amax = 1.0 / 16;
  return tol;
}

// cuBLAS for the context GEMM, on the device current when it is made.
class BlasHandle {
 public:
  BlasHandle() { EAGLESIM_CUBLAS_CHECK(cublasCreate(handle_.out())); }
  cublasHandle_t get() const { return handle_.get(); }

 private:
  UniqueHandle<cublasHandle_t, cublasDestroy> handle_;
};

// Everything of one rank, made (and to be destroyed) with its GPU current.
struct RankState {
  RankState(int r, const CommBenchRequest& q, std::size_t max_bytes)
      : device(r),
        workspace(DeviceBuffer::zeroed(r, 32u << 20)),  // preset so cuBLAS never allocates inside capture
        in(DeviceBuffer::zeroed(r, max_bytes)),
        out(DeviceBuffer::zeroed(r, max_bytes)),
        residual(DeviceBuffer::zeroed(r, max_bytes)),
        weight(DeviceBuffer::zeroed(r, max_bytes)),
        normed(DeviceBuffer::zeroed(r, max_bytes)),
        gemm_a(DeviceBuffer::zeroed(r, static_cast<std::size_t>(q.gemm_m) * q.gemm_k * 2)),
        gemm_b(DeviceBuffer::zeroed(r, static_cast<std::size_t>(q.gemm_n) * q.gemm_k * 2)),
        gemm_c(DeviceBuffer::zeroed(r, static_cast<std::size_t>(q.gemm_m) * q.gemm_n * 2)),
        timer("bench-comm", kNoPreRoll, kNoDeadline) {
    EAGLESIM_CUBLAS_CHECK(cublasSetWorkspace(blas.get(), workspace.get(), workspace.bytes()));
    EAGLESIM_CUBLAS_CHECK(cublasSetStream(blas.get(), stream.get()));
  }
  int device;
  Stream stream;
  BlasHandle blas;
  DeviceBuffer workspace, in, out, residual, weight, normed, gemm_a, gemm_b, gemm_c;
  GraphTimer timer;
};

using CallFn = std::function<void(int rank, cudaStream_t stream)>;

class Bench {
 public:
  explicit Bench(const CommBenchRequest& q) : q_(q) {
    int have = 0;
    cudaError_t rc = cudaGetDeviceCount(&have);
    if (rc != cudaSuccess || have < 1)
      throw DeviceError("bench-comm: no CUDA GPU visible (" + std::string(cudaGetErrorString(rc)) + ")");
    n_ = q.ranks == 0 ? have : q.ranks;
    if (n_ < 2) throw DeviceError("bench-comm: needs at least 2 GPUs, " + std::to_string(have) + " visible");
    if (n_ > have)
      throw DeviceError(fmt::format("bench-comm: {} {} but only {} GPUs visible", setting_name(Setting::ranks), n_,
                                    have));
    for (int r = 0; r < n_; ++r) devices_.push_back(r);
    cudaDeviceProp prop{};
    EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    device_name_ = std::to_string(n_) + " x " + prop.name;
    elem_ = static_cast<std::size_t>(bytes_per_element(q.dtype));
    max_bytes_ = static_cast<std::size_t>(*std::max_element(q.sizes.begin(), q.sizes.end()));
    const std::size_t max_count = max_bytes_ / elem_;
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      auto st = std::make_unique<RankState>(r, q, max_bytes_);
      const cudaStream_t s = st->stream.get();
      fill_uniform(st->gemm_a.get(), static_cast<std::size_t>(q.gemm_m) * q.gemm_k, DType::bf16, 1000 + r, 1.f, s);
      fill_uniform(st->gemm_b.get(), static_cast<std::size_t>(q.gemm_n) * q.gemm_k, DType::bf16, 2000 + r, 1.f, s);
      fill_uniform(st->weight.get(), max_count, q.dtype, 77, 1.f, s);  // same weight on every rank
      ranks_.push_back(std::move(st));
    }
  }

  ~Bench() {
    for (auto& st : ranks_) {
      DeviceGuard g(st->device);
      cudaStreamSynchronize(st->stream.get());
      st.reset();  // its stream, events and cuBLAS handle go with its GPU current
    }
  }

  CommBenchResult run() {
    CommBenchResult res;
    res.device = device_name_;
    res.ranks = n_;
    res.dtype = q_.dtype;
    // Groups up front: NCCL init and buffer registration stay out of every measurement.
    for (const auto& s : q_.strategies) {
      if (is_nccl(s)) {
        nccl_ = std::make_unique<NcclComms>(devices_);
        continue;
      }
      CommGroupConfig c;
      c.strategy = s;
      c.ranks = n_;
      c.devices = devices_;
      c.max_bytes = max_bytes_ + 256;  // + room for the row padding of odd fused shapes
      c.timeout_s = q_.timeout_s;
      groups_[s] = make_custom_comm_group(c);
    }
    {
      const int k = 20;
      auto gemm_graph = capture(k, true, nullptr);
      res.gemm_us = time_graphs(gemm_graph, nullptr) / k;
    }
    for (std::int64_t bytes : q_.sizes) {
      CommBenchRow row;
      row.bytes = bytes;
      row.count = bytes / static_cast<std::int64_t>(elem_);
      prepare_inputs(static_cast<std::size_t>(row.count), static_cast<std::uint64_t>(bytes));
      const int calls = bytes <= (1 << 20) ? 50 : bytes <= (16 << 20) ? 20 : 10;
      res.calls_per_graph = std::max(res.calls_per_graph, calls);
      double best = 0;
      for (const auto& s : q_.strategies) {
        CommBenchCell cell = measure(s, static_cast<std::size_t>(row.count), calls);
        // `fastest` among exact plain allreduces a step could run (not the fused kernel, which does
        // more work; not a lossy one; not the correctness baseline).
        if (competes_as_plain_allreduce(s) && cell.wrong == 0 && (row.fastest.empty() || cell.graph_us < best)) {
          best = cell.graph_us;
          row.fastest = s;
        }
        row.cells.push_back(std::move(cell));
      }
      res.rows.push_back(std::move(row));
    }
    return res;
  }

 private:
  // ---------------------------------------------------------------- inputs and reference
  void prepare_inputs(std::size_t count, std::uint64_t salt) {
    host_in_.assign(n_, HostBytes(count * elem_));
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      fill_uniform(ranks_[r]->in.get(), count, q_.dtype, salt * 131 + r, 1.f, ranks_[r]->stream.get());
      EAGLESIM_CUDA_CHECK(cudaMemcpyAsync(host_in_[r].data(), ranks_[r]->in.get(), count * elem_,
                                          cudaMemcpyDeviceToHost, ranks_[r]->stream.get()));
    }
    sync_all();
    ref_ = std::make_unique<AllreduceReference>(count);
    for (int r = 0; r < n_; ++r) ref_->add_rank(q_.dtype, host_in_[r]);
  }

  std::vector<HostBytes> download(const DeviceBuffer RankState::*which, std::size_t count) {
    std::vector<HostBytes> out(n_, HostBytes(count * elem_));
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      EAGLESIM_CUDA_CHECK(cudaMemcpyAsync(out[r].data(), ((*ranks_[r]).*which).get(), count * elem_,
                                          cudaMemcpyDeviceToHost, ranks_[r]->stream.get()));
    }
    sync_all();
    return out;
  }

  // Elements of `out` off the reference (NaN included) + elements differing from rank 0's bytes
  // (not for NCCL, whose ranks may sum in different orders).
  std::int64_t count_wrong_sum(const std::string& s, const std::vector<HostBytes>& out, std::size_t count) {
    const SumTolerance tol = bench_tolerance(s, q_.dtype, n_);
    std::int64_t wrong = 0;
    for (int r = 0; r < n_; ++r) {
      Mismatches m;
      m.scan(q_.dtype, out[r], count, [&](std::size_t i) { return ref_->sum[i]; },
             [&](std::size_t i) { return tol.at(*ref_, i); });
      wrong += static_cast<std::int64_t>(m.count);
      if (r > 0 && !is_nccl(s))
        wrong += static_cast<std::int64_t>(differing_elements(q_.dtype, count, {&out[r]}, {&out[0]}));
    }
    return wrong;
  }

  // residual' = residual + sum, normed = rmsnorm(residual') * weight, checked per row in float64:
  // the residual against the reference sum, the norm against the GPU's own rounded residual (so
  // one rounding of the residual is not amplified into a norm mismatch).
  std::int64_t count_wrong_fused(const std::vector<HostBytes>& residual_before, const FusedNormArgs& f) {
    const std::size_t count = f.tokens * f.hidden;
    const DType t = q_.dtype;
    auto res = download(&RankState::residual, count);
    auto normed = download(&RankState::out, count);
    HostBytes weight(count * elem_);
    {
      DeviceGuard g(0);
      EAGLESIM_CUDA_CHECK(
          cudaMemcpy(weight.data(), ranks_[0]->weight.get(), f.hidden * elem_, cudaMemcpyDeviceToHost));
    }
    const double u = ulp_of(t);
    std::int64_t wrong = 0;
    for (int r = 0; r < n_; ++r) {
      const HostBytes& before = residual_before[r];
      auto want_residual = [&](std::size_t i) { return read_element(t, before.data(), i) + ref_->sum[i]; };
      Mismatches m;
      m.scan(t, res[r], count, want_residual, [&](std::size_t i) {
        return 2 * u * (std::fabs(want_residual(i)) + std::fabs(read_element(t, before.data(), i))) +
               n_ * 1.2e-7 * ref_->abs_sum[i];
      });
      const std::vector<double> want_norm = rmsnorm_reference(
          t, res[r], f.tokens, f.hidden, f.eps, [&](std::size_t h) { return read_element(t, weight.data(), h); });
      m.scan(t, normed[r], count, [&](std::size_t i) { return want_norm[i]; },
             [&](std::size_t i) { return u * std::fabs(want_norm[i]) + 1e-5; });
      wrong += static_cast<std::int64_t>(m.count);
      if (r > 0)
        wrong += static_cast<std::int64_t>(
            differing_elements(t, count, {&res[r], &normed[r]}, {&res[0], &normed[0]}));
    }
    return wrong;
  }

  // ---------------------------------------------------------------- one strategy at one size
  CommBenchCell measure(const std::string& s, std::size_t count, int calls) {
    CommBenchCell cell;
    cell.strategy = s;
    const bool fused = fuses_residual_norm(s);
    FusedNormArgs f;
    if (fused) {
      f.hidden = count % 7168 == 0 ? 7168 : count <= 8192 ? count : count % 4096 == 0 ? 4096 : count;
      f.tokens = count / f.hidden;
      f.eps = 1e-6f;
      cell.note = std::to_string(f.tokens) + "x" + std::to_string(f.hidden) + " rows, + residual + RMSNorm";
    }
    if (groups_.count(s) && count * elem_ > groups_[s]->rank(0).max_bytes())
      cell.note += (cell.note.empty() ? "" : "; ") + nccl_strategy() + " fallback";

    CallFn call = [&, fused](int r, cudaStream_t st) {
      RankState& rs = *ranks_[r];
      if (is_nccl(s)) {
        EAGLESIM_NCCL_CHECK(
            ncclAllReduce(rs.in.get(), rs.out.get(), count, nccl_type(q_.dtype), ncclSum, nccl_->at(r), st));
      } else if (fused) {
        FusedNormArgs a = f;
        a.residual = rs.residual.get();
        a.weight = rs.weight.get();
        a.normed = rs.out.get();
        groups_[s]->rank(r).allreduce_residual_rmsnorm(rs.in.get(), a, q_.dtype, st);
      } else {
        groups_[s]->rank(r).allreduce(rs.in.get(), rs.out.get(), count, q_.dtype, st);
      }
    };

    // (1) correctness of one eager call on poisoned outputs.
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      poison_output(r, count);
      if (fused) fill_uniform(ranks_[r]->residual.get(), count, q_.dtype, 4242, 1.f, ranks_[r]->stream.get());
    }
    std::vector<HostBytes> residual_before;
    if (fused) residual_before = download(&RankState::residual, count);
    enqueue_all(call);
    sync_all();
    if (fused) cell.wrong = count_wrong_fused(residual_before, f);
    else cell.wrong = count_wrong_sum(s, download(&RankState::out, count), count);

    // (2) back-to-back in one graph; (3) after a GEMM.
    auto sync_graph = capture(1, false, &call);
    auto ar_graph = capture(calls, false, &call);
    cell.graph_us = time_graphs(ar_graph, &sync_graph) / calls;
    if (!fused) {  // replays must leave the same result behind
      for (int r = 0; r < n_; ++r) {
        DeviceGuard g(r);
        poison_output(r, count);
      }
      replay(ar_graph);
      cell.wrong += count_wrong_sum(s, download(&RankState::out, count), count);
    }
    auto ctx_graph = capture(calls, true, &call);
    auto gemm_graph = capture(calls, true, nullptr);
    cell.context_us = (time_graphs(ctx_graph, &sync_graph) - time_graphs(gemm_graph, nullptr)) / calls;
    const double bytes = static_cast<double>(count * elem_);
    cell.algbw_gbs = bytes / (cell.graph_us * 1e-6) / 1e9;
    cell.busbw_gbs = cell.algbw_gbs * 2.0 * (n_ - 1) / n_;
    if (groups_.count(s)) groups_[s]->throw_if_failed();
    return cell;
  }

  // NaN in every output element (0xFFFF is a NaN in bf16 and fp16, 0xFFFFFFFF in fp32).
  void poison_output(int r, std::size_t count) {
    EAGLESIM_CUDA_CHECK(cudaMemsetAsync(ranks_[r]->out.get(), 0xFF, count * elem_, ranks_[r]->stream.get()));
  }

  // ---------------------------------------------------------------- stream plumbing
  void enqueue_all(const CallFn& call) {
    NcclGroup group;  // required when one thread drives several NCCL ranks; no-op otherwise
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      call(r, ranks_[r]->stream.get());
    }
  }

  void gemm(int r) {
    RankState& rs = *ranks_[r];
    DeviceGuard g(r);
    const float one = 1.f, zero = 0.f;
    // Row-major Y[m,n] = X[m,k] * W[n,k]^T, as column-major Y^T = W * X^T.
    EAGLESIM_CUBLAS_CHECK(cublasGemmEx(rs.blas.get(), CUBLAS_OP_T, CUBLAS_OP_N, q_.gemm_n, q_.gemm_m, q_.gemm_k, &one,
                                       rs.gemm_b.get(), CUDA_R_16BF, q_.gemm_k, rs.gemm_a.get(), CUDA_R_16BF,
                                       q_.gemm_k, &zero, rs.gemm_c.get(), CUDA_R_16BF, q_.gemm_n, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
  }

  // One graph per rank: `calls` x ([GEMM] [allreduce]), captured on every rank's stream at once
  // (relaxed mode: one thread captures all of them).
  std::vector<CudaGraph> capture(int calls, bool with_gemm, const CallFn* call) {
    std::vector<GraphCapture> captures;
    captures.reserve(static_cast<std::size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      captures.emplace_back(ranks_[r]->stream.get(), cudaStreamCaptureModeRelaxed);
    }
    for (int k = 0; k < calls; ++k) {
      if (with_gemm)
        for (int r = 0; r < n_; ++r) gemm(r);
      if (call) enqueue_all(*call);
    }
    std::vector<CudaGraph> out;
    for (auto& c : captures) out.push_back(c.finish());
    return out;
  }

  void replay(const std::vector<CudaGraph>& g) {
    for (int r = 0; r < n_; ++r) {
      DeviceGuard d(r);
      g[r].launch(ranks_[r]->stream.get());
    }
    sync_all();
  }

  // The middle replay of each rank's graph time (events around the graph), max over ranks, in
  // microseconds. A one-call `sync` graph before each timed replay lines the ranks up, so the
  // host's launch skew between ranks is not counted.
  double time_graphs(const std::vector<CudaGraph>& g, const std::vector<CudaGraph>* sync) {
    std::vector<std::vector<double>> us(n_);
    for (int it = 0; it < q_.warmup + q_.iters; ++it) {
      for (int r = 0; r < n_; ++r) {
        DeviceGuard d(r);
        RankState& rs = *ranks_[r];
        if (sync) (*sync)[r].launch(rs.stream.get());
        rs.timer.launch(g[r], rs.stream.get());
      }
      for (int r = 0; r < n_; ++r) {
        DeviceGuard d(r);
        const double t = ranks_[r]->timer.finish("a bench-comm graph");
        if (it >= q_.warmup) us[r].push_back(t);
      }
    }
    double worst = 0;
    for (auto& v : us) worst = std::max(worst, middle_sample(std::move(v)));
    return worst;
  }

  void sync_all() {
    for (int r = 0; r < n_; ++r) {
      DeviceGuard d(r);
      EAGLESIM_CUDA_CHECK(cudaStreamSynchronize(ranks_[r]->stream.get()));
    }
  }

  CommBenchRequest q_;
  int n_ = 0;
  std::vector<int> devices_;
  std::string device_name_;
  std::size_t elem_ = 2;
  std::size_t max_bytes_ = 0;
  std::vector<std::unique_ptr<RankState>> ranks_;
  std::unique_ptr<NcclComms> nccl_;
  std::map<std::string, std::unique_ptr<CustomCommGroup>> groups_;
  std::vector<HostBytes> host_in_;
  std::unique_ptr<AllreduceReference> ref_;
};

}  // namespace

void register_comm_bench() {
  set_comm_bench_impl([](const CommBenchRequest& q) {
    require_single_process("bench-comm", kDrivesEveryGpu);
    Bench bench(q);
    return bench.run();
  });
}

}  // namespace eaglesim::cuda
