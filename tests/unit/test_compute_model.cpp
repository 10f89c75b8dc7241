#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

#include "cost/table_interpolation.hpp"
#include "cost/compute_model.hpp"
#include "topology/topology.hpp"
#include "trace/op_traffic.hpp"
#include "op_builders.hpp"

using namespace eaglesim;
using namespace eaglesim::test_support;

namespace {

// The preset's uncalibrated model: its calibration (the H200 presets carry fitted models, the
// launch gap and kernel transitions measured on an H200) set aside, so the roofline and the
// tables are what these tests pin.
Topology preset(const std::string& name) {
  Topology t = read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/" + name + ".json");
  t.calibration = Calibration{};
  return t;
}

// H200: memory ceiling 0.78 x 4800 GB/s = 3744 B/ns; flops ceiling 0.75 x 989 TFLOP/s.
constexpr double kH200Bw = 4800e3 * 0.78;      // B/us
constexpr double kH200Flops = 989e6 * 0.75;    // flop/us

}  // namespace

TEST(ComputeModel, LlamaTp2GemmsAtM4OnH200) {
  Topology t = preset("2x-h200-nvlink");
  // qkv 4096 -> 3072: weights 3072 x 4096 x 2 B, activations 2 x (4 x 4096 + 4 x 3072) B.
  OpCost qkv = compute_cost(gemm(4, 3072, 4096), t);
  EXPECT_NEAR(qkv.us, 2.3 + (25165824.0 + 57344.0) / kH200Bw, 1e-9);
  EXPECT_GE(qkv.us, 8.0);
  EXPECT_LE(qkv.us, 12.0);
  // gate_up 4096 -> 14336.
  OpCost gate_up = compute_cost(gemm(4, 14336, 4096), t);
  EXPECT_NEAR(gate_up.us, 2.3 + (117440512.0 + 147456.0) / kH200Bw, 1e-9);
  EXPECT_GE(gate_up.us, 25.0);
  EXPECT_LE(gate_up.us, 35.0);
  // down 7168 -> 4096.
  OpCost down = compute_cost(gemm(4, 4096, 7168), t);
  EXPECT_NEAR(down.us, 2.3 + (58720256.0 + 90112.0) / kH200Bw, 1e-9);
  EXPECT_GE(down.us, 15.0);
  EXPECT_LE(down.us, 20.0);
  EXPECT_FALSE(down.calibrated);
  EXPECT_FALSE(down.extrapolated);
}

TEST(ComputeModel, LargeGemmIsComputeBound) {
  Topology t = preset("8x-h100-nvswitch");
  // 2 x 8192^3 flops at 0.75 x 989 TFLOP/s plus the 3 us ramp; memory would take ~130 us.
  OpCost c = compute_cost(gemm(8192, 8192, 8192), t);
  EXPECT_NEAR(c.us, 3.0 + 2.0 * 8192.0 * 8192 * 8192 / kH200Flops, 1e-6);
  // fp8 weights: fp8 tensor rate (1979) and half the weight bytes.
  OpCost f = compute_cost(gemm(8192, 8192, 8192, DType::fp8), t);
  EXPECT_NEAR(f.us, 3.0 + 2.0 * 8192.0 * 8192 * 8192 / (1979e6 * 0.75), 1e-6);
  // A100 has no fp8 tensor cores: fp8 weights still run at the bf16 rate.
  Topology a = preset("8x-a100-nvswitch");
  EXPECT_NEAR(compute_cost(gemm(8192, 8192, 8192, DType::fp8), a).us,
              compute_cost(gemm(8192, 8192, 8192, DType::bf16), a).us, 1e-9);
}

TEST(ComputeModel, MIsPaddedToTheMmaTile) {
  Topology t = preset("2x-h200-nvlink");
  // Compute-bound (m > ~200 flop/B on H200): m = 1025 and m = 1040 both run 65 tiles of 16 rows,
  // m = 1041 runs 66. Compute 2 x 1040 x 8192^2 flops = 188 us vs memory ~37 us.
  double c1025 = compute_cost(gemm(1025, 8192, 8192), t).us;
  EXPECT_NEAR(c1025, 3.0 + 2.0 * 1040 * 8192 * 8192 / kH200Flops, 1e-9);
  EXPECT_DOUBLE_EQ(c1025, compute_cost(gemm(1040, 8192, 8192), t).us);
  EXPECT_LT(c1025, compute_cost(gemm(1041, 8192, 8192), t).us);
}

