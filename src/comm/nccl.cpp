// NCCL allreduce, priced the way NCCL's own tuner prices it (nccl_constants.hpp): for each
// algorithm x protocol, time = latency + bytes / algorithm bandwidth, with
//   latency   = baseLat[algo][proto] + the steps' hwLat: a ring's 2(n-1) steps, a tree's
//               2(ranks per node - 1) inside the nodes and 2 log2(nodes) between them, each step
//               between nodes at the network's hwLat
//   bandwidth = bus bandwidth of the channels used, times the protocol's efficiency and caps,
//               times n / (2(n-1)) for the ring (0.5 for the tree)
// and the minimum is chosen as NCCL would (LL128 only over NVLink), unless --nccl-algo /
// --nccl-proto / --nccl-channels force a choice.
//
// Where the machine differs from the reference systems NCCL's constants were fitted on, the
// reported cost adds what the topology knows and NCCL's table does not: each ring step waits
// for its slowest hop, so a ring that crosses the root complex or the socket link pays that
// extra latency on every step; without P2P every step is a device->host->device staging
// (links.host_staging latency). The reported cost also lets each step's hop latency (on one node)
// overlap the previous step's transfer, as NCCL's sliced steps do (pipelined_us below), where
// NCCL's own estimate adds them. Over PCIe with P2P the Simple protocol runs on the channels NCCL's topology
// search builds (comm/nccl_channels.hpp), each at most a fitted per-channel rate: too few of them
// leave the links idle, as on two AMD sockets. The choice itself still follows NCCL's estimate.
// Across nodes the ring's bus bandwidth is also bounded by the node's NICs together.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "comm/modelled_cost_model.hpp"
#include "comm/nccl_channels.hpp"
#include "comm/nccl_constants.hpp"
#include "comm/strategies.hpp"
#include "core/errors.hpp"
#include "topology/paths.hpp"

