#pragma once
// bench-comm's outputs, for measured (GPU) and predicted (--backend sim) results alike: the
// nccl-tests-style table, JSON and CSV. Measured results print #wrong; predicted ones print which
// strategies cannot run a size and, for the engine strategies, the path the engine takes per range
// of sizes.
#include <string>

#include <nlohmann/json.hpp>

#include "domain/bench_comm_results.hpp"

namespace eaglesim {

// wide: every figure per strategy (graph_us, ctx_us, algBW, busBW, #wrong), one row per size;
// otherwise one time per strategy and size, rows of at most 120 columns.
std::string comm_bench_table(const CommBenchResult& r, bool wide = false);
nlohmann::json comm_bench_json(const CommBenchResult& r);
std::string comm_bench_csv(const CommBenchResult& r);

}  // namespace eaglesim
