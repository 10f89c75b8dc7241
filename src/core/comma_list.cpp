#include "core/comma_list.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

std::vector<std::string> split_comma_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string raw = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t first = raw.find_first_not_of(" \t");
    if (first == std::string::npos)
      throw InputError(fmt::format("{}: empty item in \"{}\" (expected a comma-separated list)", flag, text));
    items.push_back(raw.substr(first, raw.find_last_not_of(" \t") - first + 1));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

}  // namespace eaglesim
