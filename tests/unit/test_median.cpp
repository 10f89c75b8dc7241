// core/median: the one median of the code base (replay, calibration, import) and bench-comm's
// middle sample.
#include <gtest/gtest.h>

#include <vector>

#include "core/median.hpp"

using namespace eaglesim;

TEST(Median, EmptyIsZero) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(middle_sample({}), 0.0);
}

TEST(Median, OddCountIsTheMiddleValueWhateverTheOrder) {
  EXPECT_EQ(median({7}), 7.0);
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({5, -1, 9, 4, 4}), 4.0);
}

TEST(Median, EvenCountIsTheMeanOfTheTwoMiddleValues) {
  EXPECT_EQ(median({4, 1}), 2.5);
  EXPECT_EQ(median({10, 2, 8, 4}), 6.0);
}

TEST(Median, LeavesTheCallersVectorAsItWas) {
  const std::vector<double> v = {3, 1, 2};
  EXPECT_EQ(median(v), 2.0);
  EXPECT_EQ(v, (std::vector<double>{3, 1, 2}));
}

TEST(MiddleSample, IsAlwaysOneOfTheSamples) {
  EXPECT_EQ(middle_sample({3, 1, 2}), 2.0);
  // Even count: the upper of the two middle values, not their mean.
  EXPECT_EQ(middle_sample({4, 1}), 4.0);
  EXPECT_EQ(middle_sample({10, 2, 8, 4}), 8.0);
}
