#pragma once
// Expert parallelism's all-to-alls: a MoE layer's dispatch (each rank sends its tokens' hidden
// states to the ranks holding their routed experts) and combine (the experts' outputs come back,
// in bf16). Priced per strategy on a topology, single- or multi-node; docs/strategies.md lists
// the strategies and where their figures come from.
//
// Routing is taken as balanced: each of a token's top-k experts sits on a rank drawn uniformly, so
// a share ranks_per_node / ranks of the copies stays in the sender's node (one in `ranks` on the
// sender itself, which moves nothing) and the rest crosses the network.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

enum class AllToAllPhase { dispatch, combine };
const char* to_string(AllToAllPhase p);

struct AllToAllQuery {
  const Topology* topo = nullptr;
  int ranks = 1;               // the expert-parallel group: ranks 0..ranks-1
  AllToAllPhase phase = AllToAllPhase::dispatch;
  std::int64_t tokens = 0;     // this rank's tokens (dispatch sends them; combine brings them back)
  std::int64_t hidden = 0;
  int top_k = 1;               // experts per token
  std::int64_t experts = 1;    // routed experts in all, spread evenly over the ranks
  DType dtype = DType::bf16;   // the payload: dispatch bf16 or fp8 (then one fp32 scale per 128 values); combine bf16
};

struct AllToAllCost {
  double us = 0;
  std::string detail;  // e.g. "deepep_ll: 3.79 MB over RDMA, 3.32 MB over NVLink"
};

// Bytes one token's hidden state takes on the wire in this phase's payload format.
double all_to_all_token_bytes(const AllToAllQuery& q);
// Expected distinct ranks among a token's top-k experts under balanced routing:
// ranks x (1 - C(E - E/ranks, k) / C(E, k)).
double distinct_ranks_per_token(int ranks, std::int64_t experts, int top_k);

// The strategies that price an all-to-all, in report order: nccl (grouped send/recv, each
// token sent once per destination rank), deepep_ll (DeepEP's low-latency kernels: one copy per
// routed expert, RDMA between nodes and NVLink inside them), ideal (free: the lower bound).
const std::vector<std::string>& all_to_all_strategy_names();
bool is_all_to_all_strategy(const std::string& name);
// Why `strategy` cannot run this all-to-all, or "" when it can.
std::string all_to_all_problem(const std::string& strategy, const AllToAllQuery& q);
// InputError (naming --a2a) for an unknown strategy or a case it cannot run.
AllToAllCost all_to_all_cost(const std::string& strategy, const AllToAllQuery& q);

}  // namespace eaglesim
