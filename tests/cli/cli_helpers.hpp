#pragma once
// Runs the real eaglesim executable and captures exit code, stdout and stderr.
#include <string>
#include <vector>

namespace eaglesim::test {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `args` is a shell-quoted argument string appended to the executable path.
CliResult run_cli(const std::string& args);
std::string temp_dir();  // a fresh directory per call, under the build tree's tmp
bool file_exists(const std::string& path);
std::string slurp(const std::string& path);

// A list file of "NAME  REST OF LINE" lines (traces/MANIFEST, tests/data/golden/CASES): each
// line's first word and the rest, blank lines and '#' comments skipped.
struct NamedLine {
  std::string name;
  std::string rest;
};
std::vector<NamedLine> read_named_lines(const std::string& path);

}  // namespace eaglesim::test
