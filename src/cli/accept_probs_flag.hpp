#pragma once
// --accept-probs "0.8,0.1/0.7,0.1": the tree acceptance model's per-rank probabilities, one comma
// list per depth, as `run` and `sweep` read it.
#include <string>

#include "domain/tree_acceptance.hpp"

namespace eaglesim::cli {

// InputError naming --accept-probs on an empty depth, a value that is not a number, or rows the
// model refuses (RankAcceptance).
RankAcceptance parse_accept_probs_flag(const std::string& text);

}  // namespace eaglesim::cli
