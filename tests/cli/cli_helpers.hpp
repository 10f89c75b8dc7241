#pragma once
// Runs the real eaglesim executable and captures exit code, stdout and stderr.
#include <string>

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

}  // namespace eaglesim::test
