// The engine strategies in the simulator and in the CUDA backend's routing: every allreduce of a
// shipped trace is priced (and grouped in the report) as the path the engine takes, and where an
// engine takes one strategy's path for every allreduce it costs exactly that strategy.
#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "comm/engine_dispatch.hpp"
#include "comm/machine_facts.hpp"
#include "cost/table_interpolation.hpp"
#include "backend/allreduce_routes.hpp"
#include "backend/comm_bench_prediction.hpp"
#include "backend/evaluate.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

// "ring" of "ring/LL 8ch": the algorithm an NCCL cell ran (the whole note for other strategies).
std::string algorithm_of(const std::string& note) { return note.substr(0, note.find('/')); }

Topology preset(const std::string& name) {
  return read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/" + name + ".json");
}

Trace shipped(const std::string& name) { return read_trace(std::string(EAGLESIM_REPO) + "/traces/" + name + ".json"); }

StepResult verify(const Trace& t, const Topology& topo, const std::string& strategy, const std::string& arch = "") {
  register_builtin_backends();
  auto sim = make_backend("sim");
  RunOptions opts;
  opts.engine.model_architecture = arch;
  return sim->run_step(t, t.verify(), strategy, &topo, opts);
}

int allreduces(const Step& s) {
  int n = 0;
  for (const Op& op : s.ops) n += op.is_comm();
  return n;
}

// Both engines' verify steps of Kimi-K2 on `topo`, each checked to cost what `same_as` costs.
std::vector<StepResult> engines_cost_like(const Trace& t, const Topology& topo, const std::string& same_as) {
  const StepResult expected = verify(t, topo, same_as);
  std::vector<StepResult> out;
  for (const char* engine : {"sglang", "vllm"}) {
    out.push_back(verify(t, topo, engine, "DeepseekV3ForCausalLM"));
    EXPECT_DOUBLE_EQ(out.back().step_us, expected.step_us) << engine;
  }
  return out;
}
}  // namespace

TEST(EngineStrategiesSim, PcieBoxRunsNcclLikeTheNcclStrategy) {
  const Trace t = shipped("kimi-k2_tp8_t4");
  for (const StepResult& r : engines_cost_like(t, preset("8x-rtx-pro-6000-pcie5"), "nccl")) {
    ASSERT_EQ(r.dispatch.size(), 1u);
    EXPECT_EQ(r.dispatch[0].path, "NCCL");
    EXPECT_EQ(r.dispatch[0].count, allreduces(t.verify()));
    EXPECT_NE(r.dispatch[0].reason.find("custom allreduce off: 8 PCIe GPUs without NVLink"), std::string::npos);
    ASSERT_FALSE(r.notes.empty());
    EXPECT_NE(r.notes[0].find("on topology 8x-rtx-pro-6000-pcie5 (SM 12.0"), std::string::npos) << r.notes[0];
  }
}

TEST(EngineStrategiesSim, FusionOnEveryNormedAllreduceCostsWhatTheFusedStrategyDoes) {
  const Trace t = shipped("kimi-k2_tp8_t4");
  const Topology topo = preset("8x-h200-nvswitch");
  for (const StepResult& r : engines_cost_like(t, topo, "fused")) {
    int fused_calls = 0;
    for (const DispatchGroup& g : r.dispatch)
      if (g.fuses) fused_calls += g.count;
    EXPECT_EQ(fused_calls, allreduces(t.verify()));
  }
  // Without the architecture SGLang's default does not turn fusion on: its one-shot custom allreduce.
  EXPECT_DOUBLE_EQ(verify(t, topo, "sglang").step_us, verify(t, topo, "oneshot").step_us);
}

TEST(EngineStrategiesSim, TwoH200TensorParallelTwo) {
  const Trace t = shipped("llama-3.1-8b_tp2_t4");
  const Topology topo = preset("2x-h200-nvlink");
  // Llama is not on SGLang's fusion list: the 2-rank one-shot custom allreduce; vLLM fuses at -O2.
  EXPECT_DOUBLE_EQ(verify(t, topo, "sglang", "LlamaForCausalLM").step_us, verify(t, topo, "oneshot").step_us);
  EXPECT_DOUBLE_EQ(verify(t, topo, "vllm", "LlamaForCausalLM").step_us, verify(t, topo, "fused").step_us);
}

