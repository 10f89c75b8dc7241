#pragma once
// Printers for sweep results: the summary table (stdout: best per model and topology, best per
// batch and where speculation stops paying, what cannot run), CSV (one line per combination)
// and JSON (schema in docs/sweep.md). Numbers are rounded to a fixed precision (ns for times,
// 1e-3 tok/s, 1e-6 for ratios) so the files are stable across compilers and thread counts; the
// HTML report embeds exactly the JSON document. Wall time is left out of CSV and JSON for the
// same reason.
#include <string>

#include <nlohmann/json.hpp>

#include "sweep/sweep_result.hpp"

namespace eaglesim {

std::string sweep_to_table(const SweepResults& results);
std::string sweep_to_csv(const SweepResults& results);  // needs kept rows
// The CSV a line at a time, for a CSV streamed as the rows are built (SweepRequest::row_sink).
std::string sweep_csv_header();
std::string sweep_csv_line(const SweepResults& results, const SweepRow& row);
nlohmann::ordered_json sweep_to_json(const SweepResults& results);
// The JSON document as --json writes it: indented, one row per line.
std::string sweep_json_text(const SweepResults& results);

// "a=0.70", "E=2.50" or "q=0.8,0.1/0.7": how an acceptance is shown in tables and the report.
std::string short_acceptance(const Acceptance& a);

// "speculation stops paying at batch 32", "speculation pays at every batch swept".
std::string pay_limit_text(const SweepPayLimit& limit);

}  // namespace eaglesim