namespace eaglesim {

namespace {

using namespace nccl;

const char* kAlgoNames[2] = {"tree", "ring"};

// Share of the PCIe links' P2P rate NCCL's Simple protocol reaches in a ring: its P2P transport
// moves each chunk through a FIFO in the receiver's memory with a flag handshake per slot, and
// over PCIe that pipeline does not fill the link. Fitted to 8 x RTX PRO 6000 behind PCIe 5.0
// switches: all_reduce_perf busBW 37.6-41.1 GB/s at 8 MiB-2 GiB on links that carry ~54 GB/s of
// P2P writes (voipmonitor/rtx6kpro hardware/pcie-bandwidth.md); NVIDIA/nccl issue #1530 shows the
// same shortfall on 8 x RTX 4090. Not applied over NVLink, where the presets' link rates are
// already what NCCL reaches.
constexpr double kPcieSimpleEfficiency = 0.76;
// What one channel of the Simple protocol moves over PCIe P2P on its own, as ring busBW, per 256
// threads: 11.1 GB/s, fitted to all_reduce_perf at 32 MiB on 8 x RTX PRO 6000 on the root ports
// of two AMD Turin CPUs with NCCL's defaults, 22.2 GB/s on the 2 channels of 256 threads NCCL
// runs there (comm/nccl_channels.hpp; voipmonitor/rtx6kpro hardware/pcie-bandwidth.md, 'Festr').
// Taken to scale with the threads: a 512-thread channel 22.2. The switch servers' 4 channels of
// 512 threads then stay bound by their links, as their default-channel 40.1 GB/s at 32 MiB shows
// (same page, 'Grimulkan'), and so do the 8 channels of NCCL_MIN_NCHANNELS=8 (37.6).
constexpr double kPcieSimpleChannelGbsPer256Threads = 11.1;
const char* kProtoNames[3] = {"LL", "LL128", "Simple"};

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The time of a ring of `steps` dependent steps, each moving transfer / steps over
// every rank's link after its data from the previous step has started to arrive one hop latency
// later. NCCL's own estimate adds the two (latency + steps * hop + bytes / bandwidth), which holds
// at either end: a tiny message pays every hop, a large one the bandwidth. In between the two
// overlap, because a step does not wait for the previous one to finish: NCCL cuts each step into
// slices and a connection's FIFO holds NCCL_STEPS (8) slots in flight (src/include/device.h), so a
// rank forwards the first slice of step s as soon as it has arrived while its link is still
// sending step s-1. With step time t = transfer / steps and hop latency L, step s starts
// max(t, L) after step s-1, and the last one ends t + L after it started:
//   base + (steps - 1) * max(t, L) + t + L
// which is NCCL's sum when t << L (steps * L) or t >> L (steps * t) and up to half of it where
// t ~ L. On 8 x RTX PRO 6000 over PCIe 5.0 that is the 64 KiB - 1 MiB range: 256 KiB in LL moves
// 1.2 us per step against a 1.25 us hop, 25 us instead of the sum's 41 (measured 28 us,
// voipmonitor/rtx6kpro hardware/pcie-bandwidth.md).
double pipelined_us(double base_us, int steps, double hop_us, double transfer_us) {
  const double step_us = transfer_us / steps;
  return base_us + (steps - 1) * std::max(step_us, hop_us) + step_us + hop_us;
}

struct Estimate {
  Algo algo = kRing;
  Proto proto = kLL;
  int channels = 1;
  double nccl_us = 0;  // NCCL's own estimate (what it selects by)
  double us = 0;       // with the topology's extra per-step latency
};

// What the topology fixes for every algorithm, protocol and size: the ring's bus bandwidth, the
// extra latency of each of its steps inside a node, and how the ranks sit on nodes.
struct Ring {
  double bw_gbs = 0;          // bottleneck link of the ring, counting shared links
  double extra_per_step = 0;  // latency beyond the reference hop NCCL's hwLat describes
  int nodes = 1;              // nodes the ranks span
  int per_node = 1;           // ranks on each of them
};

Ring ring_of(const Topology& t, int n) {
  Ring ring;
  ring.nodes = t.nodes_spanned(n);
  ring.per_node = n / ring.nodes;
  const int local = ring.per_node;  // the ring's hops inside one node
  ring.bw_gbs = local > 1 ? 1e3 / flows_time_us(t, ring_flows(local, 1e6)) : std::numeric_limits<double>::infinity();
  if (ring.nodes > 1) {
    // Each channel's ring leaves every node once, through one NIC; NCCL spreads the channels over
    // the node's NICs, so together they carry at most every NIC's rate.
    ring.bw_gbs = std::min(ring.bw_gbs, t.network.nics_per_node * t.network.nic.bw_gbs);
  }
  const bool nvlink = uses_nvlink(t) && t.p2p;
  Path worst;  // slowest hop inside a node: every step there waits for it
  for (int r = 0; r < local && local > 1; ++r) {
    Path hop = path_between(t, r, (r + 1) % local);
    if (hop.latency_us >= worst.latency_us) worst = hop;
  }
  if (worst.staged) ring.extra_per_step = t.host_staging.latency_us;
  else if (!nvlink && local > 1) ring.extra_per_step = std::max(0.0, worst.latency_us - t.pcie.latency_us);
  return ring;
}

int log2_floor(int v) {
  int l = 0;
  while (v >>= 1) ++l;
  return l;
}

Estimate estimate(const CommQuery& q, const Ring& ring, const std::optional<RingPlan>& plan, Algo a, Proto p) {
  const Topology& t = *q.topo;
  const int n = q.ranks;
  const double bytes = static_cast<double>(q.bytes);
  const bool nvlink = uses_nvlink(t) && t.p2p;
  const bool multi_node = ring.nodes > 1;
  const ArchCaps caps = arch_caps(t.gpu.arch, ring.nodes, t.cpu);

  const double ring_bw = ring.bw_gbs;
  // Enough channels of the architecture's per-channel tree rate to carry the ring, 2 to 32: the
  // split of the ring the small-message rows (LL) were fitted with. Where one channel's own rate
  // binds, the Simple protocol over PCIe P2P, the channels are those NCCL's search gives
  // (comm/nccl_channels.hpp).
  const bool planned = plan && p == kSimple;
  int channels = q.nccl.channels > 0 ? q.nccl.channels
                 : planned          ? plan->channels
                                    : std::clamp(static_cast<int>(std::ceil(ring_bw / caps.tree_per_ch)), 2, 32);
  const double per_channel_bw = ring_bw / channels;
  // Small messages run on fewer channels (NCCL drops channels below a per-thread work threshold).
  double threshold = kThreadThresholdBytes[p] * (a == kRing && p == kLL ? n : 1);
  int used = std::clamp(static_cast<int>(bytes / (kThreads[p] * threshold)), 1, channels);

  double bus = used * per_channel_bw;
  // The share of that bus bandwidth the channels reach on their own: below 1 where NCCL runs
  // too few Simple channels to fill the PCIe links. NCCL's estimate does not know it (its
  // bandwidth is the rings' planned speed, the same for every protocol), so it prices only the
  // reported cost, not the choice.
  double channel_share = 1.0;
  if (p == kSimple && !nvlink && t.p2p) {
    bus *= kPcieSimpleEfficiency;
    if (plan)
      channel_share = std::min(1.0, used * kPcieSimpleChannelGbsPer256Threads * plan->simple_threads / 256.0 / bus);
  }
  double alg_bw;
  if (a == kRing) {
    if (p == kLL) bus = std::min(caps.ll_max_bw, bus * kRingLLFactor);
    if (p == kLL128) bus = std::min(bus * kRingLL128Factor, used * caps.ring_ll128_per_ch);
    alg_bw = bus * n / (2.0 * (n - 1));
  } else {
    bus = std::min(bus * kTreeFactor, used * caps.tree_per_ch);
    if (p == kLL) bus = std::min(bus * kTreeLLFactor, caps.ll_max_bw);
    if (p == kLL128)
      bus = std::min(bus * (multi_node ? kTreeLL128FactorMultiNode : kTreeLL128Factor), used * caps.tree_ll128_per_ch);
    alg_bw = bus * 0.5;
    const std::int64_t units = q.bytes >> 6;
    if (units >= 1) {
      const int log_size = static_cast<int>(std::floor(std::log2(static_cast<double>(units))));
      if (log_size < 23) alg_bw *= kTreeCorrection[p][log_size];
    }
  }

  // Steps and their hop latencies, as NCCL's tuner counts them: a ring allreduce takes 2(n-1)
  // steps, 2(nodes-1) of them between nodes, and each step inside a node costs at least the host's
  // cost of posting a network send; a tree allreduce climbs and descends the chain inside each node
  // and log2(nodes) levels between them. Between nodes a step costs the network's hwLat (the
  // tree's when one rank sits on each node, where nothing hides it).
  const Hw intra_hw = nvlink ? kNvlink : kPci;
  double intra_lat = kHwLatUs[intra_hw][a][p];
  const double inter_lat = kHwLatUs[kNet][ring.per_node == 1 ? kTree : a][p];
  int inter_steps = 0, intra_steps = 0;
  if (a == kRing) {
    if (multi_node) intra_lat = std::max(intra_lat, net_overhead_us(t.cpu) * (p == kSimple ? 3 : 1));
    inter_steps = multi_node ? 2 * (ring.nodes - 1) : 0;
    intra_steps = 2 * (n - 1) - inter_steps;
  } else {
    inter_steps = 2 * log2_floor(ring.nodes);
    intra_steps = 2 * (ring.per_node - 1);
  }
  const int steps = std::max(1, intra_steps + inter_steps);
  const double hops_us = intra_steps * intra_lat + inter_steps * inter_lat;
  const double nccl_latency = kBaseLatUs[a][p] + hops_us;

  Estimate e;
  e.algo = a;
  e.proto = p;
  e.channels = used;
  const double transfer = bytes / (alg_bw * 1e3);
  e.nccl_us = nccl_latency + transfer;
  const double extra_us = intra_steps * ring.extra_per_step;
  if (a == kTree && multi_node) {
    // Across nodes the tree streams the message through a chain that crosses the network: its last
    // slice arrives the chain's depth after the transfer ends, NCCL's own sum. Overlapping them as
    // a ring's steps overlap puts 2 x 8 H100 over InfiniBand 24 % under all_reduce_perf at 64 KiB
    // (25.6 against 33.8 us; the sum 30.8), docs/validation.md "Multi-node".
    e.us = nccl_latency + extra_us + transfer / channel_share;
  } else {
    e.us = pipelined_us(kBaseLatUs[a][p], steps, (hops_us + extra_us) / steps, transfer / channel_share);
  }
  return e;
}

class NcclCostModel final : public ModelledCostModel {
 public:
  std::string name() const override { return "nccl"; }

