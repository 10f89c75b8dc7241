#include "cost/engine_profile.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "core/setting.hpp"

namespace eaglesim {

// Defaults. The host costs and the fused-MoE kernel's CTA rate are engine-overhead parameters set
// on the fit set of validation/published.tsv (tools/fit_engine_profile.py; docs/validation.md),
// never on its held-out rows; what the engines' source says about each is in docs/engine-steps.md.
EngineProfile default_engine_profile(ServingEngine engine) {
  EngineProfile p;
  p.engine = engine;
  switch (engine) {
    case ServingEngine::sglang:
    case ServingEngine::vllm:
    case ServingEngine::trtllm:
      // Triton fused_moe (SGLang fused_moe_triton/fused_moe.py, vLLM fused_moe.py) at decode
      // sizes: one CTA per 16-row block of a touched expert and 64 output columns, no split-K.
      // moe_cta_gbs is tools/fit_engine_profile.py's value on the fit rows (SGLang,
      // Qwen3-30B-A3B TP2 on H100, plain tok/s); vLLM and TensorRT-LLM have no MoE fit row and
      // take SGLang's. cycle_host_us: the fit's value on the fit rows' speedups (SGLang's EAGLE
      // worker reads the accepted tokens back with .tolist() synchronisations and books the tree's
      // KV slots on the host each cycle, eagle_worker.py / eagle_info.py); vLLM and TensorRT-LLM
      // take it too. Plain decoding's host work is overlapped by SGLang's scheduler, vLLM's async
      // scheduling and TensorRT-LLM's overlap scheduler, and not modelled unless given.
      p.moe_cta_gbs = 9.5;
      p.plain_host_us = 0;
      p.plain_overlap = true;
      p.cycle_host_us = 4000;
      p.draft_step_host_us = 0;
      // Eager launches: ~5 us of host time per kernel (a Triton launch 4.7-5.6 us, tritonbench PR
      // 1017; eager PyTorch ~5 us inside each launch call, vllm-omni PR 6516; 914 launches leaving
      // 3.07 ms of host gap at batch 1, exllamav3 PR 380). The graph limit: the engine's default.
      p.cuda_graph_max_bs = 0;
      p.eager_launch_us = 5.0;
      break;
    case ServingEngine::torch:
      // The reference step is one CUDA graph replay: no host work inside it, and no MoE.
      p.plain_overlap = false;
      break;
  }
  return p;
}

const std::vector<std::string>& engine_profile_option_names() {
  static const std::vector<std::string> names{"moe_cta_gbs",        "plain_host_us",     "plain_overlap",
                                              "cycle_host_us",      "draft_step_host_us", "cuda_graph_max_bs",
                                              "eager_launch_us"};
  return names;
}

bool is_engine_profile_option(const std::string& name) {
  const auto& n = engine_profile_option_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

namespace {

double number(const std::string& value, const std::string& item, double lo, double hi, const char* what) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (errno != 0 || end == value.c_str() || *end != '\0' || !(v >= lo && v <= hi))
    throw InputError(fmt::format("{}: '{}': expected {} in [{}, {}], got '{}'", setting_name(Setting::engine_option),
                                 item, what, lo, hi, value));
  return v;
}

}  // namespace

void set_engine_profile_option(EngineProfile& p, const std::string& name, const std::string& value,
                               const std::string& item) {
  if (name == "moe_cta_gbs") p.moe_cta_gbs = number(value, item, 0.1, 1e4, "GB/s per CTA");
  else if (name == "plain_host_us") p.plain_host_us = number(value, item, 0, 1e6, "microseconds");
  else if (name == "cycle_host_us") p.cycle_host_us = number(value, item, 0, 1e6, "microseconds");
  else if (name == "draft_step_host_us") p.draft_step_host_us = number(value, item, 0, 1e6, "microseconds");
  else if (name == "eager_launch_us") p.eager_launch_us = number(value, item, 0, 1e4, "microseconds per kernel launch");
  else if (name == "cuda_graph_max_bs") {
    const double v = number(value, item, 1, 1 << 20, "the largest batch captured (requests; vLLM: tokens)");
    if (v != static_cast<double>(static_cast<std::int64_t>(v)))
      throw InputError(fmt::format("{}: '{}': expected a whole number of requests (vLLM: tokens), got '{}'",
                                   setting_name(Setting::engine_option), item, value));
    p.cuda_graph_max_bs = static_cast<std::int64_t>(v);
  }
  else if (name == "plain_overlap") {
    if (value != "true" && value != "false")
      throw InputError(fmt::format("{}: '{}': expected true or false, got '{}'", setting_name(Setting::engine_option), item,
                                   value));
    p.plain_overlap = value == "true";
  } else {
    throw InputError(fmt::format("{}: '{}': no engine profile option {} (options: {})", setting_name(Setting::engine_option),
                                 item, name, fmt::format("{}", fmt::join(engine_profile_option_names(), ", "))));
  }
}

}  // namespace eaglesim
