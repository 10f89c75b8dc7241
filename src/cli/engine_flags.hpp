#pragma once
// --engine-option, shared by `run` and `bench-comm`: the engine strategies' (sglang, vllm)
// launch options, checked against what eaglesim models of each engine, and the model's
// architecture some of their defaults turn on.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "comm/engine_options.hpp"

namespace eaglesim::cli {

void add_engine_option_flag(CLI::App* cmd, std::string& value);

// The options for a run of `strategies` (InputError, exit 2, on a bad option); with an engine
// strategy among them, the architecture of `model` when models/llm has its config.json.
ServingEngineOptions resolve_engine_options(const std::string& flag_value, const std::vector<std::string>& strategies,
                                            const std::string& model);

}  // namespace eaglesim::cli
