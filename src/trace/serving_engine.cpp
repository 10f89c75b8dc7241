#include "trace/serving_engine.hpp"

namespace eaglesim {

const std::vector<std::string>& serving_engine_names() {
  static const std::vector<std::string> names{"sglang", "vllm", "trtllm", "torch"};
  return names;
}

const char* to_string(ServingEngine e) { return serving_engine_names()[static_cast<int>(e)].c_str(); }

std::optional<ServingEngine> parse_serving_engine(const std::string& name) {
  const auto& names = serving_engine_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<ServingEngine>(i);
  return std::nullopt;
}

const char* modelled_version(ServingEngine e) {
  switch (e) {
    case ServingEngine::sglang: return "SGLang 0.5 (sgl-project/sglang, 2025-2026 main)";
    case ServingEngine::vllm: return "vLLM 0.11 (V1 engine)";
    case ServingEngine::trtllm: return "TensorRT-LLM 1.x (PyTorch backend)";
    case ServingEngine::torch: return "PyTorch 2.11 reference step (tools/torch-steps.tsv)";
  }
  return "";
}

}  // namespace eaglesim
