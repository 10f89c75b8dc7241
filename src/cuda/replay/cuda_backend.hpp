#pragma once
// The "cuda" backend: replays a trace step on this machine's GPUs (see step_replay.hpp).
// Rank count: RunOptions.ranks, else the trace's tp; under mpirun, one rank per process.
#include <memory>

#include "backend/backend.hpp"

namespace eaglesim::cuda {

std::unique_ptr<Backend> make_cuda_backend();
void register_cuda_backend();  // register_backend("cuda", ...)

}  // namespace eaglesim::cuda
