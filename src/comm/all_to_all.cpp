#include "comm/all_to_all.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// SGLang sizes DeepEP's low-latency buffer for this many tokens a rank (sgl-project/sglang
// python/sglang/srt/environ.py at 0003215cf1464f44b389cd0b18d0b4c56f2a3da6:
// SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK = EnvInt(128)); DeepEP asserts that a dispatch
// stays within num_max_dispatch_tokens_per_rank, so a larger step cannot run these kernels.
constexpr int kLlMaxTokensPerRank = 128;

// DeepEP's normal (high-throughput) kernels as its README publishes them (deepseek-ai/DeepEP,
// "Normal kernels with NVLink and RDMA forwarding"; README.md at commit
// 567632dd59810d77b3cc05553df953cc0f779799, the same table in docs/legacy.md since b306af06):
// H800 (NVLink ~160 GB/s), one ConnectX-7 400 Gb/s NIC a GPU, 4096 tokens a rank, hidden 7168,
// top-8 of 256 experts, fp8 dispatch and bf16 combine. Its tests (tests/test_intranode.py,
// test_internode.py) divide by the data kernel's time alone (the notify kernel is timed apart):
// inside a node the copies a rank receives (its own included), "NVLink"; across nodes one copy per
// node a token reaches (its own node included), "RDMA"; the internode test routes each token to
// min(nodes, 4) nodes (one group of experts a node). Three rows are fitted: EP8 dispatch 153 and
// combine 158 GB/s (different payloads, one NVLink rate and one fixed term fit both) and EP32
// dispatch 58 GB/s (the RDMA rate). The other rows (EP16 43 / 43, EP32 combine 57, EP64 51 / 50)
// are held out: tests/unit/test_all_to_all.cpp and docs/validation.md compare the model with them.
constexpr std::int64_t kNormalRefTokens = 4096;
constexpr double kNormalEp8DispatchGbs = 153, kNormalEp8CombineGbs = 158, kNormalEp32DispatchGbs = 58;
constexpr int kNormalRefNodeGroups = 4;
// The H800's NVLink: 400 GB/s in both directions, 200 a direction. The fitted NVLink rate is taken
// as a share of it, so on another GPU the kernels reach that share of its NVLink.
constexpr double kRefH800NvlinkGbs = 200.0;
// DeepEP's internode kernels pair each GPU with the same local index on every other node and
// forward within groups of NUM_MAX_NVL_PEERS = 8 GPUs, over at most NUM_MAX_RDMA_PEERS = 20 nodes
// (csrc/kernels/configs.cuh; csrc/deep_ep.cpp asserts num_ranks % 8 == 0 across nodes).
constexpr int kNormalNvlPeers = 8, kNormalMaxNodes = 20;

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

// Expected distinct nodes and ranks a token's top-k experts reach among `ranks` ranks, `per_node`
// a node, the experts spread evenly; with `max_nodes` (0: any) the experts are drawn from that many
// nodes' experts.
TokenSpread spread(int ranks, int per_node, std::int64_t experts, int top_k, int max_nodes) {
  const int nodes = std::max(1, ranks / std::max(1, per_node));
  const int reach = max_nodes > 0 ? std::min(max_nodes, nodes) : nodes;
  const std::int64_t pool = experts / nodes * reach;  // the experts a token picks from
  return {distinct_ranks_per_token(reach, pool, top_k), distinct_ranks_per_token(reach * per_node, pool, top_k)};
}

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
  // DeepEP's test_low_latency.py counts every routed copy, its header included.
  c.counted_bytes = bytes;
  c.counted_as = "routed copies";
  return c;
}

