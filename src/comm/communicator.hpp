#pragma once
// The allreduce strategies, one interface. Each declares what it supports and prices an
// allreduce of a given size on a topology (the simulator's cost model). The real CUDA
// implementations live in src/cuda/ and kernels/ and are looked up by the same name.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

// Forcing knobs for the NCCL model (--nccl-algo / --nccl-proto); empty = choose as NCCL would.
struct NcclOptions {
  std::string algo;   // "", ring, tree
  std::string proto;  // "", LL, LL128, Simple
  int channels = 0;   // 0 = as NCCL would
};

struct CommSupport {
  bool ok = true;
  std::string reason;  // why not, in words a user understands
};

struct CommCost {
  double us = 0;             // cost of one allreduce, from the last rank's arrival to completion
  std::string detail;        // e.g. "ring/LL 2ch", "oneshot pull", "calibrated"
  bool calibrated = false;   // from a measured table
  bool extrapolated = false; // outside the measured table: model used
};

struct CommQuery {
  const Topology* topo = nullptr;
  int ranks = 1;
  std::int64_t bytes = 0;
  DType dtype = DType::bf16;
  NcclOptions nccl;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual CommSupport supports(const Topology& topo, int ranks, std::int64_t bytes) const = 0;
  virtual CommCost cost(const CommQuery& q) const = 0;
  // The allreduce absorbs the residual_add + rmsnorm that follow it in the trace (the
  // strategy table's fact for this name; a test double may say otherwise).
  virtual bool fuses_residual_norm() const;
};

// Registry keyed by name: the runnable strategies of comm/strategy_facts.hpp, in its order.
const Communicator& find_communicator(const std::string& name);  // InputError listing known names
std::vector<std::string> communicator_names();
// Parses "nccl,oneshot" or "all" into names; InputError on unknown names.
std::vector<std::string> parse_strategy_list(const std::string& list);

}  // namespace eaglesim
