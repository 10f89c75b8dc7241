#include "domain/acceptance_resolution.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace {

const char* batch_match_name(AcceptanceMatch::Batch b) {
  switch (b) {
    case AcceptanceMatch::Batch::exact: return "exact";
    case AcceptanceMatch::Batch::unspecified: return "unspecified";
    case AcceptanceMatch::Batch::nearest: return "nearest";
  }
  return "?";
}

// "batch 1", "batch 8, the nearest measured to batch 1", "no batch given"
std::string batch_phrase(const MeasuredAcceptance& m, AcceptanceMatch::Batch how, std::optional<int> wanted) {
  if (how == AcceptanceMatch::Batch::unspecified) return "no batch given";
  if (how == AcceptanceMatch::Batch::nearest)
    return wanted ? fmt::format("batch {}, the nearest measured to batch {}", *m.batch, *wanted)
                  : fmt::format("batch {}, the smallest measured", *m.batch);
  return fmt::format("batch {}", *m.batch);
}

void from_table(ResolvedAcceptance& out, const AcceptanceTable& table, const AcceptanceMatch& match,
                std::optional<int> batch) {
  const MeasuredAcceptance& m = table.entries[match.entry];
  AcceptanceSource& s = out.source;
  s.kind = AcceptanceSource::Kind::measured_table;
  s.tokens_per_cycle = out.tokens_per_cycle = m.accept_len;
  s.table_file = table.file;
  s.table_entry = match.entry;
  s.table_batch = m.batch;
  s.batch_match = batch_match_name(match.batch);
  s.measured_by = m.source;
  s.description = fmt::format("measured accept len E={:.2f} from {} entries[{}] ({}, {}{})", m.accept_len, table.file,
                              match.entry, describe(m.config), batch_phrase(m, match.batch, batch),
                              m.source.empty() ? "" : ": " + m.source);
}

void from_tree_model(ResolvedAcceptance& out, const SpecConfig& config, const RankAcceptance& q,
                     const std::string& what) {
  const TreeAcceptance t = tree_acceptance(config, q);
  AcceptanceSource& s = out.source;
  s.kind = AcceptanceSource::Kind::tree_model;
  s.tokens_per_cycle = out.tokens_per_cycle = t.tokens_per_cycle;
  s.tree_parents = t.tree.parents;
  s.description = fmt::format("tree model from {}, {}: E={:.2f}", what, describe(config), t.tokens_per_cycle);
}

}  // namespace

Acceptance ResolvedAcceptance::report_acceptance() const {
  const bool plain = is_chain(source.config) && source.table_file.empty() && source.unmatched_table.empty() &&
                     source.rank_probabilities.empty();
  if (plain && source.kind == AcceptanceSource::Kind::measured_flag)
    return {Acceptance::Mode::length, tokens_per_cycle};
  if (plain && source.kind == AcceptanceSource::Kind::tree_model && source.rate)
    return {Acceptance::Mode::rate, *source.rate};
  return {Acceptance::Mode::length, tokens_per_cycle, source};
}

ResolvedAcceptance resolve_acceptance(const SpecConfig& config, const AcceptanceInputs& in) {
  ResolvedAcceptance out;
  out.source.config = config;

  if (in.accept_len) {
    const double e = *in.accept_len;
    if (is_chain(config)) {
      // The chain's own check and message, as for a plain accept_len.
      Acceptance{Acceptance::Mode::length, e}.tokens_per_cycle(config.num_steps);
    } else if (!(e >= 1.0 && e <= max_tokens_per_cycle(config))) {
      throw SettingError(Setting::accept_len,
                         fmt::format("expected a mean accepted length in [1, 1 + min(num_steps, num_draft_tokens - 1)] "
                                     "= [1, {}] for {}, got {}",
                                     max_tokens_per_cycle(config), describe(config), e));
    }
    out.source.kind = AcceptanceSource::Kind::measured_flag;
    out.source.tokens_per_cycle = out.tokens_per_cycle = e;
    out.source.description = is_chain(config)
                                 ? Acceptance{Acceptance::Mode::length, e}.describe(config.num_steps)
                                 : fmt::format("measured accept len E={:.2f} ({}) for {}", e,
                                               setting_name(Setting::accept_len), describe(config));
    return out;
  }

  if (in.table) {
    if (auto match = find_measurement(*in.table, config, in.batch)) {
      from_table(out, *in.table, *match, in.batch);
      return out;
    }
    out.source.unmatched_table = in.table->file;
  }

  if (in.rank_probabilities) {
    out.source.rank_probabilities = in.rank_probabilities->describe();
    from_tree_model(out, config, *in.rank_probabilities,
                    fmt::format("per-rank acceptance {} ({})", out.source.rank_probabilities,
                                setting_name(Setting::accept_probs)));
  } else {
    const double a = in.accept_rate ? *in.accept_rate : in.default_rate;
    out.default_rate = !in.accept_rate;
    out.source.rate = a;
    from_tree_model(out, config, RankAcceptance::from_chain_rate(a, config.eagle_topk),
                    config.eagle_topk == 1
                        ? fmt::format("accept rate a={:.2f} per position ({}chain)", a,
                                      out.default_rate ? in.default_rate_label + ", " : "")
                        : fmt::format("accept rate a={:.2f} per position{}, q(r) = a(1-a)^(r-1)", a,
                                      out.default_rate ? " (" + in.default_rate_label + ")" : ""));
    if (is_chain(config) && out.source.unmatched_table.empty())
      out.source.description = Acceptance{Acceptance::Mode::rate, a}.describe(config.num_steps);
  }
  if (!out.source.unmatched_table.empty())
    out.source.description += fmt::format("; {} has no entry for {}", out.source.unmatched_table, describe(config));
  return out;
}

}  // namespace eaglesim
