#include "sweep/sweep_inputs.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "io/data_paths.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  if (ends_with(base, ".json")) base.resize(base.size() - 5);
  return base;
}

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i)
      if (is_file(g.gl_pathv[i])) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

long parse_long(const std::string& flag, const std::string& item) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(item.c_str(), &end, 10);
  if (item.empty() || errno != 0 || *end != '\0')
    throw InputError(fmt::format("{}: expected an integer or a range like 1..8, got \"{}\"", flag, item));
  return v;
}

}  // namespace

std::vector<int> parse_int_axis(const std::string& flag, const std::string& text, int min, int max) {
  std::set<int> values;
  for (const std::string& item : split_comma_list(flag, text)) {
    const std::size_t dots = item.find("..");
    long lo, hi;
    if (dots == std::string::npos) {
      lo = hi = parse_long(flag, item);
    } else {
      lo = parse_long(flag, trim(item.substr(0, dots)));
      hi = parse_long(flag, trim(item.substr(dots + 2)));
      if (hi < lo) throw InputError(fmt::format("{}: range \"{}\" runs backwards", flag, item));
    }
    if (lo < min || hi > max)
      throw InputError(fmt::format("{}: expected values in [{}, {}], got \"{}\"", flag, min, max, item));
    for (long v = lo; v <= hi; ++v) values.insert(static_cast<int>(v));
  }
  return {values.begin(), values.end()};
}

std::vector<double> parse_number_list(const std::string& flag, const std::string& text, double min, double max) {
  std::set<double> values;
  for (const std::string& item : split_comma_list(flag, text)) {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (errno != 0 || *end != '\0' || !std::isfinite(v))
      throw InputError(fmt::format("{}: expected a number, got \"{}\"", flag, item));
    if (v < min || v > max) throw InputError(fmt::format("{}: expected values in [{}, {}], got {}", flag, min, max, item));
    values.insert(v);
  }
  return {values.begin(), values.end()};
}

std::vector<DType> parse_dtype_list(const std::string& flag, const std::string& text) {
  std::vector<DType> out;
  for (const std::string& item : split_comma_list(flag, text)) {
    DType t;
    if (!parse_dtype(item, t))
      throw InputError(fmt::format("{}: expected one of {}, got \"{}\"", flag, fmt::join(dtype_names(), ", "), item));
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

std::vector<std::string> preset_dirs(const std::string& sub) { return data_dirs("models/" + sub); }

std::vector<std::string> preset_names(const std::string& sub) {
  std::set<std::string> names;
  for (const std::string& dir : preset_dirs(sub))
    for (const std::string& f : glob_files(dir + "/*.json")) names.insert(stem(f));
  return {names.begin(), names.end()};
}

std::string resolve_model_path(const std::string& flag, const std::string& name) {
  if (is_file(name)) return name;
  if (name.find('/') == std::string::npos) {
    const std::string file = ends_with(name, ".json") ? name : name + ".json";
    for (const std::string& dir : preset_dirs("llm"))
      if (is_file(dir + "/" + file)) return dir + "/" + file;
  }
  throw InputError(fmt::format("{}: no model config \"{}\" (not a file, not in models/llm); known models: {}", flag,
                               name, fmt::join(preset_names("llm"), ", ")));
}

std::vector<std::string> expand_topology_item(const std::string& flag, const std::string& item) {
  if (item == "all") {
    std::vector<std::string> out;
    for (const std::string& name : preset_names("topologies")) out.push_back(resolve_topology_path(name));
    if (out.empty()) throw InputError(fmt::format("{}: \"all\": no presets found in models/topologies", flag));
    return out;
  }
  if (!has_glob_chars(item)) return {resolve_topology_path(item)};
  std::vector<std::string> out = glob_files(item);
  if (out.empty() && item.find('/') == std::string::npos) {
    // A glob over preset names, e.g. "8x-*": the first preset directory that has matches wins,
    // as a preset name resolves to one file.
    const std::string file = ends_with(item, ".json") ? item : item + ".json";
    for (const std::string& dir : preset_dirs("topologies")) {
      out = glob_files(dir + "/" + file);
      if (!out.empty()) break;
    }
  }
  if (out.empty())
    throw InputError(fmt::format("{}: \"{}\" matches no topology file (presets: {})", flag, item,
                                 fmt::join(preset_names("topologies"), ", ")));
  return out;
}

std::string find_draft_beside(const std::string& model_path) {
  const std::size_t slash = model_path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : model_path.substr(0, slash);
  std::string name = stem(model_path);
  if (ends_with(name, "-eagle3")) return "";  // already a head
  for (;;) {
    const std::string candidate = dir + "/" + name + "-eagle3.json";
    if (is_file(candidate)) return candidate;
    const std::size_t dash = name.find_last_of('-');
    if (dash == std::string::npos || dash == 0) return "";
    name.resize(dash);
  }
}

}  // namespace eaglesim
