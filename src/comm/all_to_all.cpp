#include "comm/all_to_all.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "comm/nccl_constants.hpp"
#include "core/errors.hpp"
#include "topology/paths.hpp"

namespace eaglesim {

namespace {

constexpr const char* kFlag = "--a2a";

// DeepEP's low-latency kernels as its README publishes them (deepseek-ai/DeepEP, "Low-latency
// kernels"): 128 tokens a rank, hidden 7168, top-8 of 256 experts, fp8 dispatch and bf16 combine,
// on H800 with one ConnectX-7 400 Gb/s NIC each. Two rows give the kernels' two rates: EP8 on one
// node since the kernels use NVLink inside a node (table since 2025-06-05: dispatch 77 us,
// combine 114 us), and EP8 when every transfer went over RDMA (the first table, 2025-02-25:
// 163 us and 318 us). The multi-node rows of the current table (EP16-EP128) are not used here:
// docs/validation.md checks the model against them.
constexpr std::int64_t kRefTokens = 128, kRefHidden = 7168, kRefExperts = 256;
constexpr int kRefTopK = 8, kRefRanks = 8;
constexpr double kRefNvlinkDispatchUs = 77, kRefNvlinkCombineUs = 114;
constexpr double kRefRdmaDispatchUs = 163, kRefRdmaCombineUs = 318;
// The reference machine's fixed terms, as this file prices them on any topology: a launch
// (2.5 us, the Hopper presets' launch gap) and a signal's round trip over the slowest path
// (NVLink 0.8 us one way; the NIC 3.0 us one way, as the InfiniBand presets take it).
constexpr double kRefLaunchUs = 2.5, kRefNvlinkLatencyUs = 0.8, kRefNicLatencyUs = 3.0;
// What the NIC carries as NCCL reaches it (the presets' 48 GB/s for NDR 400 Gb/s): the RDMA rate
// below is a share of it.
constexpr double kRefNicGbs = 48.0;
// Every low-latency dispatch message carries a 16-byte header (the token's index) besides the
// hidden state and its scales.
constexpr double kLlHeaderBytes = 16;

double ll_token_bytes(const AllToAllQuery& q) {
  return all_to_all_token_bytes(q) + (q.phase == AllToAllPhase::dispatch ? kLlHeaderBytes : 0.0);
}

double ref_copy_bytes(AllToAllPhase phase) {
  AllToAllQuery r;
  r.phase = phase;
  r.hidden = kRefHidden;
  r.dtype = phase == AllToAllPhase::dispatch ? DType::fp8 : DType::bf16;
  return static_cast<double>(kRefTokens) * kRefTopK * ll_token_bytes(r) * (kRefRanks - 1) / kRefRanks;
}

// The low-latency kernels' rates, GB/s: copying over NVLink with the few SMs they take, and the
// share of a NIC's rate their RDMA writes reach (one per routed expert, a few KB each).
struct LlRates {
  double nvlink_gbs;
  double rdma_share;
};
LlRates ll_rates(AllToAllPhase phase) {
  const bool d = phase == AllToAllPhase::dispatch;
  const double bytes = ref_copy_bytes(phase);  // leaves each rank for its 7 peers
  const double nvlink_us = (d ? kRefNvlinkDispatchUs : kRefNvlinkCombineUs) - (kRefLaunchUs + 2 * kRefNvlinkLatencyUs);
  const double rdma_us = (d ? kRefRdmaDispatchUs : kRefRdmaCombineUs) - (kRefLaunchUs + 2 * kRefNicLatencyUs);
  return {bytes / (nvlink_us * 1e3), bytes / (rdma_us * 1e3) / kRefNicGbs};
}

int ranks_per_node(const Topology& t, int ranks) { return std::min(ranks, t.gpus_per_node()); }

// A signal's round trip over the slowest path of the group plus the launch.
double fixed_us(const Topology& t, int ranks) {
  return t.gpu.launch_gap_us + 2 * worst_path(t, ranks).latency_us;
}

AllToAllCost deepep_ll(const AllToAllQuery& q) {
  const Topology& t = *q.topo;
  const LlRates rates = ll_rates(q.phase);
  const double per_node = ranks_per_node(t, q.ranks);
  // One message per routed expert; a share of them stays on this rank, in this node, or leaves it.
  const double copies = static_cast<double>(q.tokens) * q.top_k;
  const double bytes = copies * ll_token_bytes(q);
  const double nvlink_bytes = bytes * (per_node - 1) / q.ranks;
  const double rdma_bytes = bytes * (q.ranks - per_node) / q.ranks;
  const double nvlink_gbs = std::min(rates.nvlink_gbs, t.nvlink.bw_gbs);
  // The warps copy the node's share over NVLink while the NIC streams the rest: the longer one.
  const double nvlink_us = nvlink_bytes > 0 ? nvlink_bytes / (nvlink_gbs * 1e3) : 0.0;
  const double rdma_us = rdma_bytes > 0 ? rdma_bytes / (rates.rdma_share * t.network.nic.bw_gbs * 1e3) : 0.0;
  AllToAllCost c;
  c.us = fixed_us(t, q.ranks) + std::max(nvlink_us, rdma_us);
  c.detail = fmt::format("deepep_ll {}: {:.2f} MB over NVLink{}", to_string(q.phase), nvlink_bytes / 1e6,
                         rdma_bytes > 0 ? fmt::format(", {:.2f} MB over RDMA", rdma_bytes / 1e6) : std::string());
  return c;
}

// NCCL's all-to-all: a grouped send and receive to every peer, each token once per destination
// rank. The flows share the links as the path model shares them (rail-optimised fabrics through
// the destination's rail); a launch and one step's latency of NCCL's Simple protocol over the
// slowest link class come first (tuning.cc hwLat, ring/Simple: NVLink 3.4, PCIe 5.7, network 14 us).
AllToAllCost nccl_all_to_all(const AllToAllQuery& q) {
  using namespace nccl;
  const Topology& t = *q.topo;
  const double per_token = distinct_ranks_per_token(q.ranks, q.experts, q.top_k);
  const double bytes = static_cast<double>(q.tokens) * per_token * all_to_all_token_bytes(q);
  const double per_pair = bytes / q.ranks;
  const bool multi_node = t.nodes_spanned(q.ranks) > 1;
  const Hw hw = multi_node ? kNet : (uses_nvlink(t) && t.p2p ? kNvlink : kPci);
  const double latency = kBaseLatUs[kRing][kSimple] + kHwLatUs[hw][kRing][kSimple];
  const double transfer = flows_time_us(t, all_to_all_flows(q.ranks, per_pair));
  return {latency + transfer, fmt::format("nccl all-to-all {}: {:.2f} MB a rank, {:.2f} destinations a token",
                                          to_string(q.phase), bytes / 1e6, per_token)};
}

}  // namespace

const char* to_string(AllToAllPhase p) { return p == AllToAllPhase::dispatch ? "dispatch" : "combine"; }

double all_to_all_token_bytes(const AllToAllQuery& q) {
  const double h = static_cast<double>(q.hidden);
  if (q.phase == AllToAllPhase::dispatch && q.dtype == DType::fp8) return h + std::ceil(h / 128.0) * 4.0;
  return h * 2.0;
}

double distinct_ranks_per_token(int ranks, std::int64_t experts, int top_k) {
  if (ranks <= 1 || experts <= 0 || top_k <= 0) return 1.0;
  const double e = static_cast<double>(experts), local = e / ranks;
  const int k = static_cast<int>(std::min<std::int64_t>(top_k, experts));
  // P(no expert of a given rank among k drawn without replacement) = prod (e - local - i) / (e - i).
  double miss = 1.0;
  for (int i = 0; i < k; ++i) miss *= std::max(0.0, e - local - i) / (e - i);
  return ranks * (1.0 - miss);
}

const std::vector<std::string>& all_to_all_strategy_names() {
  static const std::vector<std::string> names{"nccl", "deepep_ll", "ideal"};
  return names;
}

bool is_all_to_all_strategy(const std::string& name) {
  const auto& n = all_to_all_strategy_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::string all_to_all_problem(const std::string& strategy, const AllToAllQuery& q) {
  if (!q.topo) return "no topology";
  const Topology& t = *q.topo;
  if (q.ranks < 1) return fmt::format("needs at least 1 rank, got {}", q.ranks);
  if (std::string why = ranks_placement_problem(t, q.ranks); !why.empty()) return why;
  if (q.tokens < 0 || q.hidden <= 0 || q.top_k < 1 || q.experts < q.ranks)
    return fmt::format("needs tokens >= 0, a hidden size, top_k >= 1 and at least one expert a rank "
                       "(tokens {}, hidden {}, top_k {}, {} experts on {} ranks)",
                       q.tokens, q.hidden, q.top_k, q.experts, q.ranks);
  if (strategy == "deepep_ll") {
    if (t.gpu.capability().major < 9)
      return fmt::format("DeepEP's kernels need compute capability 9.0 or later; {} is {}", t.gpu.name,
                         t.gpu.capability().to_string());
    if (ranks_per_node(t, q.ranks) > 1 && !(uses_nvlink(t) && t.p2p))
      return fmt::format("DeepEP moves the data inside a node over NVLink; topology {} has {}", t.name,
                         to_string(t.interconnect));
  }
  return "";
}

AllToAllCost all_to_all_cost(const std::string& strategy, const AllToAllQuery& q) {
  if (!is_all_to_all_strategy(strategy))
    throw InputError(fmt::format("{}: expected one of nccl, deepep_ll, ideal, got '{}'", kFlag, strategy));
  if (std::string why = all_to_all_problem(strategy, q); !why.empty())
    throw InputError(fmt::format("{}: {} cannot run the MoE {} over {} ranks of {}: {}", kFlag, strategy,
                                 to_string(q.phase), q.ranks, q.topo ? q.topo->name : "?", why));
  if (q.ranks <= 1 || strategy == "ideal") return {0.0, q.ranks <= 1 ? "1 rank: no all-to-all" : "ideal: free"};
  if (strategy == "deepep_ll") return deepep_ll(q);
  return nccl_all_to_all(q);
}

}  // namespace eaglesim
