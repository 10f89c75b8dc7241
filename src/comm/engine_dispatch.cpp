// The engines behind the `sglang` and `vllm` strategies: which model answers for which name, the
// check that eaglesim's kernel can run the path an engine picked, the run-level summary, and the
// --engine-option parser.
#include "comm/engine_dispatch.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/engine_rules.hpp"
#include "comm/modelled_cost_model.hpp"
#include "comm/strategy_facts.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "cost/engine_profile.hpp"

namespace eaglesim {

namespace {

using DispatchFn = DispatchChoice (*)(const MachineFacts&, const AllreduceCall&, const EngineSettings&);
using SetupFn = std::vector<std::string> (*)(const MachineFacts&, int, const EngineSettings&);

struct Engine {
  const EngineModel& (*model)();
  DispatchFn dispatch;
  SetupFn setup;
};

const std::vector<Engine>& engines() {
  static const std::vector<Engine> all{{sglang_model, sglang_dispatch, sglang_setup},
                                       {vllm_model, vllm_dispatch, vllm_setup}};
  return all;
}

const Engine* find_engine(const std::string& name) {
  for (const Engine& e : engines())
    if (e.model().name == name) return &e;
  return nullptr;
}

// "sglang, vllm": the engines, for messages.
std::string engine_names() {
  std::vector<std::string> names;
  for (const Engine& e : engines()) names.push_back(e.model().name);
  return fmt::format("{}", fmt::join(names, ", "));
}

const Engine& engine(const std::string& name) {
  if (const Engine* e = find_engine(name)) return *e;
  throw InputError(fmt::format("unknown engine \"{}\" (known: {})", name, engine_names()));
}

std::string option_flag() { return setting_name(Setting::engine_option); }
constexpr const char* kVersion = "version";

std::string option_list(const EngineModel& m) {
  std::string s = kVersion;
  for (const EngineOptionSpec& o : m.options) s += ", " + o.name;
  return s;
}

const EngineOptionSpec* find_option(const EngineModel& m, const std::string& name) {
  for (const EngineOptionSpec& o : m.options)
    if (o.name == name) return &o;
  return nullptr;
}

bool has_option(const EngineModel& m, const std::string& name) { return name == kVersion || find_option(m, name); }

// The value as stored: true | false (1 and 0 accepted, as environment variables spell them),
// auto for the options that have it, the modelled label for `version`.
std::string checked_value(const EngineModel& m, const std::string& option, const std::string& value,
                          const std::string& item) {
  if (option == kVersion) {
    if (value != m.version)
      throw InputError(fmt::format("{}: '{}': {} version '{}' is not modelled; eaglesim models {} {} "
                                   "(docs/engine-dispatch.md names the source files read)",
                                   option_flag(), item, m.display, value, m.display, m.version));
    return value;
  }
  const EngineOptionSpec& o = *find_option(m, option);
  if (value == "true" || value == "1") return "true";
  if (value == "false" || value == "0") return "false";
  if (o.tristate && value == "auto") return "auto";
  throw InputError(fmt::format("{}: '{}': {} option {} expects {}, got '{}'", option_flag(), item, m.display, option,
                               o.tristate ? "auto, true or false" : "true or false", value));
}

[[noreturn]] void no_such_option(const EngineModel& m, const std::string& option, const std::string& item) {
  if (std::find(m.unmodelled.begin(), m.unmodelled.end(), option) != m.unmodelled.end())
    throw InputError(fmt::format("{}: '{}': {} has the option {}, but eaglesim does not model it (it does not "
                                 "change the paths modelled); modelled: {}",
                                 option_flag(), item, m.display, option, option_list(m)));
  throw InputError(fmt::format("{}: '{}': {} has no option {} (modelled: {})", option_flag(), item, m.display, option,
                               option_list(m)));
}

}  // namespace

const EngineModel& engine_model(const std::string& name) { return engine(name).model(); }

DispatchChoice dispatch_allreduce(const std::string& name, const MachineFacts& machine, const AllreduceCall& call,
                                  const ServingEngineOptions* options) {
  const Engine& e = engine(name);
  if (call.ranks <= 1) return {nccl_strategy(), "no allreduce", "1 rank: nothing to reduce", false};
  if (call.ranks > machine.gpus_per_node)
    return {nccl_strategy(), "NCCL",
            fmt::format("the {} ranks span nodes of {} GPUs: the custom allreduce, its fusion and symmetric memory "
                        "are off across nodes (both engines check in_the_same_node_as), NCCL runs every allreduce",
                        call.ranks, machine.gpus_per_node),
            false};
  DispatchChoice d = e.dispatch(machine, call, EngineSettings(e.model(), options));
  if (uses_p2p_kernels(d.strategy)) {
    const CommSupport kernel = p2p_kernel_support(machine.p2p, call.ranks, call.bytes);
    if (!kernel.ok) {
      d.reason += fmt::format("; eaglesim's {} kernel cannot take it ({}): priced and run as NCCL", d.strategy,
                              kernel.reason);
      d.strategy = nccl_strategy();
      d.copies_input = false;
    }
  }
  return d;
}

std::string engine_setup(const std::string& name, const MachineFacts& m, int ranks, const ServingEngineOptions* options) {
  const Engine& e = engine(name);
  std::string machine = fmt::format("SM {}, {} GPUs{}, {}, {}{}", m.capability.to_string(), m.gpu_count,
                                    m.nodes > 1 ? fmt::format(" on {} nodes", m.nodes) : std::string(),
                                    m.full_nvlink ? "NVLink between every pair" : "no NVLink",
                                    m.p2p ? "P2P" : "no P2P", m.multicast ? ", NVLink multicast" : "");
  std::string line = fmt::format("{} {} on {} ({}): ", e.model().display, e.model().version, m.source, machine);
  if (ranks <= 1) return line + "1 rank, no allreduce";
  if (ranks > m.gpus_per_node) return line + fmt::format("{} ranks span nodes: NCCL for every allreduce", ranks);
  const std::vector<std::string> parts = e.setup(m, ranks, EngineSettings(e.model(), options));
  for (std::size_t i = 0; i < parts.size(); ++i) line += (i ? "; " : "") + parts[i];
  return line;
}

ServingEngineOptions parse_engine_options(const std::string& list, const std::vector<std::string>& strategies) {
  ServingEngineOptions out;
  if (list.empty()) return out;
  std::vector<const EngineModel*> in_run;
  for (const std::string& s : strategies)
    if (const Engine* e = find_engine(s)) in_run.push_back(&e->model());
  for (const std::string& item : split_comma_list(option_flag(), list)) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw InputError(fmt::format("{}: expected ENGINE.OPTION=VALUE or OPTION=VALUE, got '{}'", option_flag(), item));
    std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    const std::size_t dot = key.find('.');
    // The engine profile's options (cost/engine_profile.hpp) apply to the trace's engine, whatever
    // the strategies: ENGINE.OPTION for one engine, OPTION for every engine.
    {
      const std::string engine = dot == std::string::npos ? std::string() : key.substr(0, dot);
      const std::string option = dot == std::string::npos ? key : key.substr(dot + 1);
      if (is_engine_profile_option(option) && (engine.empty() || parse_serving_engine(engine))) {
        EngineProfile check;
        set_engine_profile_option(check, option, value, item);
        out.values[engine.empty() ? std::string(kEveryEngine) : engine][option] = value;
        continue;
      }
    }
    if (in_run.empty())
      throw InputError(fmt::format("{}: '{}': the allreduce options are the engine strategies' ({}), and {} has none of "
                                   "them (the engine profile's options are {})",
                                   option_flag(), item, engine_names(), setting_name(Setting::strategy),
                                   fmt::format("{}", fmt::join(engine_profile_option_names(), ", "))));
    if (dot != std::string::npos && find_engine(key.substr(0, dot))) {
      const std::string engine_name = key.substr(0, dot), option = key.substr(dot + 1);
      const EngineModel& m = engine_model(engine_name);
      if (std::find(in_run.begin(), in_run.end(), &m) == in_run.end())
        throw InputError(fmt::format("{}: '{}': {} is not among {}", option_flag(), item, engine_name,
                                     setting_name(Setting::strategy)));
      if (!has_option(m, option)) no_such_option(m, option, item);
      out.values[m.name][option] = checked_value(m, option, value, item);
      continue;
    }
    int applied = 0;
    for (const EngineModel* m : in_run)
      if (has_option(*m, key)) {
        out.values[m->name][key] = checked_value(*m, key, value, item);
        ++applied;
      }
    if (applied == 0) {
      if (in_run.size() == 1) no_such_option(*in_run[0], key, item);
      std::string each;
      for (const EngineModel* m : in_run) each += fmt::format("; {}: {}", m->name, option_list(*m));
      throw InputError(fmt::format("{}: '{}': no engine of the run has the option {} (modelled{})", option_flag(), item, key,
                                   each));
    }
  }
  return out;
}

}  // namespace eaglesim
