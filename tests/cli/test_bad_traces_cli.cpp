// `eaglesim inspect` on each malformed trace of tests/data/bad/: exit 2, the expected message on
// stderr, nothing on stdout.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_helpers.hpp"

using namespace eaglesim::test;

TEST(BadTracesCli, InspectRejectsEachWithExit2AndMessage) {
  std::ifstream in(std::string(EAGLESIM_TEST_DATA) + "/bad/EXPECTED.tsv");
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const std::string file = line.substr(0, tab), fragment = line.substr(tab + 1);
    SCOPED_TRACE(file);
    CliResult r = run_cli("inspect tests/data/bad/" + file);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("tests/data/bad/" + file + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "expected fragment: " << fragment << "\ngot: " << r.err;
    EXPECT_EQ(r.out, "");
    ++checked;
  }
  EXPECT_GE(checked, 25);
}
