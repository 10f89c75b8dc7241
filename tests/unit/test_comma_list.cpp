// split_comma_list: the splitter behind every comma-separated flag (--strategy, --traces,
// --model, --topology, --tp, --sizes, --skew-us, ...).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/comma_list.hpp"
#include "core/errors.hpp"

using namespace eaglesim;

namespace {

std::string error_of(const std::string& text) {
  try {
    split_comma_list("--flag", text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

using Items = std::vector<std::string>;

}  // namespace

TEST(CommaList, SplitsAndTrimsBlanksAroundItems) {
  EXPECT_EQ(split_comma_list("--flag", "nccl"), Items{"nccl"});
  EXPECT_EQ(split_comma_list("--flag", "nccl,oneshot"), (Items{"nccl", "oneshot"}));
  EXPECT_EQ(split_comma_list("--flag", " a.json ,\tb.json\t, c d "), (Items{"a.json", "b.json", "c d"}));
  // Duplicates and order are the caller's business.
  EXPECT_EQ(split_comma_list("--flag", "2,1,2"), (Items{"2", "1", "2"}));
}

TEST(CommaList, EmptyItemsAreErrorsNamingFlagAndList) {
  EXPECT_EQ(error_of("a,,b"), "--flag: empty item in \"a,,b\" (expected a comma-separated list)");
  EXPECT_EQ(error_of("a, ,b"), "--flag: empty item in \"a, ,b\" (expected a comma-separated list)");
  EXPECT_EQ(error_of(",a"), "--flag: empty item in \",a\" (expected a comma-separated list)");
  EXPECT_EQ(error_of("a,"), "--flag: empty item in \"a,\" (expected a comma-separated list)");
  EXPECT_EQ(error_of(""), "--flag: empty item in \"\" (expected a comma-separated list)");
  EXPECT_EQ(error_of(" \t "), "--flag: empty item in \" \t \" (expected a comma-separated list)");
}
