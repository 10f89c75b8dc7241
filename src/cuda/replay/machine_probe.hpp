#pragma once
// The machine facts an engine reads at start-up (comm/machine_facts.hpp), probed on the GPUs a
// replay drives, so that the engine strategies pick on the CUDA backend what the engine would
// pick on this machine: compute capability and name (cudaGetDeviceProperties), P2P between every
// pair (cudaDeviceCanAccessPeer), NVLink between every pair (P2P with native atomics, which PCIe
// peers lack; NVML, which the engines ask, is not linked here), NVLink multicast
// (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED through the driver entry point).
#include <vector>

#include "comm/machine_facts.hpp"

namespace eaglesim::cuda {

MachineFacts probe_machine(const std::vector<int>& devices);

}  // namespace eaglesim::cuda