TEST(EngineStrategiesSim, CudaRoutesMatchTheSimulatorsGroups) {
  const Trace t = shipped("kimi-k2_tp8_t4");
  for (const char* preset_name : {"8x-h200-nvswitch", "8x-rtx-pro-6000-pcie5", "8x-b200-nvswitch"}) {
    const Topology topo = preset(preset_name);
    for (const char* engine : {"sglang", "vllm"}) {
      SCOPED_TRACE(std::string(preset_name) + " " + engine);
      ServingEngineOptions o;
      o.model_architecture = "DeepseekV3ForCausalLM";
      const AllreduceRoutes routes = route_allreduces(t.verify(), engine, machine_facts(topo), 8, &o);
      const StepResult sim = verify(t, topo, engine, "DeepseekV3ForCausalLM");
      ASSERT_EQ(routes.groups.size(), sim.dispatch.size());
      for (std::size_t g = 0; g < routes.groups.size(); ++g) {
        EXPECT_EQ(routes.groups[g].path, sim.dispatch[g].path);
        EXPECT_EQ(routes.groups[g].model, sim.dispatch[g].model);
        EXPECT_EQ(routes.groups[g].ops, sim.dispatch[g].ops);
        for (int op : routes.groups[g].ops) EXPECT_EQ(routes.op_strategy[static_cast<std::size_t>(op)], routes.groups[g].model);
      }
    }
  }
}

TEST(CommBenchPrediction, EveryPresetEveryStrategySaneAndNonDecreasingInSize) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t b = 1024; b <= (64 << 20); b *= 2) sizes.push_back(b);
  for (const char* name : {"2x-h200-nvlink", "4x-rtx-pro-6000-pcie5", "8x-a100-nvswitch", "8x-b200-nvswitch",
                           "8x-h100-nvswitch", "8x-h200-nvswitch", "8x-l40s-pcie4", "8x-rtx-pro-6000-pcie5",
                           "8x-rtx-pro-6000-pcie5-nop2p", "8x-rtx-pro-6000-pcie5-2socket"}) {
    SCOPED_TRACE(name);
    const Topology topo = preset(name);
    CommBenchPrediction p;
    p.topo = &topo;
    p.strategies = predicted_bench_strategies();
    p.sizes = sizes;
    const CommBenchResult r = predict_comm_bench(p);
    ASSERT_EQ(r.rows.size(), sizes.size());
    EXPECT_EQ(r.ranks, topo.gpu_count);
    for (std::size_t s = 0; s < p.strategies.size(); ++s) {
      double prev = 0;
      std::string prev_note;
      for (const CommBenchRow& row : r.rows) {
        const CommBenchCell& c = row.cells[s];
        SCOPED_TRACE(c.strategy + " " + std::to_string(row.bytes));
        if (!c.supported) {
          EXPECT_FALSE(c.note.empty());
          prev = 0;
          continue;
        }
        // Between 1 us and 10 ms for 1 KiB..64 MiB; the bus bandwidth below 1 TB/s.
        EXPECT_GT(c.graph_us, 1.0);
        EXPECT_LT(c.graph_us, 1e4);
        EXPECT_GE(c.context_us, c.graph_us * 0.999);  // no calibration table: the same figure
        EXPECT_LT(c.busbw_gbs, 1000.0);
        EXPECT_NEAR(c.busbw_gbs, c.algbw_gbs * 2.0 * (r.ranks - 1) / r.ranks, 1e-9);
        // NCCL picks its algorithm by its own additive estimate, the cost is the pipelined ring's
        // or tree's (comm/nccl.cpp): where NCCL switches from tree to ring a size late, the ring
        // of the bigger message may cost a little less than the tree of the smaller one.
        const bool switched_algorithm = algorithm_of(c.note) != algorithm_of(prev_note);
        EXPECT_GE(c.graph_us, switched_algorithm ? prev * 0.97 : prev) << "faster than the smaller message before it";
        prev = c.graph_us;
        prev_note = c.note;
        EXPECT_EQ(c.path.empty(), c.strategy != "sglang" && c.strategy != "vllm");
      }
    }
    for (const CommBenchRow& row : r.rows) EXPECT_FALSE(row.fastest.empty());
  }
}

TEST(EngineStrategiesSim, EagerSglangPaysForTheCopyIntoTheRegisteredBuffer) {
  const Topology topo = preset("2x-h200-nvlink");
  CommCall call;
  call.query.topo = &topo;
  call.query.ranks = 2;
  call.query.bytes = 32768;
  const CommCostModel& sglang = find_cost_model("sglang");
  const CommPlan graph = sglang.plan(call);
  EXPECT_EQ(graph.model, "oneshot");
  EXPECT_DOUBLE_EQ(graph.cost.us, find_cost_model("oneshot").cost(call.query).us);
  ServingEngineOptions eager = parse_engine_options("disable_cuda_graph=true", {"sglang"});
  call.query.engine = &eager;
  const CommPlan copy = sglang.plan(call);
  // A launch and the 32 KiB read and written once more.
  EXPECT_GT(copy.cost.us, graph.cost.us + topo.gpu.launch_gap_us);
  EXPECT_NE(copy.cost.detail.find("input copy"), std::string::npos) << copy.cost.detail;
}

