// comm/fused_split_plan: which rows of the fused allreduce + residual + RMSNorm kernel are
// spread over several blocks, and into how many chunks (the GPU tests run the kernels).
#include <gtest/gtest.h>

#include "comm/fused_split_plan.hpp"

using namespace eaglesim;

namespace {

constexpr int kThreads = 512;  // kernels/ar_common.cuh
constexpr int kH200Sms = 132;

// Rows of `hidden` bf16 elements: 16-byte units per row.
std::size_t bf16_units(std::size_t hidden) { return (hidden * 2 + 15) / 16; }

FusedSplitPlan plan(std::size_t tokens, std::size_t row_units, std::size_t target = kFusedChunkUnits,
                    int limit = kH200Sms) {
  return plan_fused_split(tokens, row_units, limit, target, kThreads);
}

const FusedSplitPlan kNoSplit{};

}  // namespace

TEST(FusedSplitPlan, NoSplitIsOneBlockPerRow) {
  EXPECT_EQ(kNoSplit.chunks, 1);
  EXPECT_EQ(kNoSplit.chunk_units, 0u);
}

TEST(FusedSplitPlan, RowsWithinTheTargetAreNotSplit) {
  EXPECT_EQ(plan(3, kFusedChunkUnits), kNoSplit);
  EXPECT_EQ(plan(1, 1), kNoSplit);
  EXPECT_EQ(plan(0, 4096), kNoSplit) << "no rows";
}

TEST(FusedSplitPlan, ATargetOfZeroNeverSplits) { EXPECT_EQ(plan(1, bf16_units(20000), 0), kNoSplit); }

TEST(FusedSplitPlan, AFewLongRowsSplitIntoChunksOfAboutTheTarget) {
  // 3 x 7168 bf16: 896 units a row -> 4 chunks of 224 (grid 12).
  EXPECT_EQ(plan(3, bf16_units(7168)), (FusedSplitPlan{4, 224}));
  // 1 x 20000 bf16: 2500 units -> 10 chunks of 250.
  EXPECT_EQ(plan(1, bf16_units(20000)), (FusedSplitPlan{10, 250}));
  // A partial last unit counts as a whole one: 7167 bf16 = 896 units too.
  EXPECT_EQ(plan(2, bf16_units(7167)), (FusedSplitPlan{4, 224}));
}

TEST(FusedSplitPlan, TheGridStaysWithinSixteenBlocks) {
  // 5 rows: 3 chunks a row (15 blocks), each chunk longer than the target.
  EXPECT_EQ(plan(5, bf16_units(7168)), (FusedSplitPlan{3, 299}));
  EXPECT_EQ(plan(8, bf16_units(7168)), (FusedSplitPlan{2, 448}));
  // 9 or more rows of this width: fewer than 2 chunks fit, no split.
  EXPECT_EQ(plan(9, bf16_units(7168)), kNoSplit);
  EXPECT_EQ(plan(40, bf16_units(7168)), kNoSplit);
  // A small target asks for more chunks than the cap allows: 16 for one row.
  EXPECT_EQ(plan(1, bf16_units(8192), 32), (FusedSplitPlan{16, 64}));
  EXPECT_EQ(plan(2, bf16_units(8192), 32), (FusedSplitPlan{8, 128}));
}

TEST(FusedSplitPlan, TheGridStaysWithinTheBlockLimit) {
  EXPECT_EQ(plan(3, bf16_units(7168), kFusedChunkUnits, 8), (FusedSplitPlan{2, 448}));
  EXPECT_EQ(plan(3, bf16_units(7168), kFusedChunkUnits, 5), kNoSplit);
}

TEST(FusedSplitPlan, AChunkMustFitInRegisters) {
  const std::size_t widest = kFusedMaxUnitsPerThread * kThreads;  // 2048 units
  // Two chunks of exactly the widest: split; one unit more: no split.
  EXPECT_EQ(plan(1, 2 * widest, widest), (FusedSplitPlan{2, widest}));
  EXPECT_EQ(plan(1, 2 * widest + 2, widest + 1), kNoSplit);
  // Chunks wider than one block's threads (2 and 4 units per thread) are fine.
  EXPECT_EQ(plan(1, bf16_units(20000), 1000), (FusedSplitPlan{3, 834}));
  EXPECT_EQ(plan(1, bf16_units(20000), 2048), (FusedSplitPlan{2, 1250}));
}
