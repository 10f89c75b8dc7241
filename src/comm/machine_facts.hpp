#pragma once
// What a serving engine finds out about the machine at start-up before it picks its allreduce
// paths: the GPU generation, whether every pair of GPUs passes its P2P check, whether NVML shows
// NVLink between every pair, and whether NVLink multicast (NVSwitch with NVLS) is there. The
// simulator reads them off a topology; the CUDA backend probes the GPUs it drives.
#include <string>

#include "topology/topology.hpp"

namespace eaglesim {

struct MachineFacts {
  std::string gpu_name;
  int gpu_count = 1;
  int nodes = 1;
  int gpus_per_node = 1;     // a group of more ranks spans nodes: the engines' custom paths are off
  ComputeCapability capability;
  bool p2p = false;          // every pair of GPUs loads/stores the other's memory (the engines' P2P test)
  bool full_nvlink = false;  // NVLink between every pair of a node (SGLang is_full_nvlink, vLLM is_fully_connected)
  bool multicast = false;    // NVLink multicast objects can be made (torch symmetric memory's multicast_ptr)
  std::string source;        // where the facts come from, for the report: "topology NAME" or the probe
};

// NVSwitch and NVLink-mesh topologies have full NVLink; multicast needs an NVSwitch of the
// Hopper generation or later (NVLS, compute capability >= 9.0); P2P is the topology's.
MachineFacts machine_facts(const Topology& t);

}  // namespace eaglesim