// The normal kernels' fit to the three published rows above: an NVLink rate and a fixed term from
// the two EP8 rows, then the RDMA rate from EP32 dispatch, each rate as a share of the reference
// machine's link (H800 NVLink, the presets' CX7 NIC figure as the low-latency fit takes it).
struct NormalFit {
  double nvlink_share;
  double rdma_share;
  double kernel_fixed_us;  // the data kernel's own fixed time, on top of its bytes
};
const NormalFit& normal_fit() {
  static const NormalFit fit = [] {
    AllToAllQuery r;
    r.hidden = kRefHidden;
    r.dtype = DType::fp8;
    const double fp8_bytes = all_to_all_token_bytes(r);
    r.phase = AllToAllPhase::combine;
    const double bf16_bytes = all_to_all_token_bytes(r);
    const double tokens = static_cast<double>(kNormalRefTokens);
    const double received = tokens * spread(8, 8, kRefExperts, kRefTopK, 0).ranks;
    const double d_bytes = received * fp8_bytes, c_bytes = received * bf16_bytes;
    const double d_us = d_bytes / (kNormalEp8DispatchGbs * 1e3), c_us = c_bytes / (kNormalEp8CombineGbs * 1e3);
    const double nvlink = (c_bytes - d_bytes) / (c_us - d_us);  // bytes per us
    const double fixed = d_us - d_bytes / nvlink;
    const int nodes = 4;
    const double node_copies =
        tokens * spread(8 * nodes, 8, kRefExperts, kRefTopK, kNormalRefNodeGroups).nodes * fp8_bytes;
    const double ep32_us = node_copies / (kNormalEp32DispatchGbs * 1e3);
    const double rdma = node_copies * (nodes - 1) / nodes / (ep32_us - fixed);
    return NormalFit{nvlink / 1e3 / kRefH800NvlinkGbs, rdma / 1e3 / kRefNicGbs, fixed};
  }();
  return fit;
}

// DeepEP's normal kernels: a token goes once to each node holding one of its experts (over RDMA to
// the GPU of the same local index there), and that GPU forwards it over NVLink to the node's ranks
// that hold its experts; inside one node the copies go over NVLink directly. The NIC and NVLink
// stages run in a pipeline, so the slower of them sets the time.
AllToAllCost deepep_normal(const AllToAllQuery& q) {
  const Topology& t = *q.topo;
  const NormalFit& f = normal_fit();
  const TokenSpread s = token_spread(q);
  const int nodes = t.nodes_spanned(q.ranks);
  const double token_bytes = all_to_all_token_bytes(q);
  const double tokens = static_cast<double>(q.tokens);
  // Every copy a rank receives passes through its NVLink buffers (its own copies included).
  const double nvlink_bytes = tokens * s.ranks * token_bytes;
  // One copy per node reached; the copy for the sender's own node stays off the NIC.
  const double node_copies = tokens * s.nodes * token_bytes;
  const double rdma_bytes = nodes > 1 ? node_copies * (nodes - 1) / nodes : 0.0;
  const double nvlink_gbs = f.nvlink_share * t.nvlink.bw_gbs;
  const double rdma_gbs = f.rdma_share * t.network.nic.bw_gbs;
  const double nvlink_us = t.nvlink.present() ? nvlink_bytes / (nvlink_gbs * 1e3) : 0.0;
  const double rdma_us = rdma_bytes > 0 ? rdma_bytes / (rdma_gbs * 1e3) : 0.0;
  // Before each data kernel a notify kernel exchanges the counts (a launch and a signal's round
  // trip; the published times leave it out), and a dispatch waits on the host for the count it
  // will receive before its data kernel is sized (the README: "an implicit CPU wait for GPU
  // received count signal"): one more launch.
  const bool dispatch = q.phase == AllToAllPhase::dispatch;
  const double fixed = f.kernel_fixed_us + fixed_us(t, q.ranks) + (dispatch ? t.gpu.launch_gap_us : 0.0);
  AllToAllCost c;
  c.us = fixed + std::max(nvlink_us, rdma_us);
  c.detail = fmt::format("deepep_normal {}: {:.2f} MB over NVLink at {:.0f} GB/s{}, {:.1f} us fixed", to_string(q.phase),
                         nvlink_bytes / 1e6, nvlink_gbs,
                         rdma_bytes > 0 ? fmt::format(", {:.2f} MB over RDMA at {:.1f} GB/s", rdma_bytes / 1e6, rdma_gbs)
                                        : std::string(),
                         fixed);
  c.counted_bytes = nodes > 1 ? node_copies : nvlink_bytes;
  c.counted_as = nodes > 1 ? "RDMA" : "NVLink";
  return c;
}

