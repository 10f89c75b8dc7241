#pragma once
// Shared skeleton of every strategy: the rules common to all (rank count against the topology,
// one rank costs nothing), calibration tables before models, and a clear error when asked to
// price what it does not support. Each strategy supplies its own support rules and model.
#include <string>

#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"

namespace eaglesim {

class ModelledCostModel : public CommCostModel {
 public:
  // Common rules, then strategy_supports(). One rank: always supported (nothing to reduce).
  CommSupport supports(const Topology& topo, int ranks, std::int64_t bytes) const final;
  // Throws InputError (with the supports() reason) when unsupported. One rank: 0 µs.
  // A calibration table for this strategy measured on the same rank count wins inside its range.
  CommCost cost(const CommQuery& q) const final;

 protected:
  virtual CommSupport strategy_supports(const Topology& topo, int ranks, std::int64_t bytes) const = 0;
  virtual CommCost model(const CommQuery& q) const = 0;
};

// Rules of our custom P2P kernels (the table's needs_p2p entries): they load/store peers'
// buffers directly, are instantiated for 2, 4 and 8 ranks, use 16-byte packed accesses and a
// pre-registered buffer of kMaxCustomBytes (comm/strategy_facts.hpp).
CommSupport p2p_kernel_support(const Topology& topo, int ranks, std::int64_t bytes);
// The same rules for a machine known only by whether its GPUs have P2P (the CUDA backend's probe).
CommSupport p2p_kernel_support(bool p2p, int ranks, std::int64_t bytes);

}  // namespace eaglesim
