#include "cuda/calibrate_comm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/calibrate_graph.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/host_barrier.hpp"
#include "cuda/rank_comm.hpp"
#include "cuda/rank_program.hpp"

namespace eaglesim::cuda {

namespace {

// Rotating context-GEMM weights span this many L2 caches (see calibrate_compute.cpp).
constexpr double kL2Multiple = 4.0;
constexpr int kMaxCopies = 64;

int calls_for(std::int64_t bytes) { return bytes <= (1 << 20) ? 32 : bytes <= (16 << 20) ? 16 : 8; }
int round_up(int v, int multiple) { return (v + multiple - 1) / multiple * multiple; }

struct Layout {
  Step step;
  int ctx_copies = 1;
  std::vector<std::size_t> case_op;  // op index of each case's allreduce
};

Layout layout_for(const CalibrationRequest& q, const std::vector<std::size_t>& cases, double l2_bytes) {
  Layout l;
  l.step.name = "calibrate_allreduce";
  const double w = static_cast<double>(q.context_gemm.n) * static_cast<double>(q.context_gemm.k) *
                   (q.context_gemm.dtype == DType::fp8 ? 1.0 : 2.0);
  l.ctx_copies = static_cast<int>(std::clamp(std::ceil(kL2Multiple * l2_bytes / std::max(w, 1.0)), 1.0,
                                             double(kMaxCopies)));
  for (int c = 0; c < l.ctx_copies; ++c) {
    Op g = q.context_gemm;
    g.layer = c;
    l.step.ops.push_back(g);
  }
  for (std::size_t ci : cases) {
    const AllreduceCase& a = q.allreduce[ci];
    Op ar;
    ar.kind = OpKind::allreduce;
    ar.name = "calibrate_allreduce";
    ar.bytes = a.bytes;
    ar.dtype = a.dtype;
    ar.layer = static_cast<int>(l.step.ops.size());
    l.case_op.push_back(l.step.ops.size());
    l.step.ops.push_back(ar);
    if (a.strategy == "fused") {
      Op res;
      res.kind = OpKind::residual_add;
      res.name = "calibrate_residual";
      res.tokens = a.tokens;
      res.hidden = a.hidden;
      res.layer = ar.layer;
      Op norm = res;
      norm.kind = OpKind::rmsnorm;
      norm.name = "calibrate_rmsnorm";
      l.step.ops.push_back(res);
      l.step.ops.push_back(norm);
    }
  }
  return l;
}

}  // namespace

std::vector<double> calibrate_allreduce(const CalibrationRequest& q, std::vector<std::string>& notes) {
  std::vector<double> result(q.allreduce.size(), std::numeric_limits<double>::quiet_NaN());
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::size_t>> by_strategy;
  for (std::size_t i = 0; i < q.allreduce.size(); ++i) {
    const std::string& s = q.allreduce[i].strategy;
    if (!by_strategy.count(s)) order.push_back(s);
    by_strategy[s].push_back(i);
  }
  cudaDeviceProp prop{};
  EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const double l2 = static_cast<double>(prop.l2CacheSize);

  for (const std::string& strategy : order) {
    const auto t_start = std::chrono::steady_clock::now();
    const std::vector<std::size_t>& cases = by_strategy[strategy];
    std::int64_t max_bytes = 0;
    for (std::size_t ci : cases) max_bytes = std::max(max_bytes, q.allreduce[ci].bytes);
    CommGroupConfig cc;
    cc.strategy = strategy;
    cc.ranks = q.ranks;
    cc.devices.resize(static_cast<std::size_t>(q.ranks));
    std::iota(cc.devices.begin(), cc.devices.end(), 0);
    cc.timeout_s = q.timeout_s;
    if (strategy != "nccl") cc.max_bytes = static_cast<std::size_t>(max_bytes) + 256;
    std::unique_ptr<CommGroup> group;
    try {
      group = create_comm_group(cc);
    } catch (const std::exception& e) {
      // A strategy this machine cannot run (world size, no P2P, not built): no table for it.
      notes.push_back(fmt::format("{}: not measured ({})", strategy, e.what()));
      if (q.progress) q.progress(fmt::format("allreduce {}: skipped: {}", strategy, e.what()));
      continue;
    }
    const Layout layout = layout_for(q, cases, l2);

    HostBarrier barrier(q.ranks);
    std::mutex mu;
    std::exception_ptr first_error;
    // [rank][case] median µs of the (GEMM, allreduce) graph; [rank][calls] of the GEMM-only graph.
    std::vector<std::vector<double>> with_ar(q.ranks, std::vector<double>(cases.size(), 0.0));
    std::vector<std::map<int, double>> gemm_only(q.ranks);
    std::vector<std::vector<bool>> fused_ok(q.ranks, std::vector<bool>(cases.size(), true));
    std::vector<std::thread> threads;
    for (int r = 0; r < q.ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          EAGLESIM_CUDA_CHECK(cudaSetDevice(r));
          cudaStream_t stream = nullptr;
          EAGLESIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
          struct StreamGuard {
            cudaStream_t s;
            ~StreamGuard() { cudaStreamDestroy(s); }
          } guard{stream};
          ProgramOptions popts;
          popts.seed = 101 + static_cast<std::uint64_t>(r);
          RankProgram program(layout.step, r, group->rank(r), nullptr, popts);
          GraphTimer timer(q.timeout_s, [&group] { group->abort(); });
          auto sync = [&] {
            if (!barrier.wait()) throw DeviceError("calibrate: another rank failed");
          };
          auto time_graph = [&](const std::function<void(cudaStream_t)>& body, const char* what) {
            // One eager run first (all ranks together): NCCL connects lazily, per algorithm and
            // protocol, and cannot do that inside a capture.
            sync();
            timer.launch_eager(body, stream);
            timer.finish(what);
            // Capture is per rank; NCCL captures need every rank to capture the same calls.
            CapturedGraph g(stream, body);
            std::vector<double> v;
            for (int it = 0; it < q.warmup + q.iters; ++it) {
              sync();
              timer.launch(g, stream);
              const double us = timer.finish(what);
              if (it >= q.warmup) v.push_back(us);
            }
            return median_of(v);
          };
          const int copies = layout.ctx_copies;
          for (std::size_t c = 0; c < cases.size(); ++c) {
            const std::size_t ar = layout.case_op[c];
            if (q.allreduce[cases[c]].strategy == "fused" && !(ar + 2 < program.size() && program.absorbed(ar + 1)))
              fused_ok[r][c] = false;
            const int calls = round_up(calls_for(q.allreduce[cases[c]].bytes), copies);
            if (!gemm_only[r].count(calls))
              gemm_only[r][calls] = time_graph(
                  [&](cudaStream_t s) {
                    for (int k = 0; k < calls; ++k) program.enqueue(static_cast<std::size_t>(k % copies), s);
                  },
                  "the context-GEMM chain");
            with_ar[r][c] = time_graph(
                [&](cudaStream_t s) {
                  for (int k = 0; k < calls; ++k) {
                    program.enqueue(static_cast<std::size_t>(k % copies), s);
                    program.enqueue(ar, s);
                  }
                },
                "an allreduce chain");
          }
          sync();
        } catch (...) {
          {
            std::lock_guard<std::mutex> lock(mu);
            if (!first_error) first_error = std::current_exception();
          }
          barrier.abort();
          group->abort();
        }
      });
    }
    for (auto& t : threads) t.join();
    if (first_error) std::rethrow_exception(first_error);

    int unfused = 0;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const int calls = round_up(calls_for(q.allreduce[cases[c]].bytes), layout.ctx_copies);
      double worst = -std::numeric_limits<double>::infinity();
      bool ok = true;
      for (int r = 0; r < q.ranks; ++r) {
        worst = std::max(worst, (with_ar[r][c] - gemm_only[r].at(calls)) / calls);
        ok = ok && fused_ok[r][c];
      }
      if (!ok) {
        ++unfused;
        continue;
      }
      result[cases[c]] = worst;
    }
    if (unfused > 0)
      notes.push_back(fmt::format("{}: {} sizes could not run fused (left out of the table)", strategy, unfused));
    if (q.progress)
      q.progress(fmt::format("allreduce {}: {} sizes in context on {} GPUs ({:.1f} s)", strategy, cases.size(),
                             q.ranks,
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count()));
  }
  return result;
}

}  // namespace eaglesim::cuda
