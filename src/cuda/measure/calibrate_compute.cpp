#include "cuda/measure/calibrate_compute.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "core/median.hpp"
#include "cuda/measure/calibrate_kernels.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/cuda_graph.hpp"
#include "cuda/runtime/graph_timer.hpp"
#include "cuda/comm/ideal_comm_group.hpp"
#include "cuda/measure/l2_rotation.hpp"
#include "cuda/replay/rank_program.hpp"
#include "cuda/runtime/stream.hpp"
#include "cuda/ops/weight_arena.hpp"
#include "calibration/calibration_cases.hpp"
#include "calibration/layer_chain.hpp"

namespace eaglesim::cuda {

namespace {

// Copies a chain rotates over (l2_rotation.hpp), within [kMinCopies, kMaxCopies].
constexpr int kMinCopies = 2;
constexpr int kMaxCopies = 256;
constexpr int kMinChain = 8;
constexpr int kMaxChain = 512;
constexpr int kGapChain = 256;
// Part of free memory one batch of ops (all their copies) may take.
constexpr double kBatchMemoryShare = 0.45;

int copies_for(const Op& op, double l2_bytes) { return rotation_copies(op, l2_bytes, kMinCopies, kMaxCopies); }

int round_up(int v, int multiple) { return (v + multiple - 1) / multiple * multiple; }

class Chains {
 public:
  Chains(cudaStream_t s, const ChainTiming& t)
      : stream_(s), iters_(t.iters), warmup_(t.warmup), target_us_(t.chain_us),
        timer_("calibrate", kChainPreRollUs, t.timeout_s) {}

  // Median µs of one graph of body().
  double time(const std::function<void(cudaStream_t)>& body, const char* what) {
    const CudaGraph g = CudaGraph::capture(stream_, body);
    std::vector<double> v;
    for (int i = 0; i < warmup_ + iters_; ++i) {
      timer_.launch(g, stream_);
      const double us = timer_.finish(what);
      if (i >= warmup_) v.push_back(us);
    }
    return median(v);
  }

  // Per-call µs of enqueue(c) for c = 0..C-1 repeated: (T(2C) - T(C)) / C with C sized so that
  // T(C) is about the chain target. `copies`: C is a multiple of it.
  double per_call(const std::function<void(int, cudaStream_t)>& enqueue, int copies, const char* what) {
    auto chain = [&](int n) {
      return [&, n](cudaStream_t s) {
        for (int c = 0; c < n; ++c) enqueue(c, s);
      };
    };
    const int c0 = round_up(std::max(kMinChain, copies), copies);
    const double t0 = time(chain(c0), what);
    const double estimate = std::max(0.05, t0 / c0);
    int calls = static_cast<int>(std::ceil(target_us_ / estimate));
    calls = round_up(std::clamp(calls, c0, std::max(c0, kMaxChain)), copies);
    const double t1 = calls == c0 ? t0 : time(chain(calls), what);
    const double t2 = time(chain(2 * calls), what);
    const double us = (t2 - t1) / calls;
    return us > 0 ? us : t2 / (2.0 * calls);
  }

