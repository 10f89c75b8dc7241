// The calibration's sequence overhead: the least-squares fit, that the topology file carries it
// (and rejects absurd values), and that the simulator adds it to every compute kernel and to no
// allreduce.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "cost/compute_model.hpp"
#include "backend/backend.hpp"
#include "backend/op_pricing.hpp"
#include "calibration/sequence_overhead_fit.hpp"
#include "sim_step.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

Topology h200() {
  return read_topology(resolve_topology_path(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json"));
}

}  // namespace

TEST(SequenceOverhead, LeastSquaresRecoversAConstantPerOp) {
  // measured = predicted + n * 0.4 exactly: the fit is 0.4.
  std::vector<SequenceFitCase> cases{{"a", 100, 1040, 1000}, {"b", 400, 5160, 5000}, {"c", 1000, 20400, 20000}};
  EXPECT_NEAR(fit_per_op_overhead(cases), 0.4, 1e-12);
  // Residuals of both signs: x = sum n d / sum n^2 = (10*5 + 20*(-1)) / (100 + 400) = 0.06.
  cases = {{"a", 10, 105, 100}, {"b", 20, 199, 200}};
  EXPECT_NEAR(fit_per_op_overhead(cases), 0.06, 1e-12);
  EXPECT_EQ(fit_per_op_overhead({}), 0.0);
}

TEST(SequenceOverhead, SimulatorAddsItToComputeOpsOnly) {
  const Trace t = read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-8b_tp2_t4.json");
  Topology plain = h200();
  Topology seq = plain;
  seq.calibration.sequence_overhead_us = 0.75;
  int compute_ops = 0, add_norm_pairs = 0;
  const std::vector<Op>& ops = t.verify().ops;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::allreduce) continue;
    ++compute_ops;
    add_norm_pairs += fusable_add_norm(ops, i);
    EXPECT_NEAR(compute_cost(op, seq).us, compute_cost(op, plain).us + 0.75, 1e-9) << op.name;
    EXPECT_NEAR(chain_cost(op, seq).us, compute_cost(op, plain).us, 1e-9) << op.name;
  }
  ASSERT_GT(add_norm_pairs, 0);
  // Once per kernel: a residual add and the norm after it run as one.
  const double a = test_support::simulate_verify(t, plain, "nccl").step_us;
  const double b = test_support::simulate_verify(t, seq, "nccl").step_us;
  EXPECT_NEAR(b - a, 0.75 * (compute_ops - add_norm_pairs), 1e-6);
}

TEST(SequenceOverhead, TopologyFileCarriesItAndRejectsAbsurdValues) {
  Topology topo = h200();
  topo.calibration.sequence_overhead_us = -0.25;
  const std::string text = topology_to_string(topo);
  ASSERT_NE(text.find("\"sequence_overhead_us\""), std::string::npos);
  const Topology back = parse_topology(nlohmann::json::parse(text), "seq.json");
  ASSERT_TRUE(back.calibration.sequence_overhead_us);
  EXPECT_DOUBLE_EQ(*back.calibration.sequence_overhead_us, -0.25);

  nlohmann::json j = nlohmann::json::parse(text);
  j["calibration"]["sequence_overhead_us"] = 5000;
  try {
    parse_topology(j, "seq.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("seq.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sequence_overhead_us"), std::string::npos) << msg;
  }
}
