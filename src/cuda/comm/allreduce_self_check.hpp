#pragma once
// Checking allreduce results against a host reference, in two uses:
//  * AllreduceSelfCheck: before a replay (or calibration) times a strategy, every rank runs each
//    collective shape the step uses once on data whose sum is known exactly (small integers, so
//    bf16 / fp16 / fp32 sums are exact) and compares what it got with the reference. A strategy
//    that is fast but wrong on this machine (a broken peer mapping, a kernel bug at this size)
//    stops the run with a DeviceError naming the rank, the strategy and the first wrong element,
//    instead of producing figures. A lossy strategy (fp8 `quant`) is held to its documented bound
//    (quant_allreduce.cuh): per element at most sum over ranks of the group's amax * 2^-4, plus
//    the final rounding.
//    Collective: every rank of the group builds the same list (same step) and enqueues it at the
//    same point, from its own thread (threads mode) or process (MPI).
//  * bench-comm's #wrong column (measure/bench_comm_gpu.cpp): random inputs, every element counted, with the
//    tolerances of random data; built on the same reference and comparisons below.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "core/dtype.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "cuda/runtime/host_elements.hpp"
#include "cuda/comm/rank_comm.hpp"

namespace eaglesim::cuda {

using HostBytes = std::vector<unsigned char>;  // a device buffer's copy on the host

// ------------------------------------------------------------------ the host reference

// Elements per fp8 scale of the lossy strategy (quant_allreduce.cuh): its error bound is per group.
constexpr std::size_t kQuantGroup = 128;

// The exact sum over ranks of every element, in float64, with what tolerances are made of.
struct AllreduceReference {
  std::vector<double> sum;             // per element
  std::vector<double> abs_sum;         // per element: sum over ranks of |value|
  std::vector<double> group_amax_sum;  // per kQuantGroup elements: sum over ranks of the group's max |value|

  explicit AllreduceReference(std::size_t count)
      : sum(count, 0), abs_sum(count, 0), group_amax_sum((count + kQuantGroup - 1) / kQuantGroup, 0) {}
  // Adds one rank's inputs, value(i) for every element i.
  template <class Value>
  void add_rank(Value value) {
    std::vector<double> amax(group_amax_sum.size(), 0);
    for (std::size_t i = 0; i < sum.size(); ++i) {
      const double v = value(i);
      sum[i] += v;
      abs_sum[i] += std::fabs(v);
      amax[i / kQuantGroup] = std::max(amax[i / kQuantGroup], std::fabs(v));
    }
    for (std::size_t g = 0; g < amax.size(); ++g) group_amax_sum[g] += amax[g];
  }
  // Adds one rank's inputs as the GPU held them (a copy of its input buffer).
  void add_rank(DType t, const HostBytes& bytes) {
    add_rank([&](std::size_t i) { return read_element(t, bytes.data(), i); });
  }
};

// How far an allreduce result may be from the reference sum, per element:
//   of_sum * |sum| + of_abs_sum * sum|x| + of_group_amax * sum amax(group) + absolute.
struct SumTolerance {
  double of_sum = 0, of_abs_sum = 0, of_group_amax = 0, absolute = 0;
  double at(const AllreduceReference& ref, std::size_t i) const {
    return of_sum * std::fabs(ref.sum[i]) + of_abs_sum * ref.abs_sum[i] +
           of_group_amax * ref.group_amax_sum[i / kQuantGroup] + absolute;
  }
};

// The elements of `got` farther from want(i) than tolerance(i) (NaN always is); the first one
// is kept for the message.
struct Mismatches {
  std::size_t count = 0, first = 0;
  double first_got = 0, first_want = 0;
  template <class Want, class Tolerance>
  void scan(DType t, const HostBytes& got, std::size_t n, Want want, Tolerance tolerance) {
    for (std::size_t i = 0; i < n; ++i) {
      const double g = read_element(t, got.data(), i), w = want(i);
      if (std::fabs(g - w) <= tolerance(i)) continue;  // NaN fails here too
      if (count++ == 0) first = i, first_got = g, first_want = w;
    }
  }
};

// RMSNorm of the residual the GPU holds (tokens x hidden, in float64) times weight(h): what the
// fused kernel's normed output is compared with, so one rounding of the residual is not
// amplified into a norm mismatch.
template <class Weight>
std::vector<double> rmsnorm_reference(DType t, const HostBytes& residual, std::size_t tokens, std::size_t hidden,
                                      double eps, Weight weight) {
  std::vector<double> want(tokens * hidden);
  for (std::size_t row = 0; row < tokens; ++row) {
    double squares = 0;
    for (std::size_t h = 0; h < hidden; ++h) {
      const double x = read_element(t, residual.data(), row * hidden + h);
      squares += x * x;
    }
    const double inv = 1 / std::sqrt(squares / static_cast<double>(hidden) + eps);
    for (std::size_t h = 0; h < hidden; ++h)
      want[row * hidden + h] = read_element(t, residual.data(), row * hidden + h) * inv * weight(h);
  }
  return want;
}

// The elements at which one rank's result differs bytewise from another rank's in any of its
// buffers (the sum; or the fused kernel's residual and normed output): the ranks of a strategy
// that sums in a fixed order must hold bitwise the same result.
std::size_t differing_elements(DType t, std::size_t count, const std::vector<const HostBytes*>& mine,
                               const std::vector<const HostBytes*>& theirs);

// ------------------------------------------------------------------ the replay's self-check

// One collective shape a step runs through `comm`: a plain allreduce of `count` elements, or
// (fused) allreduce + residual add + RMSNorm over tokens x hidden.
struct CollectiveUse {
  RankComm* comm = nullptr;
  DType dtype = DType::bf16;
  std::size_t count = 0;
  bool fused = false;
  std::size_t tokens = 0, hidden = 0;  // fused only
  float eps = 1e-5f;                   // fused only
  bool operator==(const CollectiveUse& o) const {
    return comm == o.comm && dtype == o.dtype && count == o.count && fused == o.fused && tokens == o.tokens &&
           hidden == o.hidden;
  }
};

class AllreduceSelfCheck {
 public:
  // Allocates and fills the inputs on the current device (synchronously). `rank`: this rank;
  // the group size is the communicators' (the inputs of every rank are known to every rank).
  // Uses through the lower bound, which moves nothing, are left out.
  AllreduceSelfCheck(const std::vector<CollectiveUse>& uses, int rank);
  // Nothing to run: the step has no collective, or only ones through the lower bound.
  bool empty() const { return cases_.empty() && unchecked_.empty(); }
  // Enqueues every collective on `stream` (no host sync: the caller watches the stream).
  void enqueue(cudaStream_t stream);
  // After the stream has finished: compares the results with the reference; throws DeviceError
  // on the first mismatching shape. Returns a one-line summary for the report's notes.
  std::string verify() const;
  // Shapes verify() compares (those of a dtype without an exact host reference are left out).
  std::size_t checked_shapes() const { return cases_.size(); }

 private:
  struct Case {
    CollectiveUse use;
    DeviceBuffer in, out, residual, weight, normed;
  };
  std::vector<Case> cases_;
  std::vector<std::string> unchecked_;
  int rank_, ranks_ = 1;
};

}  // namespace eaglesim::cuda
