#pragma once
// bench-comm's outputs, for measured (GPU) and predicted (--backend sim) results alike: the
// nccl-tests-style table, JSON and CSV. Measured results print #wrong; predicted ones print which
// strategies cannot run a size and, for the engine strategies, the path the engine takes per range
// of sizes.
#include <string>

#include <nlohmann/json.hpp>

#include "domain/bench_comm_results.hpp"

namespace eaglesim {

std::string comm_bench_table(const CommBenchResult& r);
nlohmann::json comm_bench_json(const CommBenchResult& r);
std::string comm_bench_csv(const CommBenchResult& r);

}  // namespace eaglesim
