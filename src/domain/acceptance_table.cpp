#include "domain/acceptance_table.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "io/json_cursor.hpp"

namespace eaglesim {

namespace {

constexpr const char* kFormat = "eaglesim-acceptance";
constexpr std::int64_t kVersion = 1;
// Beyond these an entry is a typo, not a configuration anyone serves.
constexpr std::int64_t kMaxSteps = 64;
constexpr std::int64_t kMaxTopk = 64;
constexpr std::int64_t kMaxDraftTokens = 4096;
constexpr std::int64_t kMaxBatch = 1 << 20;

MeasuredAcceptance parse_entry(const JsonCursor& e) {
  e.expect_object();
  e.only_keys({"num_steps", "eagle_topk", "num_draft_tokens", "accept_len", "batch", "source"});
  MeasuredAcceptance m;
  m.config.num_steps = static_cast<int>(e.at("num_steps").as_positive_int(kMaxSteps));
  m.config.eagle_topk = static_cast<int>(e.at("eagle_topk").as_positive_int(kMaxTopk));
  m.config.num_draft_tokens = static_cast<int>(e.at("num_draft_tokens").as_positive_int(kMaxDraftTokens));
  if (auto problem = engine_config_problem(m.config)) e.at(problem->field.c_str()).fail_raw(problem->message);

  const JsonCursor len = e.at("accept_len");
  const int most = max_tokens_per_cycle(m.config);
  const std::string expected =
      fmt::format("a mean accept length in [1, 1 + min(num_steps, num_draft_tokens - 1)] = [1, {}] (SGLang's "
                  "\"accept len\": accepted draft tokens + 1 per cycle)",
                  most);
  if (!len.json().is_number()) len.fail(expected);
  m.accept_len = len.json().get<double>();
  if (!std::isfinite(m.accept_len) || m.accept_len < 1.0 || m.accept_len > most) len.fail(expected);

  if (auto b = e.find("batch")) m.batch = static_cast<int>(b->as_positive_int(kMaxBatch));
  if (auto s = e.find("source")) m.source = s->as_string_allow_empty();
  return m;
}

std::string batch_text(const std::optional<int>& batch) {
  return batch ? fmt::format("batch {}", *batch) : "no batch";
}

}  // namespace

AcceptanceTable parse_acceptance_table(const nlohmann::json& doc, const std::string& file) {
  JsonCursor root(doc, file);
  root.expect_object();
  root.only_keys({"format", "version", "notes", "entries"});
  if (root.at("format").as_string() != kFormat) root.at("format").fail(fmt::format("\"{}\"", kFormat));
  if (root.at("version").as_positive_int() != kVersion)
    root.at("version").fail(fmt::format("{} (the acceptance-table version this build reads)", kVersion));
  if (auto n = root.find("notes")) n->as_string_allow_empty();

  AcceptanceTable table;
  table.file = file;
  const JsonCursor entries = root.at("entries");
  entries.expect_array();
  if (entries.size() == 0) entries.fail("at least one entry");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const JsonCursor e = entries.at(i);
    MeasuredAcceptance m = parse_entry(e);
    // One number per configuration and batch: two would leave which one counts to file order.
    for (std::size_t j = 0; j < table.entries.size(); ++j)
      if (table.entries[j].config == m.config && table.entries[j].batch == m.batch)
        e.fail_raw(fmt::format("duplicates entries[{}] ({}, {}): one measurement per configuration and batch", j,
                               describe(m.config), batch_text(m.batch)));
    table.entries.push_back(std::move(m));
  }
  return table;
}

AcceptanceTable read_acceptance_table(const std::string& path) {
  return parse_acceptance_table(JsonCursor::parse_file(path), path);
}

std::optional<AcceptanceMatch> find_measurement(const AcceptanceTable& table, const SpecConfig& config,
                                                std::optional<int> batch) {
  std::optional<std::size_t> exact, unspecified, nearest;
  auto closer = [&](std::size_t i, std::size_t j) {  // entry i's batch is a better stand-in than j's
    const int bi = *table.entries[i].batch, bj = *table.entries[j].batch;
    if (!batch) return bi < bj;
    const int di = std::abs(bi - *batch), dj = std::abs(bj - *batch);
    return di != dj ? di < dj : bi < bj;
  };
  for (std::size_t i = 0; i < table.entries.size(); ++i) {
    const MeasuredAcceptance& m = table.entries[i];
    if (!(m.config == config)) continue;
    if (!m.batch) unspecified = i;
    else if (batch && *m.batch == *batch) exact = i;
    else if (!nearest || closer(i, *nearest)) nearest = i;
  }
  if (exact) return AcceptanceMatch{*exact, AcceptanceMatch::Batch::exact};
  if (unspecified) return AcceptanceMatch{*unspecified, AcceptanceMatch::Batch::unspecified};
  if (nearest) return AcceptanceMatch{*nearest, AcceptanceMatch::Batch::nearest};
  return std::nullopt;
}

}  // namespace eaglesim
