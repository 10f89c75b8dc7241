#include "comm/machine_facts.hpp"

namespace eaglesim {

MachineFacts machine_facts(const Topology& t) {
  MachineFacts m;
  m.gpu_name = t.gpu.name;
  m.gpu_count = t.gpu_count;
  m.nodes = t.nodes;
  m.gpus_per_node = t.gpus_per_node();
  m.capability = t.gpu.capability();
  m.p2p = t.p2p;
  const bool nvlink = t.interconnect == Interconnect::nvswitch || t.interconnect == Interconnect::nvlink_mesh;
  m.full_nvlink = nvlink && t.nvlink.present();
  m.multicast = t.interconnect == Interconnect::nvswitch && m.capability.major >= 9;
  m.source = "topology " + t.name;
  return m;
}

}  // namespace eaglesim
