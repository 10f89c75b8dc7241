// Every malformed trace in tests/data/bad/ must be rejected by read_trace with one InputError
// that names the file and says what was wrong (the fragment listed in EXPECTED.tsv).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

const std::string kBadDir = std::string(EAGLESIM_TEST_DATA) + "/bad";

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

}  // namespace

TEST(BadTraces, CorpusIsLargeAndFullyListed) {
  auto rows = expected_errors();
  EXPECT_GE(rows.size(), 25u);
  std::vector<std::string> listed, on_disk;
  for (const auto& r : rows) listed.push_back(r.first);
  for (const auto& e : std::filesystem::directory_iterator(kBadDir))
    if (e.path().filename() != "EXPECTED.tsv") on_disk.push_back(e.path().filename().string());
  std::sort(listed.begin(), listed.end());
  std::sort(on_disk.begin(), on_disk.end());
  EXPECT_EQ(listed, on_disk) << "every file in tests/data/bad/ needs exactly one line in EXPECTED.tsv";
}

TEST(BadTraces, EachFileGivesItsMessage) {
  for (const auto& [file, fragment] : expected_errors()) {
    const std::string path = kBadDir + "/" + file;
    SCOPED_TRACE(file);
    try {
      read_trace(path);
      ADD_FAILURE() << file << " was accepted";
    } catch (const InputError& e) {
      std::string what = e.what();
      EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << "message does not start with the file: " << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << "expected fragment: " << fragment << "\ngot: " << what;
    }
  }
}