TEST(ComputeModel, LowPrecisionWeightsReadFewerBytes) {
  Topology t = preset("2x-h200-nvlink");
  double bf16 = compute_cost(gemm(4, 14336, 4096), t).us;
  double fp8 = compute_cost(gemm(4, 14336, 4096, DType::fp8), t).us;
  double int4 = compute_cost(gemm(4, 14336, 4096, DType::int4), t).us;
  EXPECT_NEAR(fp8, 2.3 + (58720256.0 + 147456.0) / kH200Bw, 1e-9);
  // int4: 29.4 MB of weights (7.9 us + ramp) vs tensor work of one 16-row tile (2.5 us + 3 us
  // ramp) plus dequant: 4 ops per weight at 1/16 of the bf16 tensor rate (3.8 us) = 9.3 us.
  double int4_memory = 2.3 + (29360128.0 + 147456.0) / kH200Bw;
  double int4_compute = 3.0 + 2.0 * 16 * 14336 * 4096 / kH200Flops + 4.0 * 14336 * 4096 / (989e6 / 16);
  EXPECT_NEAR(int4, std::max(int4_memory, int4_compute), 1e-9);
  EXPECT_LT(int4, fp8);
  EXPECT_LT(fp8, bf16);
}

TEST(ComputeModel, NothingIsCheaperThanTheLaunchGap) {
  Topology t = preset("2x-h200-nvlink");
  // RMSNorm of 4 x 4096: 64 KiB of traffic = 0.02 us, but a kernel costs at least the gap.
  EXPECT_DOUBLE_EQ(compute_cost(rowwise(OpKind::rmsnorm, 4, 4096), t).us, t.gpu.launch_gap_us);
  EXPECT_DOUBLE_EQ(compute_cost(rowwise(OpKind::residual_add, 4, 4096), t).us, t.gpu.launch_gap_us);
  EXPECT_GE(compute_cost(gemm(1, 16, 16), t).us, t.gpu.launch_gap_us);
  // Large: read + write 8192 x 8192 bf16 = 268 MB at 3744 B/ns.
  EXPECT_NEAR(compute_cost(rowwise(OpKind::rmsnorm, 8192, 8192), t).us, 2.0 * 2 * 8192 * 8192 / kH200Bw, 1e-9);
  // SiLU x mul reads gate and up, writes one: 3 x 2 B per element.
  EXPECT_NEAR(compute_cost(rowwise(OpKind::act, 8192, 14336), t).us, 3.0 * 2 * 8192 * 14336 / kH200Bw, 1e-9);
  // The calibrated launch gap replaces the GPU's.
  t.calibration.launch_gap_us = 3.25;
  EXPECT_DOUBLE_EQ(compute_cost(rowwise(OpKind::rmsnorm, 4, 4096), t).us, 3.25);
}

TEST(ComputeModel, AttentionIsKvBytesOverBandwidthPlusMerge) {
  Topology t = preset("2x-h200-nvlink");
  // Llama-3.1-8B TP2 verify: 4 query tokens, 2048 cached, 16 / 4 heads of 128.
  // KV 2048 x 4 x 128 x 2 (K,V) x 2 B = 4194304 B; Q + O 2 x 4 x 16 x 128 x 2 B = 32768 B.
  // Flops 4 x 4 x 2048 x 16 x 128 on 4 x 4 = 16 packed rows (no padding) -> 3.09 us < memory.
  OpCost a = compute_cost(gqa(4, 2048, 16, 4, 128), t);
  EXPECT_NEAR(a.us, 2.3 + (4194304.0 + 32768.0) / kH200Bw + t.gpu.launch_gap_us, 1e-9);
  // Longer context costs more; MLA with a shared latent cache reads less than GQA of equal size.
  EXPECT_GT(compute_cost(gqa(4, 32768, 16, 4, 128), t).us, a.us);
  Op mla = gqa(4, 32768, 8, 0, 0);
  mla.variant = AttentionVariant::mla;
  mla.kv_lora_rank = 512;
  mla.rope_dim = 64;
  EXPECT_GT(compute_cost(mla, t).us, t.gpu.launch_gap_us);
}

