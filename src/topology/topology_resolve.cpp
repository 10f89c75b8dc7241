// Turns a topology setting (a preset NAME or a file) into a file. A value with a '/' or an existing file is a path; anything
// else is a preset name looked up in models/topologies/ under the data roots (io/data_paths.hpp).
#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "io/data_paths.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> preset_dirs() {
  std::vector<fs::path> dirs;
  for (const std::string& d : data_dirs("models/topologies")) dirs.emplace_back(d);
  return dirs;
}

std::vector<std::string> preset_names(const std::vector<fs::path>& dirs) {
  std::vector<std::string> names;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".json") names.push_back(it->path().stem().string());
    if (!names.empty()) break;  // the first directory that has presets is the one used
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

std::string resolve_topology_path(const std::string& name_or_path) {
  if (name_or_path.empty()) throw SettingError(Setting::topology, "expected a preset name or a file path, got \"\"");
  std::error_code ec;
  bool looks_like_path = name_or_path.find('/') != std::string::npos;
  if (looks_like_path || fs::is_regular_file(name_or_path, ec)) {
    if (!fs::is_regular_file(name_or_path, ec))
      throw InputError(fmt::format("{}: topology file not found", name_or_path));
    return name_or_path;
  }
  std::string stem = name_or_path;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
  auto dirs = preset_dirs();
  for (const auto& d : dirs) {
    fs::path candidate = d / (stem + ".json");
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  std::string list = fmt::format("{}", fmt::join(preset_names(dirs), ", "));
  if (list.empty()) list = "(none found: models/topologies/ is missing)";
  throw InputError(fmt::format("unknown topology \"{}\" (not a file, not a preset); presets: {}", name_or_path, list));
}

}  // namespace eaglesim
