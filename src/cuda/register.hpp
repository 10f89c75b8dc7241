#pragma once
// Entry point of the optional CUDA part: registers the "cuda" backend and the GPU-only
// commands' implementations with the host library. Built into a program (the GPU tests,
// eaglesim-cuda-replay) it is called directly; as the module libeaglesim-cuda.so, eaglesim calls
// it through the C entry point below when a command first needs a GPU (core/cuda_part_loader).
namespace eaglesim::cuda {
void register_cuda_part();
}

extern "C" void eaglesim_register_cuda_part();
