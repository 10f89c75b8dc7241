#pragma once
// The options of the engine strategies (`--engine-option`): per engine, the launch flags and
// environment variables that change which allreduce path it takes, spelt as the engine spells
// them, and the model architecture some of its defaults depend on. Parsed and checked against
// each engine's modelled options by parse_engine_options (comm/engine_dispatch.hpp).
#include <map>
#include <string>

namespace eaglesim {

// The key of ServingEngineOptions::values under which an engine-profile option given without an
// engine (`--engine-option cycle_host_us=2000`) is kept: it applies to every engine.
inline constexpr const char* kEveryEngine = "*";

struct ServingEngineOptions {
  // engine name -> option name -> value as given ("true", "false", "auto", a version label)
  std::map<std::string, std::map<std::string, std::string>> values;
  // The trace's model as Hugging Face names its class ("DeepseekV3ForCausalLM"), from the model's
  // config.json; empty when unknown. SGLang turns its allreduce fusion on by it.
  std::string model_architecture;

  // The value given for one engine's option, or nullptr.
  const std::string* find(const std::string& engine, const std::string& option) const {
    auto e = values.find(engine);
    if (e == values.end()) return nullptr;
    auto o = e->second.find(option);
    return o == e->second.end() ? nullptr : &o->second;
  }
};

}  // namespace eaglesim
