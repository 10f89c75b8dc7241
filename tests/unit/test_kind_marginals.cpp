// The marginal cost of an op kind (domain/kind_marginals.hpp): which ops a kind leaves out (a
// fused kernel's absorbed ops go with it, never with another kind), and the simulator's
// marginals: without kernel transitions a kind's marginal is its ops' time, with them it is
// that plus the transitions into and out of its ops, less the transitions its neighbours then
// have between themselves — the figure the replay measures by timing the step without the kind.
#include <gtest/gtest.h>

#include "domain/kind_marginals.hpp"
#include "backend/backend.hpp"
#include "op_builders.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;
using namespace eaglesim::test_support;

namespace {

Topology h200_without_transitions() {
  Topology t = read_topology(resolve_topology_path(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json"));
  t.calibration.transition_us.clear();
  return t;
}

// One layer's worth of ops: norm, qkv, attention, o, fused add + norm, gate_up, act, down, add.
Trace one_layer() {
  Trace t;
  t.meta.tp = 1;
  Step s;
  s.name = "verify";
  s.ops = {rowwise(OpKind::rmsnorm, 4, 4096),      gemm(4, 6144, 4096),
           gqa(4, 2048, 32, 8, 128),               gemm(4, 4096, 4096),
           rowwise(OpKind::residual_add, 4, 4096), rowwise(OpKind::rmsnorm, 4, 4096),
           gemm(4, 28672, 4096),                   rowwise(OpKind::act, 4, 14336),
           gemm(4, 4096, 14336),                   rowwise(OpKind::residual_add, 4, 4096)};
  for (Op& op : s.ops) op.layer = 0;
  t.steps.push_back(s);
  return t;
}

StepResult simulate(const Trace& t, const Topology& topo, bool fuse) {
  register_builtin_backends();
  RunOptions opts;
  opts.ranks = 1;
  opts.fuse_add_norm = fuse;
  opts.kind_marginals = true;
  return make_backend("sim")->run_step(t, t.verify(), "nccl", &topo, opts);
}

double marginal(const StepResult& r, OpKind k) {
  const auto& m = r.kind_marginal_us[static_cast<std::size_t>(k)];
  EXPECT_TRUE(m.has_value()) << to_string(k);
  return m.value_or(0.0);
}

}  // namespace

TEST(KindMarginals, AbsorbedOpsGoWithTheKernelThatRunsThem) {
  using K = OpKind;
  // gemm, fused add + norm (reported rmsnorm, the norm absorbed), allreduce absorbing an add and a norm, rmsnorm.
  const std::vector<K> reported{K::gemm, K::rmsnorm, K::rmsnorm, K::allreduce, K::residual_add, K::rmsnorm, K::rmsnorm};
  const std::vector<bool> absorbed{false, false, true, false, true, true, false};
  EXPECT_EQ(ops_left_out(reported, absorbed, K::rmsnorm),
            (std::vector<bool>{false, true, true, false, false, false, true}));
  EXPECT_EQ(ops_left_out(reported, absorbed, K::residual_add), std::vector<bool>(7, false))
      << "the only residual add is the fused allreduce's";
  EXPECT_EQ(ops_left_out(reported, absorbed, K::gemm), (std::vector<bool>{true, false, false, false, false, false, false}));
  EXPECT_EQ(marginal_kinds(reported, absorbed), (std::vector<K>{K::gemm, K::rmsnorm})) << "no allreduce marginal";
  EXPECT_THROW(ops_left_out(reported, {false}, K::gemm), std::logic_error);
  EXPECT_FALSE(has_marginal(K::allreduce));
  EXPECT_FALSE(has_marginal(K::host_sync));
  EXPECT_TRUE(has_marginal(K::attention));
}

TEST(KindMarginals, WithoutTransitionsAKindsMarginalIsItsTime) {
  const Topology topo = h200_without_transitions();
  const Trace t = one_layer();
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused add + norm" : "unfused");
    const StepResult r = simulate(t, topo, fuse);
    for (OpKind k : {OpKind::gemm, OpKind::attention, OpKind::rmsnorm, OpKind::act})
      EXPECT_NEAR(marginal(r, k), r.kind_us[static_cast<std::size_t>(k)], 1e-9) << to_string(k);
    // Fused, the last residual add (no norm after it) still runs alone: a residual_add marginal
    // in both cases, and the fused pair's add is left out with the norms.
    EXPECT_NEAR(marginal(r, OpKind::residual_add), r.kind_us[static_cast<std::size_t>(OpKind::residual_add)], 1e-9);
    EXPECT_FALSE(r.kind_marginal_us[static_cast<std::size_t>(OpKind::allreduce)].has_value());
    EXPECT_FALSE(r.kind_marginal_us[static_cast<std::size_t>(OpKind::lm_head)].has_value()) << "no lm_head op";
  }
  // Not asked for: none.
  RunOptions opts;
  opts.ranks = 1;
  const StepResult plain = make_backend("sim")->run_step(t, t.verify(), "nccl", &topo, opts);
  for (const auto& m : plain.kind_marginal_us) EXPECT_FALSE(m.has_value());
}

TEST(KindMarginals, TransitionsAroundTheKindAndBetweenItsNeighboursCount) {
  Topology topo = h200_without_transitions();
  auto& tr = topo.calibration.transition_us;
  tr[transition_key(OpKind::gemm, OpKind::attention)] = -1.5;
  tr[transition_key(OpKind::attention, OpKind::gemm)] = 0.75;
  tr[transition_key(OpKind::gemm, OpKind::gemm)] = -0.25;  // qkv -> o once attention is left out
  const Trace t = one_layer();
  const StepResult base = simulate(t, h200_without_transitions(), false);
  const StepResult r = simulate(t, topo, false);
  const double attention = base.kind_us[static_cast<std::size_t>(OpKind::attention)];
  EXPECT_NEAR(marginal(r, OpKind::attention), attention - 1.5 + 0.75 - (-0.25), 1e-9);
  // Left out, the gemms take their transitions with them; the kinds between them then follow
  // each other with no table entry (no transition).
  const double gemms = base.kind_us[static_cast<std::size_t>(OpKind::gemm)];
  EXPECT_NEAR(marginal(r, OpKind::gemm), gemms - 1.5 + 0.75, 1e-9);
}
