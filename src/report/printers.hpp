#pragma once
// Report printers: the A/B table (stdout), JSON (schema in docs/report-format.md), CSV, and the
// verify-step timelines of every strategy as one Chrome-trace / Perfetto file. All return text;
// the caller writes files with write_file_atomic.
#include <string>

#include <nlohmann/json.hpp>

#include "domain/report.hpp"

namespace eaglesim {

// verbose: every per-strategy note (fusion counts, kernels, timing method); otherwise their count.
std::string report_to_table(const Report& report, bool verbose = false);
nlohmann::ordered_json report_to_json(const Report& report);
std::string report_to_csv(const Report& report);
std::string report_to_chrome_trace(const Report& report);  // supported strategies' cycles (or verify steps)

// A step's time per op kind as {"gemm": µs, ...}, kinds with no time left out. Shared by the
// report JSON, fidelity's JSON and the standalone CUDA replay tool.
nlohmann::ordered_json kind_us_json(const StepResult& step);

}  // namespace eaglesim
