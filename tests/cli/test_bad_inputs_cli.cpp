// The bad-input corpus (tests/data/bad_inputs/CASES.tsv): every malformed file, flag and output
// path a user can give, each run through the real executable. For each case: the listed exit
// code (2: the user can fix it), the listed message fragment on stderr, nothing on stdout (no
// partial table or JSON) and nothing created in the case's fresh temporary directory (no output
// file, no temporary left behind).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli_helpers.hpp"

namespace fs = std::filesystem;
using namespace eaglesim::test;

namespace {

struct BadInputCase {
  std::string id, args, fragment;
  int exit_code = 0;
  int line = 0;
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    auto tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

std::vector<BadInputCase> read_cases() {
  const std::string file = std::string(EAGLESIM_TEST_DATA) + "/bad_inputs/CASES.tsv";
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file);
  std::vector<BadInputCase> cases;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    auto cols = split_tabs(line);
    if (cols.size() != 4) throw std::runtime_error(file + ":" + std::to_string(number) + ": expected 4 tab-separated columns");
    cases.push_back({cols[0], cols[1], cols[3], std::stoi(cols[2]), number});
  }
  return cases;
}

std::string substitute(std::string text, const std::string& tmp) {
  const std::pair<std::string, std::string> subs[] = {{"{DATA}", EAGLESIM_TEST_DATA}, {"{TMP}", tmp}};
  for (const auto& [key, value] : subs)
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  return text;
}

std::vector<std::string> entries_under(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST(BadInputsCli, CorpusIsLargeAndIdsAreUnique) {
  const auto cases = read_cases();
  EXPECT_GE(cases.size(), 50u);
  std::set<std::string> ids;
  for (const auto& c : cases) EXPECT_TRUE(ids.insert(c.id).second) << "duplicate id " << c.id;
  // Every subcommand that reads user input is covered.
  for (const char* prefix : {"cli_", "inspect_", "gen_", "import_", "run_", "sweep_", "bench_"})
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const BadInputCase& c) { return c.id.rfind(prefix, 0) == 0; }))
        << "no case for " << prefix;
}

TEST(BadInputsCli, EachCaseFailsCleanly) {
  for (const auto& c : read_cases()) {
    SCOPED_TRACE("CASES.tsv line " + std::to_string(c.line) + ": " + c.id);
    const std::string tmp = temp_dir();
    const std::string args = substitute(c.args, tmp);
    const std::string fragment = substitute(c.fragment, tmp);
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, c.exit_code) << "eaglesim " << args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos)
        << "eaglesim " << args << "\nexpected on stderr: " << fragment << "\ngot: " << r.err;
    EXPECT_EQ(r.out, "") << "eaglesim " << args << " printed to stdout although it failed";
    for (const char* crash : {"internal error", "terminate called", "Sanitizer", "runtime error"})
      EXPECT_EQ(r.err.find(crash), std::string::npos) << "eaglesim " << args << "\n" << r.err;
    EXPECT_EQ(entries_under(tmp), std::vector<std::string>{}) << "eaglesim " << args << " left files behind";
    fs::remove_all(tmp);
  }
}
