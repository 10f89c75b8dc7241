#pragma once
// The one rule that turns a run's acceptance inputs into tokens per cycle for its speculative
// configuration, and says which input it used (docs/acceptance.md):
//   1. --accept-len E: a measured accept length, used as given;
//   2. else the --acceptance table's entry for the configuration (acceptance_table.hpp);
//   3. else the tree acceptance model (tree_acceptance.hpp) from --accept-probs, the per-rank
//      probabilities, or from the per-position rate --accept-rate a, or from the default rate.
#include <optional>
#include <string>

#include "domain/acceptance_table.hpp"
#include "domain/report.hpp"
#include "domain/tree_acceptance.hpp"
#include "trace/spec_config.hpp"

namespace eaglesim {

struct AcceptanceInputs {
  std::optional<double> accept_len;                  // --accept-len
  const AcceptanceTable* table = nullptr;            // --acceptance FILE
  std::optional<int> batch;                          // requests per verify step, for the table's lookup
  std::optional<RankAcceptance> rank_probabilities;  // --accept-probs
  std::optional<double> accept_rate;                 // --accept-rate
  double default_rate = 0.7;                         // when none of the above gives E
  std::string default_rate_label = "default";        // where it came from, as descriptions say it
};

struct ResolvedAcceptance {
  double tokens_per_cycle = 1;
  AcceptanceSource source;    // kind, the one-line description and the details
  bool default_rate = false;  // E came from AcceptanceInputs::default_rate

  // What the report carries: the plain rate or length when that says it all (a chain, no
  // table given, no per-rank probabilities), so such reports read exactly as without this
  // resolution; otherwise the length E together with `source`.
  Acceptance report_acceptance() const;
};

// InputError when --accept-len is outside [1, 1 + min(S, D - 1)], a rate outside [0, 1], or the
// configuration is one the tree model cannot build (select_draft_tree).
ResolvedAcceptance resolve_acceptance(const SpecConfig& config, const AcceptanceInputs& inputs);

}  // namespace eaglesim
