#include "cli/engine_flags.hpp"

#include <algorithm>

#include "comm/engine_dispatch.hpp"
#include "comm/strategy_facts.hpp"
#include "io/data_paths.hpp"
#include "model/model_config.hpp"

namespace eaglesim::cli {

void add_engine_option_flag(CLI::App* cmd, std::string& value) {
  cmd->add_option("--engine-option", value,
                  "Options of the engine strategies (sglang, vllm), comma-separated ENGINE.OPTION=VALUE or OPTION=VALUE "
                  "(every engine of the run that has it), e.g. disable_custom_all_reduce=true,"
                  "sglang.enable_flashinfer_allreduce_fusion=true (docs/engine-dispatch.md lists them)");
}

ServingEngineOptions resolve_engine_options(const std::string& flag_value, const std::vector<std::string>& strategies,
                                            const std::string& model) {
  ServingEngineOptions out = parse_engine_options(flag_value, strategies);
  const bool engine_in_run = std::any_of(strategies.begin(), strategies.end(), [](const std::string& s) {
    return is_engine_dispatch(s);
  });
  if (engine_in_run && !model.empty())
    if (std::optional<std::string> file = find_data_file("models/llm/" + model + ".json"))
      out.model_architecture = read_model_config(*file).hf_architecture;
  return out;
}

}  // namespace eaglesim::cli
