// The acceptance table: every malformed file in tests/data/bad_acceptance/ is rejected with its
// message (EXPECTED.tsv), a good one reads, and the lookup picks the documented entry.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "bad_file_corpus.hpp"
#include "core/errors.hpp"
#include "domain/acceptance_table.hpp"

namespace eaglesim {
namespace {

const std::string kData = EAGLESIM_TEST_DATA;
const std::string kBadDir = kData + "/bad_acceptance";

TEST(AcceptanceTable, BadCorpusIsFullyListed) { test_support::expect_corpus_fully_listed(kBadDir, 25); }

TEST(AcceptanceTable, EachBadFileGivesItsMessage) {
  test_support::expect_each_file_rejected(kBadDir, [](const std::string& path) { read_acceptance_table(path); });
}

TEST(AcceptanceTable, MissingFileIsAnInputError) {
  EXPECT_THROW(read_acceptance_table(kData + "/acceptance/no_such_file.json"), InputError);
}

TEST(AcceptanceTable, ReadsAGoodFile) {
  const AcceptanceTable t = read_acceptance_table(kData + "/acceptance/measured.json");
  ASSERT_EQ(t.entries.size(), 6u);
  EXPECT_EQ(t.entries[0].config, (SpecConfig{3, 1, 4}));
  EXPECT_DOUBLE_EQ(t.entries[0].accept_len, 2.8);
  EXPECT_EQ(t.entries[0].batch, 1);
  EXPECT_EQ(t.entries[0].source, "sglang decode log, batch 1");
  EXPECT_FALSE(t.entries[3].batch.has_value());
  EXPECT_EQ(t.entries[3].config, (SpecConfig{5, 4, 8}));
}

TEST(AcceptanceTable, LookupByConfigurationAndBatch) {
  const AcceptanceTable t = read_acceptance_table(kData + "/acceptance/measured.json");
  auto at = [&](SpecConfig c, std::optional<int> batch) { return find_measurement(t, c, batch); };
  // The chain (3, 1, 4) is measured at batches 1, 8 and 32.
  EXPECT_EQ(at({3, 1, 4}, 8)->entry, 1u);
  EXPECT_EQ(at({3, 1, 4}, 8)->batch, AcceptanceMatch::Batch::exact);
  EXPECT_EQ(at({3, 1, 4}, 4)->entry, 0u) << "4 is 3 from 1 and 4 from 8: the nearest is 1";
  EXPECT_EQ(at({3, 1, 4}, 4)->batch, AcceptanceMatch::Batch::nearest);
  EXPECT_EQ(at({3, 1, 4}, 20)->entry, 1u) << "20 is 12 from 8 and 12 from 32: the smaller wins the tie";
  EXPECT_EQ(at({3, 1, 4}, 1000)->entry, 2u);
  EXPECT_EQ(at({3, 1, 4}, std::nullopt)->entry, 0u) << "no batch asked: the smallest measured";
  // (5, 4, 8) has an entry without a batch (any batch) and one at batch 64.
  EXPECT_EQ(at({5, 4, 8}, 64)->entry, 4u);
  EXPECT_EQ(at({5, 4, 8}, 1)->entry, 3u);
  EXPECT_EQ(at({5, 4, 8}, 1)->batch, AcceptanceMatch::Batch::unspecified);
  EXPECT_EQ(at({5, 4, 8}, std::nullopt)->entry, 3u);
  // Only the exact configuration counts.
  EXPECT_FALSE(at({4, 1, 5}, 1));
  EXPECT_FALSE(at({5, 4, 16}, 1));
}

}  // namespace
}  // namespace eaglesim