 private:
  cudaStream_t stream_;
  int iters_, warmup_;
  double target_us_;
  GraphTimer timer_;
};

const char* phase_of(OpKind k) {
  switch (k) {
    case OpKind::gemm:
    case OpKind::lm_head: return "gemm";
    case OpKind::grouped_gemm: return "grouped gemm";
    case OpKind::attention: return "attention";
    case OpKind::other: return "other (timed kernels)";
    default: return "elementwise";
  }
}

// Makes `device` current (for everything ChainDevice creates after it) and returns its L2 size.
double select_device_l2(int device) {
  EAGLESIM_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return static_cast<double>(prop.l2CacheSize);
}

// The lower bound's communicator for the RankPrograms: calibration steps have no allreduce.
std::unique_ptr<CommGroup> no_comm_group(int device) {
  CommGroupConfig cc;
  cc.strategy = lower_bound_strategy();
  cc.ranks = 1;
  cc.devices = {device};
  return create_ideal_comm_group(cc);
}

// One GPU set up for measuring chains: its L2 size, a communicator that moves nothing and a
// stream, made in that order on `device` (members initialise in declaration order).
struct ChainDevice {
  explicit ChainDevice(int device) : l2(select_device_l2(device)), group(no_comm_group(device)) {}
  double l2 = 0;
  std::unique_ptr<CommGroup> group;
  Stream stream_owner;
  cudaStream_t stream = stream_owner.get();
};

// Each case a (residual_add, rmsnorm) pair of its rows in one program that fuses them: the
// chain is of the fused kernel alone. The activations are the program's shared buffers (as for
// the single elementwise ops: nothing to rotate), each case its own norm weight.
std::vector<double> measure_add_rmsnorm(int device, const std::vector<Op>& cases, CommGroup& group, Chains& chains) {
  std::vector<double> us(cases.size(), std::numeric_limits<double>::quiet_NaN());
  if (cases.empty()) return us;
  Step step;
  step.name = "calibrate_add_rmsnorm";
  for (const Op& c : cases) append_residual_norm(step, c.tokens, c.hidden, static_cast<int>(step.ops.size()));
  ProgramOptions popts;
  popts.seed = 5003;
  popts.fuse_add_norm = true;
  RankProgram program(step, device, group.rank(0), nullptr, popts);
  for (std::size_t j = 0; j < cases.size(); ++j) {
    const std::size_t at = 2 * j;
    if (!program.absorbed(at + 1)) continue;  // not fused: no entry rather than a wrong one
    const std::string what = program.label(at) + " + rmsnorm, fused";
    us[j] = chains.per_call([&](int, cudaStream_t s) { program.enqueue(at, s); }, 1, what.c_str());
  }
  return us;
}

}  // namespace

ComputeCalibration calibrate_compute(int device, const std::vector<Op>& ops, const std::vector<Op>& add_rmsnorm,
                                     const ChainTiming& timing,
                                     const std::function<void(const std::string&)>& progress) {
  ChainDevice dev(device);
  const double l2 = dev.l2;
  cudaStream_t stream = dev.stream;
  CommGroup& group = *dev.group;
  Chains chains(stream, timing);
  ComputeCalibration out;
  out.us.assign(ops.size(), 0.0);

  // The launch gap: empty kernels back to back.
  {
    const auto t_start = std::chrono::steady_clock::now();
    auto chain = [](int n) {
      return [n](cudaStream_t s) {
        for (int c = 0; c < n; ++c) launch_empty_kernel(s);
      };
    };
    const double t1 = chains.time(chain(kGapChain), "the launch-gap chain");
    const double t2 = chains.time(chain(2 * kGapChain), "the launch-gap chain");
    out.launch_gap_us = std::max(0.0, (t2 - t1) / kGapChain);
    if (progress)
      progress(fmt::format("launch gap: {:.2f} us per empty kernel in a graph ({:.1f} s)", out.launch_gap_us,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count()));
  }

  std::vector<int> copies(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) copies[i] = copies_for(ops[i], l2);

  std::size_t i = 0;
  std::string phase;
  int phase_count = 0;
  auto phase_start = std::chrono::steady_clock::now();
  auto end_phase = [&] {
    if (!phase.empty() && progress)
      progress(fmt::format("{}: {} points measured ({:.1f} s)", phase, phase_count,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - phase_start).count()));
  };
  while (i < ops.size()) {
    // One batch: consecutive ops whose copies fit in a share of free memory (the last batch's
    // weights are not kept for this one: another layout).
    release_parked_weights(device);
    std::size_t free_bytes = 0, total_bytes = 0;
    EAGLESIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const double budget = kBatchMemoryShare * static_cast<double>(free_bytes);
    double used = 0;
    std::size_t end = i;
    Step step;
    step.name = "calibrate";
    std::vector<std::size_t> first_copy;
    while (end < ops.size()) {
      const double b = streamed_bytes(ops[end]);
      if (b * copies[end] > budget) copies[end] = std::max(1, static_cast<int>(budget / std::max(b, 1.0)));
      const double need = b * copies[end];
      if (end > i && used + need > budget) break;
      used += need;
      first_copy.push_back(step.ops.size());
      for (int c = 0; c < copies[end]; ++c) {
        Op op = ops[end];
        op.layer = static_cast<int>(step.ops.size());
        step.ops.push_back(op);
      }
      ++end;
    }
    ProgramOptions popts;
    popts.seed = 7 + i;
    popts.verify_trees = timing.verify_trees;
    popts.fuse_add_norm = false;  // each op its own kernel: the table of its kind
    RankProgram program(step, device, group.rank(0), nullptr, popts);
    program.set_early_launch(false);  // a copy never overlaps the copy ahead of it (RankProgram says why)
    for (const auto& n : program.notes())
      if (std::find(out.notes.begin(), out.notes.end(), n) == out.notes.end()) out.notes.push_back(n);
    for (std::size_t j = i; j < end; ++j) {
      const std::string p = phase_of(ops[j].kind);
      if (p != phase) {
        end_phase();
        phase = p;
        phase_count = 0;
        phase_start = std::chrono::steady_clock::now();
      }
      const std::size_t base = first_copy[j - i];
      const int n_copies = copies[j];
      const std::string what = program.label(base);
      out.us[j] = chains.per_call([&](int c, cudaStream_t s) { program.enqueue(base + c % n_copies, s); }, n_copies,
                                  what.c_str());
      ++phase_count;
    }
    i = end;
  }
  end_phase();
  if (!add_rmsnorm.empty()) {
    const auto t_start = std::chrono::steady_clock::now();
    release_parked_weights(device);
    out.add_rmsnorm_us = measure_add_rmsnorm(device, add_rmsnorm, group, chains);
    if (progress)
      progress(fmt::format("fused add + rmsnorm: {} points measured ({:.1f} s)", add_rmsnorm.size(),
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count()));
  }
  return out;
}

