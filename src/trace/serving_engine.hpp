#pragma once
// The serving engine whose kernels a generated step lists (`gen --engine`): each launches its own
// set of kernels per layer (RoPE, the KV-cache store, MoE routing and sorting, activation
// quantisation, ...) around the GEMMs and attention every engine runs, and each engine runs its
// cycle with its own host work (backend/engine_costs.hpp). `torch` is the PyTorch reference step
// (tools/torch-steps.tsv): eager-style PyTorch ops captured in one CUDA graph, the inventory that
// recordings on a GPU check.
#include <optional>
#include <string>
#include <vector>

namespace eaglesim {

enum class ServingEngine { sglang, vllm, trtllm, torch };

const char* to_string(ServingEngine e);
const std::vector<std::string>& serving_engine_names();
std::optional<ServingEngine> parse_serving_engine(const std::string& name);
// The release whose source the engine's inventory and costs were read from ("0.5.x", ...).
const char* modelled_version(ServingEngine e);

}  // namespace eaglesim
