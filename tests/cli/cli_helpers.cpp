#include "cli_helpers.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace eaglesim::test {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string temp_dir() {
  std::string tmpl = "/tmp/eaglesim-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::vector<NamedLine> read_named_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<NamedLine> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    NamedLine e;
    if (!(ss >> e.name) || e.name[0] == '#') continue;
    std::getline(ss, e.rest);
    out.push_back(e);
  }
  return out;
}

CliResult run_cli(const std::string& args) {
  std::string dir = temp_dir();
  std::string out = dir + "/stdout", err = dir + "/stderr";
  std::string cmd = std::string("cd ") + EAGLESIM_REPO + " && " + EAGLESIM_EXE + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  ::rmdir(dir.c_str());
  return r;
}

}  // namespace eaglesim::test
