// The acceptance table: every malformed file in tests/data/bad_acceptance/ is rejected with its
// message (EXPECTED.tsv), a good one reads, and the lookup picks the documented entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "domain/acceptance_table.hpp"

namespace eaglesim {
namespace {

const std::string kData = EAGLESIM_TEST_DATA;
const std::string kBadDir = kData + "/bad_acceptance";

std::vector<std::pair<std::string, std::string>> expected_errors() {
  std::ifstream in(kBadDir + "/EXPECTED.tsv");
  std::vector<std::pair<std::string, std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    if (tab == std::string::npos) throw std::runtime_error("EXPECTED.tsv line without a tab: " + line);
    rows.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return rows;
}

TEST(AcceptanceTable, BadCorpusIsFullyListed) {
  auto rows = expected_errors();
  EXPECT_GE(rows.size(), 25u);
  std::vector<std::string> listed, on_disk;
  for (const auto& r : rows) listed.push_back(r.first);
  for (const auto& e : std::filesystem::directory_iterator(kBadDir))
    if (e.path().filename() != "EXPECTED.tsv") on_disk.push_back(e.path().filename().string());
  std::sort(listed.begin(), listed.end());
  std::sort(on_disk.begin(), on_disk.end());
  EXPECT_EQ(listed, on_disk) << "every file in tests/data/bad_acceptance/ needs exactly one line in EXPECTED.tsv";
}

TEST(AcceptanceTable, EachBadFileGivesItsMessage) {
  for (const auto& [file, fragment] : expected_errors()) {
    const std::string path = kBadDir + "/" + file;
    SCOPED_TRACE(file);
    try {
      read_acceptance_table(path);
      ADD_FAILURE() << file << " was accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << "message does not start with the file: " << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << "expected fragment: " << fragment << "\ngot: " << what;
    }
  }
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
