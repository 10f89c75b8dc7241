// The strategy registry: names in a fixed order (the order `all` expands to and reports list).
#include <algorithm>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "comm/strategies.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"

namespace eaglesim {

namespace {

const std::vector<std::unique_ptr<Communicator>>& registry() {
  static const std::vector<std::unique_ptr<Communicator>> all = [] {
    std::vector<std::unique_ptr<Communicator>> v;
    v.push_back(make_nccl_communicator());
    v.push_back(make_oneshot_communicator());
    v.push_back(make_twoshot_communicator());
    v.push_back(make_fused_communicator());
    v.push_back(make_quant_communicator());
    v.push_back(make_ideal_communicator());
    v.push_back(make_auto_communicator());
    return v;
  }();
  return all;
}

std::string known_list() {
  std::string s;
  for (const auto& n : communicator_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::vector<std::string> communicator_names() {
  std::vector<std::string> names;
  for (const auto& c : registry()) names.push_back(c->name());
  return names;
}

const Communicator& find_communicator(const std::string& name) {
  for (const auto& c : registry())
    if (c->name() == name) return *c;
  throw InputError(fmt::format("unknown strategy \"{}\" (known: {})", name, known_list()));
}

std::vector<std::string> parse_strategy_list(const std::string& list) {
  std::vector<std::string> out;
  for (const std::string& item : split_comma_list("--strategy", list)) {
    if (item == "all") {
      for (const auto& n : communicator_names())
        if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    } else {
      find_communicator(item);  // throws with the known names
      if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    }
  }
  return out;
}

}  // namespace eaglesim