std::vector<double> calibrate_compute_layers(int device, const std::vector<ComputeLayerCase>& layers,
                                             const ChainTiming& timing, bool fuse_add_norm,
                                             const std::function<void(const std::string&)>& progress) {
  std::vector<double> out(layers.size(), std::numeric_limits<double>::quiet_NaN());
  if (layers.empty()) return out;
  const auto t_start = std::chrono::steady_clock::now();
  ChainDevice dev(device);
  Chains chains(dev.stream, timing);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::vector<Op>& ops = layers[l].ops;
    const double weights = layer_weight_bytes(ops);
    const int copies = compute_layer_chain_copies(weights, dev.l2);
    const std::size_t n = ops.size();
    Step step;
    step.name = "calibrate_compute_layer";
    for (int c = 0; c < copies; ++c)
      for (const Op& op : ops) {
        Op o = op;
        o.layer = c;
        step.ops.push_back(o);
      }
    release_parked_weights(device);  // the previous layer's copies are another layout
    // One chain's time can depend on where its copies landed in GPU memory (by several percent
    // between placements in one process; docs/fidelity.md): the chain is timed over several
    // placements, each program holding its memory while the next one allocates, and the median
    // is the layer's time.
    std::size_t free_bytes = 0, total_bytes = 0;
    EAGLESIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const int placements = compute_layer_placements(weights * copies, static_cast<double>(free_bytes));
    std::vector<std::unique_ptr<RankProgram>> programs;
    std::vector<double> per_placement;
    const std::string what = "compute layer " + layers[l].where;
    for (int p = 0; p < placements; ++p) {
      ProgramOptions popts;
      popts.seed = 4049 + l + 7919 * p;
      popts.verify_trees = timing.verify_trees;
      popts.fuse_add_norm = fuse_add_norm;
      programs.push_back(std::make_unique<RankProgram>(step, device, dev.group->rank(0), nullptr, popts));
      RankProgram& program = *programs.back();
      per_placement.push_back(chains.per_call(
          [&](int c, cudaStream_t s) {
            const std::size_t base = static_cast<std::size_t>(c % copies) * n;
            for (std::size_t j = 0; j < n; ++j) program.enqueue(base + j, s);
          },
          copies, what.c_str()));
    }
    out[l] = median(per_placement);
    if (progress) {
      std::string each;
      for (double us : per_placement) each += fmt::format("{}{:.2f}", each.empty() ? "" : " / ", us);
      progress(fmt::format("compute layer {}: {} us per copy in {} placement(s) of {} copies, median {:.2f}",
                           layers[l].where, each, placements, copies, out[l]));
    }
  }
  if (progress)
    progress(fmt::format("compute layers: {} decoder layers measured as chains of copies ({:.1f} s)", layers.size(),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count()));
  return out;
}

std::vector<double> calibrate_transitions(int device, const std::vector<std::pair<Op, Op>>& pairs,
                                          const ChainTiming& timing,
                                          const std::function<void(const std::string&)>& progress) {
  std::vector<double> out;
  if (pairs.empty()) return out;
  const auto t_start = std::chrono::steady_clock::now();
  ChainDevice dev(device);
  Chains chains(dev.stream, timing);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const Op& a = pairs[i].first;
    const Op& b = pairs[i].second;
    const int na = copies_for(a, dev.l2), nb = copies_for(b, dev.l2);
    Step step;
    step.name = "calibrate_transition";
    for (int c = 0; c < na + nb; ++c) {
      Op op = c < na ? a : b;
      op.layer = c;
      step.ops.push_back(op);
    }
    ProgramOptions popts;
    popts.seed = 991 + i;
    popts.verify_trees = timing.verify_trees;
    popts.fuse_add_norm = false;  // the transition between the two kernels, each its own launch
    RankProgram program(step, device, dev.group->rank(0), nullptr, popts);
    const std::string what = "transition " + program.label(0) + " -> " + program.label(na);
    const int copies = std::max(na, nb);
    // A and B alone as their tables measure them (no overlap with their own copies), the pairs as
    // a step runs them: what B's early start saves on A's tail is part of the transition.
    program.set_early_launch(false);
    const double ta = chains.per_call([&](int c, cudaStream_t s) { program.enqueue(c % na, s); }, na, what.c_str());
    const double tb =
        chains.per_call([&](int c, cudaStream_t s) { program.enqueue(na + c % nb, s); }, nb, what.c_str());
    program.set_early_launch(true);
    const double tab = chains.per_call(
        [&](int c, cudaStream_t s) {
          program.enqueue(c % na, s);
          program.enqueue(na + c % nb, s);
        },
        copies, what.c_str());
    out.push_back(tab - ta - tb);
  }
  if (progress)
    progress(fmt::format("kernel transitions: {} op pairs measured ({:.1f} s)", pairs.size(),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count()));
  return out;
}

}  // namespace eaglesim::cuda
