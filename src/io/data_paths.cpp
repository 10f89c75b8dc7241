#include "io/data_paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace fs = std::filesystem;

namespace {

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::vector<std::string> data_roots() {
  std::vector<std::string> roots{""};
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("EAGLESIM_DATA_DIR"); env && *env) {
    if (!is_dir(env))
      throw InputError(fmt::format("EAGLESIM_DATA_DIR={}: expected a directory holding models/ and traces/, "
                                   "and there is no such directory", env));
    candidates.emplace_back(env);
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path prefix = exe.parent_path().parent_path();
    candidates.push_back(prefix / "share" / "eaglesim");
    candidates.push_back(prefix);
  }
#ifdef EAGLESIM_SOURCE_DIR
  candidates.emplace_back(EAGLESIM_SOURCE_DIR);
#endif
  for (const fs::path& c : candidates) {
    if (!is_dir(c)) continue;
    const std::string s = c.lexically_normal().string();
    if (std::find(roots.begin(), roots.end(), s) == roots.end()) roots.push_back(s);
  }
  return roots;
}

std::string data_path(const std::string& root, const std::string& rel) {
  if (root.empty()) return rel;
  return (fs::path(root) / rel).string();
}

std::optional<std::string> find_data_file(const std::string& rel) {
  for (const std::string& root : data_roots()) {
    const std::string p = data_path(root, rel);
    if (is_file(p)) return p;
  }
  return std::nullopt;
}

std::vector<std::string> data_dirs(const std::string& sub) {
  std::vector<std::string> out;
  for (const std::string& root : data_roots()) {
    const std::string p = data_path(root, sub);
    if (is_dir(p.empty() ? "." : p)) out.push_back(p);
  }
  return out;
}

}  // namespace eaglesim
