#pragma once
// Before a replay times a strategy, every rank runs each collective shape the step uses once on
// data whose sum is known exactly (small integers, so bf16 / fp16 / fp32 sums are exact) and
// compares what it got with the reference on the host. A strategy that is fast but wrong on
// this machine (a broken peer mapping, a kernel bug at this size) stops the run with a
// DeviceError naming the rank, the strategy and the first wrong element, instead of producing
// figures. fp8 `quant` is held to its documented bound (quant_allreduce.cuh): per element at
// most sum over ranks of the group's amax * 2^-4, plus the final rounding.
// Collective: every rank of the group builds the same list (same step) and enqueues it at the
// same point, from its own thread (threads mode) or process (MPI).
#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "core/dtype.hpp"
#include "cuda/rank_comm.hpp"
#include "cuda/replay_buffer.hpp"

namespace eaglesim::cuda {

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
  // Uses through `ideal`, which moves nothing, are left out.
  AllreduceSelfCheck(const std::vector<CollectiveUse>& uses, int rank);
  // Nothing to run: the step has no collective, or only `ideal` ones.
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
    ReplayBuffer in, out, residual, weight, normed;
  };
  std::vector<Case> cases_;
  std::vector<std::string> unchecked_;
  int rank_, ranks_ = 1;
};

}  // namespace eaglesim::cuda