// NCCL's all-to-all: a grouped send and receive to every peer, each token once per destination
// rank. The flows share the links as the path model shares them (rail-optimised fabrics through
// the destination's rail); a launch and one step's latency of NCCL's Simple protocol over the
// slowest link class come first (tuning.cc hwLat, ring/Simple: NVLink 3.4, PCIe 5.7, network 14 us).
AllToAllCost nccl_all_to_all(const AllToAllQuery& q) {
  using namespace nccl;
  const Topology& t = *q.topo;
  const double per_token = token_spread(q).ranks;
  const double bytes = static_cast<double>(q.tokens) * per_token * all_to_all_token_bytes(q);
  const double per_pair = bytes / q.ranks;
  const bool multi_node = t.nodes_spanned(q.ranks) > 1;
  const Hw hw = multi_node ? kNet : (uses_nvlink(t) && t.p2p ? kNvlink : kPci);
  const double latency = kBaseLatUs[kRing][kSimple] + kHwLatUs[hw][kRing][kSimple];
  const double transfer = flows_time_us(t, all_to_all_flows(q.ranks, per_pair));
  AllToAllCost c;
  c.us = latency + transfer;
  c.detail = fmt::format("nccl all-to-all {}: {:.2f} MB a rank, {:.2f} destinations a token", to_string(q.phase),
                         bytes / 1e6, per_token);
  c.counted_bytes = bytes;
  c.counted_as = "sent";
  return c;
}

