// Behaviour that must not change without intent: every case of tests/data/golden/CASES (the
// default run's table, run --json on every shipped trace x preset, inspect --json, fixed sweeps,
// gen outputs, flag variants) byte-equals its golden. After an intended change of output, rewrite
// them with tools/write-goldens.sh and review the diff.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_helpers.hpp"

using namespace eaglesim::test;

namespace {

struct GoldenCase {
  std::string name;  // the golden's path under tests/data/golden
  std::string args;  // eaglesim's arguments; {OUT} is the output file the golden holds
};

// How ctest and gtest name a case: its golden's path, not the struct's bytes.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

const std::string kGoldenDir = std::string(EAGLESIM_TEST_DATA) + "/golden";

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> out;
  for (const NamedLine& l : read_named_lines(kGoldenDir + "/CASES")) out.push_back({l.name, l.rest});
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// gtest names: letters, digits and underscores only.
std::string test_name(const std::string& golden) {
  std::string n;
  for (char c : golden) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, OutputIsUnchanged) {
  const GoldenCase& c = GetParam();
  const std::string dir = temp_dir();
  const std::string out_file = dir + "/out";
  const bool to_file = c.args.find("{OUT}") != std::string::npos;
  CliResult r = run_cli(replace_all(c.args, "{OUT}", out_file));
  std::string actual = "exit " + std::to_string(r.exit_code) + "\n";
  if (r.exit_code != 0) actual += r.err;
  else if (to_file) actual += slurp(out_file);
  else actual += r.out;
  std::filesystem::remove_all(dir);

  const std::string expected = slurp(kGoldenDir + "/" + c.name);
  ASSERT_FALSE(expected.empty()) << "missing golden " << c.name;
  if (actual == expected) return;
  // Point at the first differing line rather than dumping megabytes.
  std::istringstream a(actual), e(expected);
  std::string la, le;
  int line = 1;
  while (std::getline(e, le)) {
    if (!std::getline(a, la) || la != le) break;
    ++line;
  }
  FAIL() << c.name << " differs from its golden at line " << line << "\n  golden: " << le.substr(0, 300)
         << "\n  now:    " << la.substr(0, 300) << "\n(args: " << c.args << ")";
}

INSTANTIATE_TEST_SUITE_P(Cases, Golden, ::testing::ValuesIn(golden_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return test_name(info.param.name); });

TEST(GoldenList, CoversEveryShippedTraceAndPreset) {
  // A trace or preset added later gets a golden too: the list must name each of them.
  std::string all;
  for (const GoldenCase& c : golden_cases()) all += c.args + "\n";
  for (const char* sub : {"traces", "models/topologies"})
    for (const auto& f : std::filesystem::directory_iterator(std::string(EAGLESIM_REPO) + "/" + sub)) {
      if (f.path().extension() != ".json") continue;
      const std::string needle = std::string(sub) == "traces" ? "traces/" + f.path().filename().string()
                                                             : "--topology " + f.path().stem().string() + " ";
      EXPECT_NE(all.find(needle), std::string::npos) << needle << " has no golden in tests/data/golden/CASES";
    }
}

}  // namespace
