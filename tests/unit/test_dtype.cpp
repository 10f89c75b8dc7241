// Element sizes: the fractional one the cost models use (int4 packs two per byte) and the whole
// one device buffers are sized with, which refuses int4 instead of rounding it.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/dtype.hpp"

using namespace eaglesim;

TEST(DType, BytesPerElementCountsPackedInt4AsHalf) {
  EXPECT_EQ(bytes_per_element(DType::bf16), 2.0);
  EXPECT_EQ(bytes_per_element(DType::fp16), 2.0);
  EXPECT_EQ(bytes_per_element(DType::fp32), 4.0);
  EXPECT_EQ(bytes_per_element(DType::fp8), 1.0);
  EXPECT_EQ(bytes_per_element(DType::int4), 0.5);
}

TEST(DType, ElementBytesIsWholeAndRefusesInt4) {
  EXPECT_EQ(element_bytes(DType::bf16), 2u);
  EXPECT_EQ(element_bytes(DType::fp16), 2u);
  EXPECT_EQ(element_bytes(DType::fp32), 4u);
  EXPECT_EQ(element_bytes(DType::fp8), 1u);
  EXPECT_THROW(element_bytes(DType::int4), std::logic_error);
}