// What DeepEP's kernels need of the machine and the step, or "".
std::string deepep_problem(const std::string& strategy, const AllToAllQuery& q) {
  const Topology& t = *q.topo;
  const int nodes = t.nodes_spanned(q.ranks);
  const ComputeCapability cap = t.gpu.capability();
  // The normal kernels run on Ampere inside a node ("A100 support (intranode only)", the README's
  // roadmap); everything else needs Hopper.
  const int needed = strategy == "deepep_normal" && nodes == 1 ? 8 : 9;
  if (cap.major < needed)
    return fmt::format("DeepEP's {} kernels need compute capability {}.0 or later{}; {} is {}",
                       strategy == "deepep_normal" ? "normal" : "low-latency", needed,
                       needed == 8 ? "" : (strategy == "deepep_normal" ? " across nodes" : ""), t.gpu.name,
                       cap.to_string());
  if (ranks_per_node(t, q.ranks) > 1 && !(uses_nvlink(t) && t.p2p))
    return fmt::format("DeepEP moves the data inside a node over NVLink; topology {} has {}", t.name,
                       to_string(t.interconnect));
  if (strategy == "deepep_ll" && q.tokens > kLlMaxTokensPerRank)
    return fmt::format("tokens: expected at most {} a rank (the low-latency buffer's num_max_dispatch_tokens_per_rank, "
                       "SGLang's default), got {}; deepep_normal or auto runs it",
                       kLlMaxTokensPerRank, q.tokens);
  if (strategy == "deepep_normal" && nodes > 1) {
    if (t.gpus_per_node() != kNormalNvlPeers)
      return fmt::format("DeepEP's internode normal kernels forward within nodes of {} GPUs (NUM_MAX_NVL_PEERS); "
                         "topology {} has {} a node",
                         kNormalNvlPeers, t.name, t.gpus_per_node());
    if (nodes > kNormalMaxNodes)
      return fmt::format("DeepEP's normal kernels reach at most {} nodes (NUM_MAX_RDMA_PEERS); {} ranks span {}",
                         kNormalMaxNodes, q.ranks, nodes);
  }
  return "";
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

TokenSpread token_spread(const AllToAllQuery& q) {
  const int per_node = q.topo ? ranks_per_node(*q.topo, q.ranks) : q.ranks;
  return spread(q.ranks, per_node, q.experts, q.top_k, q.max_nodes_per_token);
}

const std::vector<std::string>& all_to_all_strategy_names() {
  static const std::vector<std::string> names{"nccl", "deepep_ll", "deepep_normal", "auto", "ideal"};
  return names;
}

bool is_all_to_all_strategy(const std::string& name) {
  const auto& n = all_to_all_strategy_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::vector<std::string> all_to_all_bench_names() {
  std::vector<std::string> out;
  for (const std::string& s : all_to_all_strategy_names())
    if (s != "ideal") out.push_back(s);
  return out;
}

int deepep_ll_max_tokens_per_rank() { return kLlMaxTokensPerRank; }

// SGLang's --deepep-mode auto resolves by the batch (python/sglang/srt/layers/moe/utils.py at
// 004813e1dd464844bd92ddbca5cab8c024a75f78, DeepEPMode.resolve: normal when the batch extends,
// low_latency otherwise); a speculative verify step is scheduled as a decode batch, so low_latency.
// Low-latency cannot take more tokens a rank than its buffer holds, so above that auto runs the
// normal kernels (SGLang would stop at DeepEP's assertion there).
std::string all_to_all_runs_as(const std::string& strategy, const AllToAllQuery& q) {
  if (strategy != "auto") return strategy;
  return q.tokens <= kLlMaxTokensPerRank ? "deepep_ll" : "deepep_normal";
}

std::string all_to_all_problem(const std::string& strategy, const AllToAllQuery& q) {
  if (!q.topo) return "no topology";
  const Topology& t = *q.topo;
  if (q.ranks < 1) return fmt::format("needs at least 1 rank, got {}", q.ranks);
  if (std::string why = ranks_placement_problem(t, q.ranks); !why.empty()) return why;
  if (q.tokens < 0 || q.hidden <= 0 || q.top_k < 1 || q.experts < q.ranks || q.top_k > q.experts)
    return fmt::format("needs tokens >= 0, a hidden size, 1 <= top_k <= experts and at least one expert a rank "
                       "(tokens {}, hidden {}, top_k {}, {} experts on {} ranks)",
                       q.tokens, q.hidden, q.top_k, q.experts, q.ranks);
  if (q.experts % q.ranks != 0)
    return fmt::format("experts: expected a multiple of the {} ranks (each holds as many), got {}", q.ranks, q.experts);
  if (q.max_nodes_per_token < 0)
    return fmt::format("max_nodes_per_token: expected 0 (any node) or a node count, got {}", q.max_nodes_per_token);
  const std::string runs_as = all_to_all_runs_as(strategy, q);
  if (runs_as == "deepep_ll" || runs_as == "deepep_normal") return deepep_problem(runs_as, q);
  return "";
}

void check_all_to_all_strategy(const std::string& name) {
  if (!is_all_to_all_strategy(name))
    throw InputError(fmt::format("{}: expected one of {}, got '{}'", kFlag, fmt::join(all_to_all_strategy_names(), ", "),
                                 name));
}

AllToAllCost all_to_all_cost(const std::string& strategy, const AllToAllQuery& q) {
  check_all_to_all_strategy(strategy);
  if (std::string why = all_to_all_problem(strategy, q); !why.empty())
    throw InputError(fmt::format("{}: {} cannot run the MoE {} over {} ranks of {}: {}", kFlag, strategy,
                                 to_string(q.phase), q.ranks, q.topo ? q.topo->name : "?", why));
  const std::string runs_as = all_to_all_runs_as(strategy, q);
  AllToAllCost c;
  if (q.ranks <= 1 || runs_as == "ideal") {
    c.detail = q.ranks <= 1 ? "1 rank: no all-to-all" : "ideal: free";
  } else if (runs_as == "deepep_ll") {
    c = deepep_ll(q);
  } else if (runs_as == "deepep_normal") {
    c = deepep_normal(q);
  } else {
    c = nccl_all_to_all(q);
  }
  c.runs_as = runs_as;
  if (strategy != runs_as)
    c.detail = fmt::format("auto: {} ({} tokens a rank {} {}, the low-latency limit); {}", runs_as, q.tokens,
                           runs_as == "deepep_ll" ? "<=" : ">", kLlMaxTokensPerRank, c.detail);
  return c;
}

}  // namespace eaglesim
