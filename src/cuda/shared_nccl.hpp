#pragma once
// The process's NCCL communicators: one set per list of GPUs (and NCCL settings), created on
// first use and kept for the life of the process, shared by every group that needs NCCL — the
// `nccl` strategy, the custom strategies' fallback, bench-comm — as a serving engine keeps the
// one it creates at start-up.
//
// Why not one per group: a communicator created after another one of the process had come and
// gone ran Llama-3.1-70B TP2's 161 allreduces 1.5-2.3 us each slower than the process's first
// (2 x H200, NCCL 2.28: 22548 us for the step in a process of its own, 22915 after a one-shot
// run, 22802 after another trace; docs/fidelity.md, sixth session). Replays, A/B runs and
// calibrations that each made their own therefore measured NCCL in a state a serving process
// is not in, and which of them did depended on the order of the runs.
#include <memory>
#include <vector>

#include "cuda/custom_nccl.hpp"

namespace eaglesim::cuda {

// The communicators for `devices` (rank i on devices[i]) under the NCCL environment as it is
// now (NCCL_ALGO, NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS: --nccl-* options); created if the process
// has none for them. Throws DeviceError when NCCL cannot create them.
std::shared_ptr<NcclComms> shared_nccl_comms(const std::vector<int>& devices);

// After an abort: forgets `comms` so that the next caller gets new communicators (an aborted
// communicator cannot run another collective). No-op for communicators the cache does not hold.
void forget_shared_nccl_comms(const NcclComms* comms);

}  // namespace eaglesim::cuda
