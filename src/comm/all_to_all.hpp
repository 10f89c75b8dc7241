#pragma once
// Expert parallelism's all-to-alls: a MoE layer's dispatch (each rank sends its tokens' hidden
// states to the ranks holding their routed experts) and combine (the experts' outputs come back,
// in bf16). Priced per strategy on a topology, single- or multi-node; docs/strategies.md lists
// the strategies and where their figures come from.
//
// Routing is taken as balanced: each of a token's top-k experts sits on a rank drawn uniformly, so
// a share ranks_per_node / ranks of the copies stays in the sender's node (one in `ranks` on the
// sender itself, which moves nothing) and the rest crosses the network. With group-limited routing
// (DeepSeek-V3's, one group of experts a node: `max_nodes_per_token`) the experts are drawn from
// that many nodes, each node as likely as any other.
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
  int max_nodes_per_token = 0; // group-limited routing: a token's experts lie in at most this many nodes; 0: any
};

struct AllToAllCost {
  double us = 0;
  std::string detail;    // e.g. "deepep_ll: 3.79 MB over RDMA, 3.32 MB over NVLink"
  std::string runs_as;   // the strategy that priced it (auto: the one it picked)
  // The bytes the strategy's own benchmark divides by the time, and what they count, so that
  // bench-comm prints GB/s as DeepEP's tests print them: deepep_ll "routed copies" (tokens x top-k),
  // deepep_normal its bottleneck link ("NVLink" inside a node, "RDMA" across nodes), nccl "sent".
  double counted_bytes = 0;
  std::string counted_as;
};

// Expected distinct nodes and ranks among a token's top-k experts, under the query's routing.
struct TokenSpread {
  double nodes = 1;
  double ranks = 1;
};
TokenSpread token_spread(const AllToAllQuery& q);

// Bytes one token's hidden state takes on the wire in this phase's payload format.
double all_to_all_token_bytes(const AllToAllQuery& q);
// Expected distinct ranks among a token's top-k experts under balanced routing:
// ranks x (1 - C(E - E/ranks, k) / C(E, k)).
double distinct_ranks_per_token(int ranks, std::int64_t experts, int top_k);

// The strategies that price an all-to-all, in report order: nccl (grouped send/recv, each
// token sent once per destination rank), deepep_ll (DeepEP's low-latency kernels: one copy per
// routed expert, RDMA between nodes and NVLink inside them), deepep_normal (DeepEP's normal,
// high-throughput kernels: one copy per destination node over RDMA, fanned out over NVLink),
// auto (SGLang's --deepep-mode auto for a decode-like step: deepep_ll while the tokens fit its
// per-rank limit, else deepep_normal), ideal (free: the lower bound).
const std::vector<std::string>& all_to_all_strategy_names();
bool is_all_to_all_strategy(const std::string& name);
// InputError naming --a2a when `name` is not one of all_to_all_strategy_names().
void check_all_to_all_strategy(const std::string& name);
// The strategies bench-comm prices by default and for `all`: every one but the free lower bound.
std::vector<std::string> all_to_all_bench_names();
// DeepEP low-latency's per-rank token limit as SGLang sizes its buffer (num_max_dispatch_tokens_per_rank).
int deepep_ll_max_tokens_per_rank();
// What `strategy` runs as for this query: itself, or for auto the DeepEP mode it picks.
std::string all_to_all_runs_as(const std::string& strategy, const AllToAllQuery& q);
// Why `strategy` cannot run this all-to-all, or "" when it can.
std::string all_to_all_problem(const std::string& strategy, const AllToAllQuery& q);
// InputError (naming --a2a) for an unknown strategy or a case it cannot run.
AllToAllCost all_to_all_cost(const std::string& strategy, const AllToAllQuery& q);

}  // namespace eaglesim
