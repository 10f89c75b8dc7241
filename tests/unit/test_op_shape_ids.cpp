// Shape interning for pricing: one id per distinct shape, stable while the table grows, and
// every field a cost depends on tells shapes apart.
#include <gtest/gtest.h>

#include "backend/op_shape_ids.hpp"

namespace eaglesim {
namespace {

Op gemm(std::int64_t m, std::int64_t n) {
  Op op;
  op.kind = OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = 7168;
  return op;
}

TEST(OpShapeIds, SameShapeSameIdInFirstSeenOrder) {
  ShapeIds ids;
  bool fresh = false;
  EXPECT_EQ(ids.intern(shape_key(gemm(4, 1024)), fresh), 0);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(ids.intern(shape_key(gemm(4, 2048)), fresh), 1);
  EXPECT_TRUE(fresh);
  Op renamed = gemm(4, 1024);
  renamed.name = "other_proj";
  renamed.layer = 7;
  EXPECT_EQ(ids.intern(shape_key(renamed), fresh), 0) << "name and layer are not part of the shape";
  EXPECT_FALSE(fresh);
  EXPECT_EQ(ids.size(), 2);
}

TEST(OpShapeIds, IdsSurviveGrowth) {
  ShapeIds ids;
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(ids.intern(gemm(i + 1, 512)), i);
  for (int i = 999; i >= 0; --i) EXPECT_EQ(ids.intern(gemm(i + 1, 512)), i);
  EXPECT_EQ(ids.size(), 1000);
}

TEST(OpShapeIds, AttentionKeysOnTotalKvAndMask) {
  Op a;
  a.kind = OpKind::attention;
  a.batch = 2;
  a.kv_lens = {100, 300};
  a.kv_len = 300;
  Op b = a;
  b.kv_lens = {200, 200};  // same total: same cost inputs
  Op c = a;
  c.mask = AttentionMask::tree;
  EXPECT_TRUE(shape_key(a) == shape_key(b));
  EXPECT_FALSE(shape_key(a) == shape_key(c));
  Op d = a;
  d.dtype = DType::fp8;
  EXPECT_FALSE(shape_key(a) == shape_key(d));
}

}  // namespace
}  // namespace eaglesim
