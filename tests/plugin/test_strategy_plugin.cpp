// A strategy added from outside the library (example_strategy.cpp) is a strategy everywhere:
// the table, `--strategy` lists, the simulator and the report read it from its one spec.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"
#include "comm/strategy_spec.hpp"
#include "report/html_view_rows.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"
#include "../unit/sim_step.hpp"

namespace eaglesim::example {
bool example_strategy_registered();
}

namespace eaglesim {
namespace {

const std::string kName = "example_reference";

TEST(StrategyPlugin, ItsSpecIsARowOfTheTable) {
  ASSERT_TRUE(example::example_strategy_registered());
  const StrategyFacts* f = find_strategy_facts(kName);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->runs);
  EXPECT_TRUE(f->priced);  // from its cost model
  EXPECT_TRUE(uses_p2p_kernels(kName));
  EXPECT_TRUE(competes_as_plain_allreduce(kName));
  EXPECT_FALSE(is_calibratable(kName));
  EXPECT_EQ(strategy_table().back().name, kName);  // registered after the built-ins
  const std::vector<std::string> bench = bench_comm_names();
  EXPECT_NE(std::find(bench.begin(), bench.end(), kName), bench.end());
}

TEST(StrategyPlugin, StrategyListsFindIt) {
  EXPECT_EQ(parse_strategy_list("nccl," + kName), (std::vector<std::string>{"nccl", kName}));
  const std::vector<std::string> all = parse_strategy_list("all");
  EXPECT_EQ(all.back(), kName);
  EXPECT_EQ(find_cost_model(kName).name(), kName);
}

TEST(StrategyPlugin, TheSimulatorPricesItWithItsModel) {
  const Trace t = read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-8b_tp2_t4.json");
  const Topology topo =
      read_topology(resolve_topology_path(std::string(EAGLESIM_REPO) + "/models/topologies/8x-h100-nvswitch.json"));
  // Priced as a one-shot pull: the same step time as `oneshot`, and more than the free bound.
  const StepResult mine = test_support::simulate_verify(t, topo, kName);
  const StepResult oneshot = test_support::simulate_verify(t, topo, "oneshot");
  const StepResult ideal = test_support::simulate_verify(t, topo, "ideal");
  EXPECT_DOUBLE_EQ(mine.step_us, oneshot.step_us);
  EXPECT_GT(mine.step_us, ideal.step_us);
  // Past the registered buffer the P2P rules refuse it, as they do the built-in kernels.
  CommQuery q;
  q.topo = &topo;
  q.ranks = 2;
  q.bytes = kMaxCustomBytes + kCustomByteMultiple;
  EXPECT_FALSE(find_cost_model(kName).supports(topo, q.ranks, q.bytes).ok);
}

TEST(StrategyPlugin, TheReportDescribesItFromItsSpec) {
  const html::json j = html::strategies_json({kName});
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["description"],
            "plain two-pass kernel run as a strategy (the plug-in example); needs P2P, messages up to 8 MiB");
  EXPECT_EQ(j[0]["exact"], true);
}

TEST(StrategyPlugin, RegisteringLateOrTwiceIsRefused) {
  ASSERT_FALSE(strategy_table().empty());  // read: from here on the table stays as it is
  StrategySpec late;
  late.facts.name = "late";
  EXPECT_THROW(register_strategy(late), std::logic_error);
  StrategySpec twice;
  twice.facts.name = kName;
  EXPECT_THROW(register_strategy(twice), std::logic_error);
  EXPECT_THROW(register_strategy(StrategySpec{}), std::logic_error);  // no name
}

}  // namespace
}  // namespace eaglesim
