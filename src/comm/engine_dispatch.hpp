#pragma once
// The serving engines' allreduce dispatch, modelled: for one allreduce of a step, the path SGLang
// or vLLM takes by default on a machine (its custom allreduce one-shot or two-shot, FlashInfer's
// allreduce + residual add + RMSNorm fusion, torch symmetric memory, NCCL) and the rule that
// picked it, each rule from the engine's source (docs/engine-dispatch.md names the files and the
// commits read). A path runs as one of eaglesim's strategies: its cost model in the simulator,
// its kernel on the CUDA backend. Where eaglesim's kernel cannot take the call (6 ranks, more
// than its 8 MiB buffer, no P2P) the path is priced and run as NCCL, and the reason says so.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/engine_options.hpp"
#include "comm/machine_facts.hpp"
#include "core/dtype.hpp"

namespace eaglesim {

struct AllreduceCall {
  int ranks = 1;
  std::int64_t bytes = 0;
  DType dtype = DType::bf16;
  bool norm_follows = false;  // a residual add + RMSNorm follow it: the fusion's pattern
  std::int64_t rows = 0;      // that RMSNorm's tokens (0 when none follows)
};

struct DispatchChoice {
  std::string strategy;  // nccl, oneshot, twoshot or fused: the eaglesim strategy that runs the path
  std::string path;      // the engine's path, e.g. "custom allreduce one-shot"
  std::string reason;    // the rules that led there, each with its source file
  // The path first copies the input into the engine's registered buffer (a custom allreduce
  // outside a CUDA graph): a device copy the strategy's model does not price.
  bool copies_input = false;
};

// One modelled launch option or environment variable of an engine.
struct EngineOptionSpec {
  std::string name;           // as the engine spells it: disable_custom_all_reduce, VLLM_ALLREDUCE_USE_SYMM_MEM
  bool tristate = false;      // true: auto | true | false (auto: the engine decides); false: true | false
  std::string default_value;  // "false", "true" or "auto"
  std::string meaning;
};

// What eaglesim knows of an engine: the version modelled and the options that change its dispatch.
struct EngineModel {
  std::string name;     // the strategy name: sglang, vllm
  std::string display;  // SGLang, vLLM
  std::string version;  // the modelled version's label; `version=` must name it
  std::vector<EngineOptionSpec> options;
  std::vector<std::string> unmodelled;  // options the engine has that do not change the modelled paths
};

// sglang and vllm; InputError for other names.
const EngineModel& engine_model(const std::string& engine);

// The path `engine` takes for `call` on `machine` with `options` (null: defaults).
DispatchChoice dispatch_allreduce(const std::string& engine, const MachineFacts& machine, const AllreduceCall& call,
                                  const ServingEngineOptions* options);

// One line on what the engine sets up for a run of `ranks` ranks on `machine` (fusion, custom
// allreduce, symmetric memory), naming the version modelled and the machine facts read.
std::string engine_setup(const std::string& engine, const MachineFacts& machine, int ranks,
                         const ServingEngineOptions* options);

// Parses an engine_option list "disable_custom_all_reduce=true,vllm.fuse_allreduce_rms=false" for a run
// of `strategies`: ENGINE.OPTION applies to that engine, a bare OPTION to every engine of the run
// that has it. InputError (exit 2) naming the flag, the option and what was expected when no
// engine strategy is in the run, an engine is not in it, no engine of the run has the option,
// a value is not one the option takes, or `version` names a version not modelled.
ServingEngineOptions parse_engine_options(const std::string& list, const std::vector<std::string>& strategies);

}  // namespace eaglesim
