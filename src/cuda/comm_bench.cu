// bench-comm on real GPUs: for each message size and strategy, (1) correctness of one eager call
// against a float64 CPU reference plus bitwise equality across ranks, (2) time per allreduce
// back-to-back inside one CUDA graph, (3) time per allreduce "in context", after a GEMM of the
// chosen shape, as (GEMM+allreduce graph) - (GEMM-only graph). One host thread drives every
// rank; NCCL calls of one step are wrapped in an NCCL group as NCCL requires for that.
#include "cuda/comm_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "cuda/custom_check.hpp"
#include "cuda/custom_comm.hpp"
#include "cuda/custom_nccl.hpp"
#include "cuda/host_elements.hpp"
#include "cuda/peer_memory.hpp"
#include "calibration/gpu_tools.hpp"

namespace eaglesim::cuda {

namespace {

void check_blas(cublasStatus_t rc, const char* what) {
  if (rc != CUBLAS_STATUS_SUCCESS) throw DeviceError(std::string(what) + ": cuBLAS status " + std::to_string(rc));
}

// ------------------------------------------------------------------ random data on the GPU
__device__ __forceinline__ float hash_uniform(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.f / 16777216.f) - 1.f;  // [-1, 1)
}

template <typename T>
__global__ void fill_uniform(T* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<T>(hash_uniform(seed, i));
}

template <typename T>
void fill(void* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  fill_uniform<T><<<1024, 256, 0, s>>>(static_cast<T*>(p), n, seed);
  check_cuda(cudaGetLastError(), "fill_uniform launch");
}

void fill_dtype(DType t, void* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  switch (t) {
    case DType::bf16: fill<__nv_bfloat16>(p, n, seed, s); return;
    case DType::fp16: fill<__half>(p, n, seed, s); return;
    default: fill<float>(p, n, seed, s); return;
  }
}

// Relative size of one rounding of the output type (a full ulp, to leave room for the fp32 sum).
double ulp_of(DType t) { return t == DType::bf16 ? 1.0 / 128 : t == DType::fp16 ? 1.0 / 1024 : 1.0 / (1 << 22); }

// ------------------------------------------------------------------ graphs and timing
class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraphExec_t e) : exec_(e) {}
  ~GraphExec() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  GraphExec(GraphExec&& o) noexcept : exec_(o.exec_) { o.exec_ = nullptr; }
  GraphExec& operator=(GraphExec&&) = delete;
  GraphExec(const GraphExec&) = delete;
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

