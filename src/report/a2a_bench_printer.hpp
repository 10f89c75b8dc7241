#pragma once
// bench-comm --a2a's outputs: a table a DeepEP user reads as its tests' output (tokens, dispatch
// and combine time, GB/s as each kernel's own test counts bytes), JSON and CSV.
#include <string>

#include <nlohmann/json.hpp>

#include "domain/a2a_bench_results.hpp"

namespace eaglesim {

std::string a2a_bench_table(const AllToAllBenchResult& r);
nlohmann::json a2a_bench_json(const AllToAllBenchResult& r);
std::string a2a_bench_csv(const AllToAllBenchResult& r);

}  // namespace eaglesim
