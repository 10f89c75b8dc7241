#include "cli/accept_probs_flag.hpp"

#include <cerrno>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "core/comma_list.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

RankAcceptance parse_accept_probs_flag(const std::string& text) {
  constexpr const char* kExpected = "probabilities separated by commas, depths by '/'";
  std::vector<std::vector<double>> depths;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t slash = std::min(text.find('/', from), text.size());
    const std::string part = text.substr(from, slash - from);
    if (part.find_first_not_of(" \t") == std::string::npos)
      throw InputError(fmt::format("--accept-probs: expected {}, got an empty depth {} in '{}'", kExpected,
                                   depths.size() + 1, text));
    std::vector<double> row;
    for (const std::string& item : split_comma_list("--accept-probs", part)) {
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(item.c_str(), &end);
      if (errno != 0 || end == item.c_str() || *end != '\0')
        throw InputError(fmt::format("--accept-probs: expected {}, got '{}'", kExpected, item));
      row.push_back(v);
    }
    depths.push_back(std::move(row));
    from = slash + 1;
  }
  return RankAcceptance(std::move(depths), "--accept-probs");
}

}  // namespace eaglesim::cli