struct RankState {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  DeviceBuffer workspace, in, out, residual, weight, normed, gemm_a, gemm_b, gemm_c;
  std::vector<cudaEvent_t> events;  // start, stop
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
      throw DeviceError("bench-comm: --ranks " + std::to_string(n_) + " but only " + std::to_string(have) +
                        " GPUs visible");
    for (int r = 0; r < n_; ++r) devices_.push_back(r);
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    device_name_ = std::to_string(n_) + " x " + prop.name;
    elem_ = static_cast<std::size_t>(bytes_per_element(q.dtype));
    max_bytes_ = static_cast<std::size_t>(*std::max_element(q.sizes.begin(), q.sizes.end()));
    const std::size_t max_count = max_bytes_ / elem_;
    for (int r = 0; r < n_; ++r) {
      auto st = std::make_unique<RankState>();
      st->device = r;
      DeviceGuard g(r);
      check_cuda(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking), "cudaStreamCreate");
      check_blas(cublasCreate(&st->blas), "cublasCreate");
      st->workspace = DeviceBuffer(r, 32u << 20);  // preset so cuBLAS never allocates inside capture
      check_blas(cublasSetWorkspace(st->blas, st->workspace.get(), st->workspace.bytes()), "cublasSetWorkspace");
      check_blas(cublasSetStream(st->blas, st->stream), "cublasSetStream");
      st->in = DeviceBuffer(r, max_bytes_);
      st->out = DeviceBuffer(r, max_bytes_);
      st->residual = DeviceBuffer(r, max_bytes_);
      st->weight = DeviceBuffer(r, max_bytes_);
      st->normed = DeviceBuffer(r, max_bytes_);
      const std::size_t m = q.gemm_m, nn = q.gemm_n, k = q.gemm_k;
      st->gemm_a = DeviceBuffer(r, m * k * 2);
      st->gemm_b = DeviceBuffer(r, nn * k * 2);
      st->gemm_c = DeviceBuffer(r, m * nn * 2);
      fill<__nv_bfloat16>(st->gemm_a.get(), m * k, 1000 + r, st->stream);
      fill<__nv_bfloat16>(st->gemm_b.get(), nn * k, 2000 + r, st->stream);
      fill_dtype(q.dtype, st->weight.get(), max_count, 77, st->stream);  // same weight on every rank
      for (int e = 0; e < 2; ++e) {
        cudaEvent_t ev;
        check_cuda(cudaEventCreate(&ev), "cudaEventCreate");
        st->events.push_back(ev);
      }
      ranks_.push_back(std::move(st));
    }
  }

  ~Bench() {
    for (auto& st : ranks_) {
      DeviceGuard g(st->device);
      cudaStreamSynchronize(st->stream);
      for (auto ev : st->events) cudaEventDestroy(ev);
      if (st->blas) cublasDestroy(st->blas);
      if (st->stream) cudaStreamDestroy(st->stream);
    }
  }

  CommBenchResult run() {
    CommBenchResult res;
    res.device = device_name_;
    res.ranks = n_;
    res.dtype = q_.dtype;
    // Groups up front: NCCL init and buffer registration stay out of every measurement.
    for (const auto& s : q_.strategies) {
      if (s == "nccl") {
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
        const bool exact_plain = s == "nccl" || s == "oneshot" || s == "oneshot_push" || s == "twoshot";
        if (exact_plain && cell.wrong == 0 && (row.fastest.empty() || cell.graph_us < best)) {
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
    host_in_.assign(n_, std::vector<unsigned char>(count * elem_));
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      fill_dtype(q_.dtype, ranks_[r]->in.get(), count, salt * 131 + r, ranks_[r]->stream);
      check_cuda(cudaMemcpyAsync(host_in_[r].data(), ranks_[r]->in.get(), count * elem_, cudaMemcpyDeviceToHost,
                                 ranks_[r]->stream),
                 "cudaMemcpyAsync D2H");
    }
    sync_all();
    ref_.assign(count, 0.0);
    abs_.assign(count, 0.0);
    const std::size_t groups = (count + 127) / 128;
    amax_sum_.assign(groups, 0.0);
    std::vector<double> amax(groups);
    for (int r = 0; r < n_; ++r) {
      std::fill(amax.begin(), amax.end(), 0.0);
      for (std::size_t i = 0; i < count; ++i) {
        const double v = read_element(q_.dtype, host_in_[r].data(), i);
        ref_[i] += v;
        abs_[i] += std::fabs(v);
        amax[i / 128] = std::max(amax[i / 128], std::fabs(v));
      }
      for (std::size_t gi = 0; gi < groups; ++gi) amax_sum_[gi] += amax[gi];
    }
  }

  std::vector<std::vector<unsigned char>> download(const DeviceBuffer RankState::*which, std::size_t count) {
    std::vector<std::vector<unsigned char>> out(n_, std::vector<unsigned char>(count * elem_));
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      check_cuda(cudaMemcpyAsync(out[r].data(), ((*ranks_[r]).*which).get(), count * elem_, cudaMemcpyDeviceToHost,
                                 ranks_[r]->stream),
                 "cudaMemcpyAsync D2H");
    }
    sync_all();
    return out;
  }

  // Elements of `out` off the reference (NaN included) + elements differing from rank 0's bytes.
  std::int64_t count_wrong_sum(const std::string& s, const std::vector<std::vector<unsigned char>>& out,
                               std::size_t count) {
    std::int64_t wrong = 0;
    const double u = ulp_of(q_.dtype);
    for (int r = 0; r < n_; ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        const double got = read_element(q_.dtype, out[r].data(), i);
        double tol = u * std::fabs(ref_[i]) + n_ * 1.2e-7 * abs_[i];
        if (s == "nccl") tol = n_ * u * abs_[i];
        if (s == "quant") tol += amax_sum_[i / 128] / 16.0;
        if (!(std::fabs(got - ref_[i]) <= tol)) ++wrong;
      }
      if (r > 0 && s != "nccl")
        for (std::size_t i = 0; i < count; ++i)
          if (std::memcmp(out[r].data() + i * elem_, out[0].data() + i * elem_, elem_) != 0) ++wrong;
    }
    return wrong;
  }

  // ---------------------------------------------------------------- one strategy at one size
  CommBenchCell measure(const std::string& s, std::size_t count, int calls) {
    CommBenchCell cell;
    cell.strategy = s;
    const bool fused = s == "fused";
    FusedNormArgs f;
    if (fused) {
      f.hidden = count % 7168 == 0 ? 7168 : count <= 8192 ? count : count % 4096 == 0 ? 4096 : count;
      f.tokens = count / f.hidden;
      f.eps = 1e-6f;
      cell.note = std::to_string(f.tokens) + "x" + std::to_string(f.hidden) + " rows, + residual + RMSNorm";
    }
    if (groups_.count(s) && count * elem_ > groups_[s]->rank(0).max_bytes())
      cell.note += (cell.note.empty() ? "" : "; ") + std::string("nccl fallback");

    CallFn call = [&, fused](int r, cudaStream_t st) {
      RankState& rs = *ranks_[r];
      if (s == "nccl") {
        check_nccl(ncclAllReduce(rs.in.get(), rs.out.get(), count, nccl_type(q_.dtype), ncclSum, nccl_->at(r), st),
                   "ncclAllReduce");
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
      check_cuda(cudaMemsetAsync(ranks_[r]->out.get(), 0xFF, count * elem_, ranks_[r]->stream), "poison");
      if (fused) fill_dtype(q_.dtype, ranks_[r]->residual.get(), count, 4242, ranks_[r]->stream);
    }
    std::vector<std::vector<unsigned char>> residual_before;
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
        check_cuda(cudaMemsetAsync(ranks_[r]->out.get(), 0xFF, count * elem_, ranks_[r]->stream), "poison");
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

  // residual' = residual + sum, normed = rmsnorm(residual') * weight, checked per row in float64:
  // the residual against the reference sum, the norm against the GPU's own rounded residual (so
  // one rounding of the residual is not amplified into a norm mismatch).
  std::int64_t count_wrong_fused(const std::vector<std::vector<unsigned char>>& residual_before,
                                 const FusedNormArgs& f) {
    const std::size_t count = f.tokens * f.hidden;
    auto res = download(&RankState::residual, count);
    auto normed = download(&RankState::out, count);
    std::vector<unsigned char> weight(count * elem_);
    {
      DeviceGuard g(0);
      check_cuda(cudaMemcpy(weight.data(), ranks_[0]->weight.get(), f.hidden * elem_, cudaMemcpyDeviceToHost),
                 "cudaMemcpy weight");
    }
    const double u = ulp_of(q_.dtype);
    std::int64_t wrong = 0;
    for (int r = 0; r < n_; ++r) {
      for (std::size_t t = 0; t < f.tokens; ++t) {
        double ss = 0;
        for (std::size_t h = 0; h < f.hidden; ++h) {
          const std::size_t i = t * f.hidden + h;
          const double before = read_element(q_.dtype, residual_before[r].data(), i);
          const double want = before + ref_[i];
          const double got = read_element(q_.dtype, res[r].data(), i);
          const double tol = 2 * u * (std::fabs(want) + std::fabs(before)) + n_ * 1.2e-7 * abs_[i];
          if (!(std::fabs(got - want) <= tol)) ++wrong;
          ss += got * got;
        }
        const double inv = 1.0 / std::sqrt(ss / f.hidden + f.eps);
        for (std::size_t h = 0; h < f.hidden; ++h) {
          const std::size_t i = t * f.hidden + h;
          const double want = read_element(q_.dtype, res[r].data(), i) * inv * read_element(q_.dtype, weight.data(), h);
          const double got = read_element(q_.dtype, normed[r].data(), i);
          if (!(std::fabs(got - want) <= u * std::fabs(want) + 1e-5)) ++wrong;
        }
      }
      if (r > 0)
        for (std::size_t i = 0; i < count; ++i)
          if (std::memcmp(res[r].data() + i * elem_, res[0].data() + i * elem_, elem_) != 0 ||
              std::memcmp(normed[r].data() + i * elem_, normed[0].data() + i * elem_, elem_) != 0)
            ++wrong;
    }
    return wrong;
  }

  // ---------------------------------------------------------------- stream plumbing
  void enqueue_all(const CallFn& call) {
    NcclGroup group;  // required when one thread drives several NCCL ranks; no-op otherwise
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      call(r, ranks_[r]->stream);
    }
  }

  void gemm(int r) {
    RankState& rs = *ranks_[r];
    DeviceGuard g(r);
    const float one = 1.f, zero = 0.f;
    // Row-major Y[m,n] = X[m,k] * W[n,k]^T, as column-major Y^T = W * X^T.
    check_blas(cublasGemmEx(rs.blas, CUBLAS_OP_T, CUBLAS_OP_N, q_.gemm_n, q_.gemm_m, q_.gemm_k, &one,
                            rs.gemm_b.get(), CUDA_R_16BF, q_.gemm_k, rs.gemm_a.get(), CUDA_R_16BF, q_.gemm_k, &zero,
                            rs.gemm_c.get(), CUDA_R_16BF, q_.gemm_n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
  }

  // One graph per rank: `calls` x ([GEMM] [allreduce]).
  std::vector<GraphExec> capture(int calls, bool with_gemm, const CallFn* call) {
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      check_cuda(cudaStreamBeginCapture(ranks_[r]->stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
    }
    std::vector<cudaGraph_t> graphs(n_, nullptr);
    try {
      for (int k = 0; k < calls; ++k) {
        if (with_gemm)
          for (int r = 0; r < n_; ++r) gemm(r);
        if (call) enqueue_all(*call);
      }
    } catch (...) {
      for (int r = 0; r < n_; ++r) {
        DeviceGuard g(r);
        cudaStreamEndCapture(ranks_[r]->stream, &graphs[r]);
        if (graphs[r]) cudaGraphDestroy(graphs[r]);
      }
      throw;
    }
    std::vector<GraphExec> out;
    for (int r = 0; r < n_; ++r) {
      DeviceGuard g(r);
      check_cuda(cudaStreamEndCapture(ranks_[r]->stream, &graphs[r]), "cudaStreamEndCapture");
      cudaGraphExec_t exec = nullptr;
      cudaError_t rc = cudaGraphInstantiate(&exec, graphs[r], 0);
      cudaGraphDestroy(graphs[r]);
      check_cuda(rc, "cudaGraphInstantiate");
      out.emplace_back(exec);
    }
    return out;
  }

  void replay(const std::vector<GraphExec>& g) {
    for (int r = 0; r < n_; ++r) {
      DeviceGuard d(r);
      check_cuda(cudaGraphLaunch(g[r].get(), ranks_[r]->stream), "cudaGraphLaunch");
    }
    sync_all();
  }

  // Median over replays of each rank's graph time (events around the graph), max over ranks,
  // in microseconds. A one-call `sync` graph before each timed replay lines the ranks up, so
  // the host's launch skew between ranks is not counted.
  double time_graphs(const std::vector<GraphExec>& g, const std::vector<GraphExec>* sync) {
    std::vector<std::vector<float>> ms(n_);
    for (int it = 0; it < q_.warmup + q_.iters; ++it) {
      for (int r = 0; r < n_; ++r) {
        DeviceGuard d(r);
        RankState& rs = *ranks_[r];
        if (sync) check_cuda(cudaGraphLaunch((*sync)[r].get(), rs.stream), "cudaGraphLaunch");
        check_cuda(cudaEventRecord(rs.events[0], rs.stream), "cudaEventRecord");
        check_cuda(cudaGraphLaunch(g[r].get(), rs.stream), "cudaGraphLaunch");
        check_cuda(cudaEventRecord(rs.events[1], rs.stream), "cudaEventRecord");
      }
      for (int r = 0; r < n_; ++r) {
        DeviceGuard d(r);
        check_cuda(cudaEventSynchronize(ranks_[r]->events[1]), "cudaEventSynchronize");
        float t = 0;
        check_cuda(cudaEventElapsedTime(&t, ranks_[r]->events[0], ranks_[r]->events[1]), "cudaEventElapsedTime");
        if (it >= q_.warmup) ms[r].push_back(t);
      }
    }
    double worst = 0;
    for (auto& v : ms) {
      std::sort(v.begin(), v.end());
      worst = std::max(worst, static_cast<double>(v[v.size() / 2]) * 1000.0);
    }
    return worst;
  }

  void sync_all() {
    for (int r = 0; r < n_; ++r) {
      DeviceGuard d(r);
      check_cuda(cudaStreamSynchronize(ranks_[r]->stream), "cudaStreamSynchronize");
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
  std::vector<std::vector<unsigned char>> host_in_;
  std::vector<double> ref_, abs_, amax_sum_;
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