TEST(ComputeModel, OtherUsesItsMeasurementAndAllreduceIsNotCompute) {
  Topology t = preset("2x-h200-nvlink");
  Op o;
  o.kind = OpKind::other;
  o.name = "rope";
  o.us = 3.5;
  OpCost c = compute_cost(o, t);
  EXPECT_DOUBLE_EQ(c.us, 3.5);
  EXPECT_TRUE(c.measured);
  o.us.reset();
  EXPECT_THROW(compute_cost(o, t), std::invalid_argument);
  Op ar;
  ar.kind = OpKind::allreduce;
  ar.bytes = 32768;
  EXPECT_THROW(compute_cost(ar, t), std::invalid_argument);
}

TEST(ComputeModel, GroupedGemmSpreadsRowsOverExperts) {
  Topology t = preset("8x-h200-nvswitch");
  Op g;
  g.kind = OpKind::grouped_gemm;
  g.name = "experts";
  g.tokens = 24;   // 3 tokens x top-8
  g.experts = 24;  // each expert sees one row
  g.n = 4096;
  g.k = 7168;
  g.dtype = DType::bf16;
  // Memory: 24 experts x 4096 x 7168 x 2 B + 2 x 24 x (7168 + 4096) B.
  double memory = 2.3 + (24.0 * 4096 * 7168 * 2 + 2.0 * 24 * (7168 + 4096)) / kH200Bw;
  double compute = 3.0 + 2.0 * 24 * 16 * 4096 * 7168 / kH200Flops;
  EXPECT_NEAR(compute_cost(g, t).us, std::max(memory, compute), 1e-9);
  // Fewer experts touched: fewer weight bytes.
  Op fewer = g;
  fewer.experts = 8;
  EXPECT_LT(compute_cost(fewer, t).us, compute_cost(g, t).us);
}

TEST(Calibration, LogLogInterpolation) {
  std::vector<SizeCalPoint> table{{1, 8.0}, {16, 10.0}, {256, 40.0}};
  EXPECT_DOUBLE_EQ(interpolate_table(table, 16).us, 10.0);
  // size 4 is halfway between 1 and 16 in log: exp((ln 8 + ln 10) / 2) = sqrt(80).
  EXPECT_NEAR(interpolate_table(table, 4).us, std::sqrt(80.0), 1e-9);
  EXPECT_NEAR(interpolate_table(table, 64).us, std::sqrt(400.0), 1e-9);
  TableLookup out = interpolate_table(table, 512);
  EXPECT_TRUE(out.has_table);
  EXPECT_FALSE(out.inside);
  EXPECT_FALSE(interpolate_table({}, 4).has_table);
  EXPECT_FALSE(interpolate_table(table, 0.5).inside);
}

TEST(Calibration, GemmTablesWinInsideTheirRange) {
  Topology t = preset("2x-h200-nvlink");
  t.calibration.gemm = {{1, 3072, 4096, DType::bf16, 8.0}, {16, 3072, 4096, DType::bf16, 10.0},
                        {4, 3072, 4096, DType::fp8, 5.0}};
  OpCost at4 = compute_cost(gemm(4, 3072, 4096), t);
  EXPECT_TRUE(at4.calibrated);
  EXPECT_NEAR(at4.us, std::sqrt(80.0), 1e-9);
  OpCost at64 = compute_cost(gemm(64, 3072, 4096), t);
  EXPECT_FALSE(at64.calibrated);
  EXPECT_TRUE(at64.extrapolated);
  EXPECT_DOUBLE_EQ(at64.us, compute_cost(gemm(64, 3072, 4096), preset("2x-h200-nvlink")).us);
  // Other shapes have no table: plain model, not flagged.
  OpCost other = compute_cost(gemm(4, 4096, 4096), t);
  EXPECT_FALSE(other.calibrated);
  EXPECT_FALSE(other.extrapolated);
  // The fp8 table has one point: exact match only.
  EXPECT_DOUBLE_EQ(compute_cost(gemm(4, 3072, 4096, DType::fp8), t).us, 5.0);
  EXPECT_TRUE(compute_cost(gemm(8, 3072, 4096, DType::fp8), t).extrapolated);
}