TEST(EngineStrategiesSim, CalibratedTopologyPricesEachPathByItsStrategysTable) {
  Topology topo = preset("2x-h200-nvlink");
  topo.calibration.ranks = 2;
  topo.calibration.allreduce["oneshot"] = {{16384, 3.0}, {65536, 5.0}};
  CommCall call;
  call.query.topo = &topo;
  call.query.ranks = 2;
  call.query.bytes = 32768;
  const CommPlan p = find_cost_model("sglang").plan(call);
  EXPECT_TRUE(p.cost.calibrated);
  EXPECT_NEAR(p.cost.us, interpolate_table(topo.calibration.allreduce["oneshot"], 32768.0).us, 1e-9);
  EXPECT_NEAR(p.cost.us, std::sqrt(3.0 * 5.0), 1e-9);  // halfway in log-log
  EXPECT_EQ(p.cost.detail, "custom allreduce one-shot (calibrated)");
}

namespace eaglesim {
namespace {

double bench_us(const Topology& topo, const std::string& strategy, std::int64_t bytes) {
  CommBenchPrediction p;
  p.topo = &topo;
  p.strategies = {strategy};
  p.sizes = {bytes};
  const CommBenchResult r = predict_comm_bench(p);
  return r.rows.at(0).cells.at(0).graph_us;
}

TEST(CommBenchPrediction, OneshotLosesToNcclAcrossSocketsButNotBehindSwitches) {
  // Two CPUs without switches: the one-shot's peer reads across the socket link wait 8.8 us each
  // (links.inter_socket.read_round_trip_us), NCCL's ring writes once per step: NCCL wins at the
  // decode sizes (voipmonitor/rtx6kpro: one-shot 'slower than NCCL on dual-CPU systems without
  // switches'). One CPU with two switches: the one-shot still wins at 42 KiB.
  const Topology two_socket = preset("8x-rtx-pro-6000-pcie5-2socket");
  const Topology switched = preset("8x-rtx-pro-6000-pcie5");
  for (std::int64_t bytes : {std::int64_t{43008}, std::int64_t{49152}, std::int64_t{65536}}) {
    SCOPED_TRACE(bytes);
    EXPECT_GT(bench_us(two_socket, "oneshot", bytes), 1.2 * bench_us(two_socket, "nccl", bytes));
  }
  EXPECT_LT(bench_us(switched, "oneshot", 43008), bench_us(switched, "nccl", 43008));
  // Small messages still favour the one-shot on both.
  EXPECT_LT(bench_us(two_socket, "oneshot", 1024), bench_us(two_socket, "nccl", 1024));
}

TEST(CommBenchPrediction, EveryBenchCommKernelWithAModelIsPredicted) {
  // The GPU command's list (bench_comm_names) less its correctness baseline, then the selectors
  // and the engines: oneshot_push is priced as the push kernel it is.
  std::vector<std::string> gpu;
  for (const std::string& s : bench_comm_names())
    if (s != "reference") gpu.push_back(s);
  const std::vector<std::string> sim = predicted_bench_strategies();
  for (const std::string& s : gpu) EXPECT_NE(std::find(sim.begin(), sim.end(), s), sim.end()) << s;
  EXPECT_EQ(sim, (std::vector<std::string>{"nccl", "oneshot", "oneshot_push", "twoshot", "fused", "quant", "auto",
                                           "sglang", "vllm"}));
  // Push over PCIe: posted writes, no read round trips: cheaper than the pull form; over NVLink
  // the two differ by the pull's one extra hop only.
  const Topology pcie = preset("8x-rtx-pro-6000-pcie5");
  EXPECT_LT(bench_us(pcie, "oneshot_push", 43008), bench_us(pcie, "oneshot", 43008));
  const Topology nvlink = preset("2x-h200-nvlink");
  EXPECT_NEAR(bench_us(nvlink, "oneshot", 43008) - bench_us(nvlink, "oneshot_push", 43008), nvlink.nvlink.latency_us,
              1e-9);
  // Still not a strategy of run.
  EXPECT_THROW(find_cost_model("oneshot_push"), InputError);
  EXPECT_EQ(find_priced_cost_model("oneshot_push").name(), "oneshot_push");
}

}  // namespace
}  // namespace eaglesim
