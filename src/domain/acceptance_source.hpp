#pragma once
// Where a run's tokens per cycle came from when it is more than a plain --accept-rate or
// --accept-len on a chain: a measured accept length from a table, the tree acceptance model,
// or a measured length for a tree. resolve_acceptance (acceptance_resolution.hpp) fills it; the
// report prints `description` and the JSON report carries the rest.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "trace/spec_config.hpp"

namespace eaglesim {

struct AcceptanceSource {
  enum class Kind { measured_flag, measured_table, tree_model };
  Kind kind = Kind::tree_model;
  SpecConfig config;
  double tokens_per_cycle = 1;
  std::string description;  // one line, e.g. "measured accept len E=2.80 from FILE entries[0] (...)"

  // measured_table: the file, the entry (index into its entries), its batch and how the batch
  // was matched ("exact", "unspecified", "nearest"), and the entry's own source text.
  std::string table_file;
  std::size_t table_entry = 0;
  std::optional<int> table_batch;
  std::string batch_match;
  std::string measured_by;

  // tree_model: the per-position rate the per-rank probabilities were derived from (none when
  // they were given), the probabilities as given ("0.8,0.1/0.7"), the tree the model selected
  // (parent of each node, node 0 the root) and the table consulted that had no entry.
  std::optional<double> rate;
  std::string rank_probabilities;
  std::vector<int> tree_parents;
  std::string unmatched_table;
};

const char* to_string(AcceptanceSource::Kind kind);  // "measured_flag", "measured_table", "tree_model"

}  // namespace eaglesim
