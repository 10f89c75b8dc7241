#pragma once
// Measured accept lengths per speculative configuration, from a small JSON file (`run
// --acceptance FILE`; format in docs/acceptance.md):
//   {"format": "eaglesim-acceptance", "version": 1,
//    "entries": [{"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4, "accept_len": 2.8,
//                 "batch": 1, "source": "sglang decode log"}]}
// accept_len is SGLang's "accept len": tokens emitted per request per verify cycle, the accepted
// draft tokens plus the one the verify step adds, so 1 <= accept_len <= 1 + min(S, D - 1).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/spec_config.hpp"

namespace eaglesim {

struct MeasuredAcceptance {
  SpecConfig config;
  double accept_len = 1;
  std::optional<int> batch;  // none: measured without saying, used for any batch
  std::string source;        // where the number came from, free text (may be empty)
};

struct AcceptanceTable {
  std::string file;
  std::vector<MeasuredAcceptance> entries;
};

// Strict reading like every other input: unknown keys, missing fields, wrong types, an
// accept_len outside [1, 1 + min(S, D - 1)], a configuration SGLang would not run and two
// entries for the same configuration and batch are InputErrors "FILE: JSON.PATH: expected ...,
// got ...".
AcceptanceTable parse_acceptance_table(const nlohmann::json& doc, const std::string& file);
AcceptanceTable read_acceptance_table(const std::string& path);

// Which entry measures `config` at `batch`: only entries of exactly that configuration count.
// With a batch: the entry of that batch, else one without a batch, else the one of the nearest
// batch (the smaller on a tie). Without a batch: one without a batch, else the smallest batch.
struct AcceptanceMatch {
  enum class Batch { exact, unspecified, nearest };
  std::size_t entry = 0;
  Batch batch = Batch::exact;
};
std::optional<AcceptanceMatch> find_measurement(const AcceptanceTable& table, const SpecConfig& config,
                                                std::optional<int> batch);

}  // namespace eaglesim
