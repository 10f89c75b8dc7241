#pragma once
// Entry point of the optional CUDA part: registers the "cuda" backend and the GPU-only
// commands' implementations with the host library. Called once from main().
namespace eaglesim::cuda {
void register_cuda_part();
}
