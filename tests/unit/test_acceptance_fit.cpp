#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "domain/acceptance_fit.hpp"
#include "domain/tree_acceptance.hpp"

using namespace eaglesim;

// One entry: the fitted rate reproduces its accept length through the model.
TEST(AcceptanceFit, OneEntryIsReproduced) {
  AcceptanceTable t;
  t.file = "acc.json";
  t.entries.push_back({SpecConfig{3, 1, 4}, 2.8, 1, "log"});
  const auto f = fit_acceptance_rate(t);
  ASSERT_TRUE(f);
  EXPECT_NEAR(tree_tokens_per_cycle(f->rate, SpecConfig{3, 1, 4}), 2.8, 1e-6);
  EXPECT_EQ(f->entries, 1);
  EXPECT_EQ(f->describe(), fmt::format("a={:.2f} fitted to acc.json's 1 measured entry", f->rate));
}

// Several: the median of the rates each entry implies, with their range; an entry at its
// configuration's maximum (a = 1) gives no rate.
TEST(AcceptanceFit, MedianOfTheEntriesRates) {
  AcceptanceTable t;
  t.file = "acc.json";
  t.entries.push_back({SpecConfig{3, 1, 4}, 2.0, std::nullopt, ""});
  t.entries.push_back({SpecConfig{3, 1, 4}, 2.8, 8, ""});
  t.entries.push_back({SpecConfig{5, 4, 8}, 3.4, std::nullopt, ""});
  t.entries.push_back({SpecConfig{2, 1, 3}, 3.0, 4, ""});  // = 1 + S: every draft accepted
  const auto f = fit_acceptance_rate(t);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->entries, 3);
  const double a1 = *tree_accept_rate_for_tokens(2.0, SpecConfig{3, 1, 4});
  const double a2 = *tree_accept_rate_for_tokens(2.8, SpecConfig{3, 1, 4});
  const double a3 = *tree_accept_rate_for_tokens(3.4, SpecConfig{5, 4, 8});
  EXPECT_DOUBLE_EQ(f->min_rate, std::min({a1, a2, a3}));
  EXPECT_DOUBLE_EQ(f->max_rate, std::max({a1, a2, a3}));
  EXPECT_TRUE(f->rate == a1 || f->rate == a2 || f->rate == a3);
  EXPECT_GT(f->rate, f->min_rate);
  EXPECT_LT(f->rate, f->max_rate);
}