TEST(Calibration, AttentionAndElementwiseTables) {
  Topology t = preset("2x-h200-nvlink");
  t.calibration.attention["gqa:16:4:128"] = {{1024, 20.0}, {4096, 40.0}};
  t.calibration.elementwise["rmsnorm"] = {{4096, 4.0}, {65536, 6.0}};
  OpCost a = compute_cost(gqa(4, 2048, 16, 4, 128), t);
  EXPECT_TRUE(a.calibrated);
  EXPECT_NEAR(a.us, std::sqrt(20.0 * 40.0), 1e-9);  // 2048 is halfway between 1024 and 4096 in log
  EXPECT_TRUE(compute_cost(gqa(4, 8192, 16, 4, 128), t).extrapolated);
  EXPECT_FALSE(compute_cost(gqa(4, 2048, 32, 8, 128), t).calibrated);  // another head layout
  OpCost n = compute_cost(rowwise(OpKind::rmsnorm, 4, 4096), t);  // 16384 elements
  EXPECT_TRUE(n.calibrated);
  EXPECT_NEAR(n.us, std::sqrt(4.0 * 6.0), 1e-9);
  EXPECT_FALSE(compute_cost(rowwise(OpKind::residual_add, 4, 4096), t).calibrated);
}

// The fused residual add + RMSNorm kernel: x and residual read, the weight row read, residual and
// out written; one launch gap at verify sizes, where the two ops it replaces cost two.
TEST(ComputeModel, FusedAddRmsnormIsOneKernelOfItsBytes) {
  Topology t = preset("2x-h200-nvlink");
  const Op norm = rowwise(OpKind::rmsnorm, 4, 4096);
  const OpCost small = add_rmsnorm_cost(norm, t);
  EXPECT_DOUBLE_EQ(small.us, t.gpu.launch_gap_us);  // 139 KB streams in 0.04 us: the gap wins
  EXPECT_FALSE(small.calibrated);
  EXPECT_FALSE(small.extrapolated);
  EXPECT_DOUBLE_EQ(compute_cost(rowwise(OpKind::residual_add, 4, 4096), t).us + compute_cost(norm, t).us,
                   2.0 * t.gpu.launch_gap_us);
  // 8192 x 8192 rows: 4 row arrays and the weight row at the bandwidth ceiling.
  const Op big = rowwise(OpKind::rmsnorm, 8192, 8192);
  const double bytes = 2.0 * (4.0 * 8192.0 * 8192.0 + 8192.0);
  EXPECT_NEAR(add_rmsnorm_cost(big, t).us, bytes / kH200Bw, 1e-9);
  EXPECT_NEAR(add_rmsnorm_traffic(big).bytes, bytes, 1e-6);
  // Less than the two ops apart: the residual is written once and read back by nobody.
  EXPECT_LT(add_rmsnorm_cost(big, t).us,
            compute_cost(rowwise(OpKind::residual_add, 8192, 8192), t).us + compute_cost(big, t).us);
  // Given anything but the pair's norm, it refuses.
  EXPECT_THROW(add_rmsnorm_cost(rowwise(OpKind::residual_add, 4, 4096), t), std::invalid_argument);
}

TEST(Calibration, FusedAddRmsnormTableWinsInsideItsRange) {
  Topology t = preset("2x-h200-nvlink");
  t.calibration.elementwise["add_rmsnorm"] = {{4096, 3.0}, {65536, 5.0}};
  t.calibration.elementwise["rmsnorm"] = {{4096, 9.0}, {65536, 9.0}};  // the plain norm's table is not the fused kernel's
  const OpCost in = add_rmsnorm_cost(rowwise(OpKind::rmsnorm, 4, 4096), t);  // 16384 elements, halfway in log
  EXPECT_TRUE(in.calibrated);
  EXPECT_NEAR(in.us, std::sqrt(3.0 * 5.0), 1e-9);
  const OpCost out = add_rmsnorm_cost(rowwise(OpKind::rmsnorm, 64, 4096), t);
  EXPECT_TRUE(out.extrapolated);
  EXPECT_DOUBLE_EQ(out.us, add_rmsnorm_cost(rowwise(OpKind::rmsnorm, 64, 4096), preset("2x-h200-nvlink")).us);
  // In a step the sequence overhead is added once: the pair is one kernel.
  t.calibration.sequence_overhead_us = 0.5;
  EXPECT_NEAR(add_rmsnorm_cost(rowwise(OpKind::rmsnorm, 4, 4096), t).us, std::sqrt(3.0 * 5.0) + 0.5, 1e-9);
  EXPECT_NEAR(add_rmsnorm_chain_cost(rowwise(OpKind::rmsnorm, 4, 4096), t).us, std::sqrt(3.0 * 5.0), 1e-9);
}