 protected:
  CommSupport strategy_supports(const Topology&, int, std::int64_t) const override { return {}; }

  CommCost model(const CommQuery& q) const override {
    std::vector<Algo> algos{kRing, kTree};
    std::vector<Proto> protos{kLL, kLL128, kSimple};
    if (!q.nccl.algo.empty()) {
      std::string a = lower(q.nccl.algo);
      if (a == "ring") algos = {kRing};
      else if (a == "tree") algos = {kTree};
      else throw SettingError(Setting::nccl_algo, fmt::format("expected ring or tree, got \"{}\"", q.nccl.algo));
    }
    bool forced_proto = !q.nccl.proto.empty();
    if (forced_proto) {
      std::string p = lower(q.nccl.proto);
      if (p == "ll") protos = {kLL};
      else if (p == "ll128") protos = {kLL128};
      else if (p == "simple") protos = {kSimple};
      else throw SettingError(Setting::nccl_proto, fmt::format("expected LL, LL128 or Simple, got \"{}\"", q.nccl.proto));
    }
    if (q.nccl.channels < 0 || q.nccl.channels > 64)
      throw SettingError(Setting::nccl_channels, fmt::format("expected 0 (automatic) to 64, got {}", q.nccl.channels));
    // NCCL enables LL128 by default only when the ring runs over NVLink; over PCIe or host
    // memory it is off unless forced (NCCL_PROTO=LL128).
    const bool ll128_default = uses_nvlink(*q.topo) && q.topo->p2p;

    const Ring ring = ring_of(*q.topo, q.ranks);
    std::optional<RingPlan> plan;
    // Over PCIe the channels are those NCCL's search finds inside one node (a multi-node ring
    // takes the same rings through each node).
    if (plans_pcie_rings(*q.topo) && ring.per_node > 1) plan = plan_pcie_rings(*q.topo, ring.per_node);
    Estimate best;
    best.nccl_us = std::numeric_limits<double>::infinity();
    for (Algo a : algos)
      for (Proto p : protos) {
        if (p == kLL128 && !ll128_default && !forced_proto) continue;
        Estimate e = estimate(q, ring, plan, a, p);
        if (e.nccl_us < best.nccl_us) best = e;
      }
    std::string detail = fmt::format("{}/{} {}ch", kAlgoNames[best.algo], kProtoNames[best.proto], best.channels);
    if (ring.nodes > 1) detail += fmt::format(" over {} nodes", ring.nodes);
    if (!q.topo->p2p) detail += " via host memory";
    return {best.us, detail, false, false};
  }
};

}  // namespace

const StrategySpec& nccl_spec() {
  static const StrategySpec spec{nccl_facts("nccl", kCalibratable), "ncclAllReduce, the baseline",
                                 make_cost_model<NcclCostModel>};
  return spec;
}

}  // namespace eaglesim
