#pragma once
// The optional CUDA part (replay backend, bench-comm and calibrate on GPUs) is a module,
// libeaglesim-cuda.so, that eaglesim opens the first time a command needs a GPU. Planning commands
// (gen, inspect, run --backend sim, sweep, --version) never load it, so they start fast and run on
// machines without the CUDA libraries.
#include <string>

namespace eaglesim {

struct CudaPartLoad {
  bool loaded = false;
  std::string path;  // the module opened, or the first place looked
  std::string why;   // when not loaded: what was missing, for the command's error message
};

// Opens the module once per process and calls its registration (the `cuda` backend and the GPU
// commands' implementations register with the host library's registries). Where it looks, in
// order: $EAGLESIM_CUDA_PART (a path to the module), the executable's directory, then
// ../lib/eaglesim beside it (an installed layout). Thread-safe; later calls return the first result.
const CudaPartLoad& load_cuda_part();

}  // namespace eaglesim
