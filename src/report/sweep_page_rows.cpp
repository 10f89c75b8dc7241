#include "report/sweep_page_rows.hpp"

#include <map>
#include <string>
#include <tuple>

namespace eaglesim::html {

namespace {

using CellKey = std::tuple<std::string, std::string, int, int, int, int, int, double, int, std::string>;

CellKey cell_of(const SweepRow& r) {
  return {r.model,
          r.topology,
          static_cast<int>(r.weight_dtype),
          r.tp,
          r.batch,
          r.spec.eagle_topk,
          static_cast<int>(r.acceptance.mode),
          r.acceptance.value,
          r.draft_tokens,
          r.strategy};
}

}  // namespace

std::vector<bool> sweep_page_rows(const SweepResults& res, const std::vector<std::size_t>& named) {
  const std::vector<SweepRow>& rows = res.rows;
  std::vector<bool> drawn(rows.size(), false);
  std::map<CellKey, std::size_t> pick;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto [it, inserted] = pick.try_emplace(cell_of(rows[i]), i);
    if (inserted) continue;
    const SweepRow& held = rows[it->second];
    // Runs beats cannot run; among runnable rows the faster, the first on ties.
    if (rows[i].ok() && (!held.ok() || rows[i].tokens_per_s > held.tokens_per_s)) it->second = i;
  }
  for (const auto& [key, i] : pick) drawn[i] = true;
  for (std::size_t i : named)
    if (i < drawn.size()) drawn[i] = true;
  return drawn;
}

void collect_named_rows(const nlohmann::ordered_json& doc, std::vector<std::size_t>& out) {
  static const char* const kKeys[] = {"row", "plain_row", "measured_row", "best_row", "initial_row"};
  if (doc.is_array()) {
    for (const auto& v : doc) collect_named_rows(v, out);
    return;
  }
  if (!doc.is_object()) return;
  for (const auto& item : doc.items()) {
    bool names_row = false;
    for (const char* k : kKeys) names_row = names_row || item.key() == k;
    if (names_row && item.value().is_number_unsigned()) out.push_back(item.value().get<std::size_t>());
    else collect_named_rows(item.value(), out);
  }
}

}  // namespace eaglesim::html
