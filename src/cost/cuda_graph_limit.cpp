#include "cost/cuda_graph_limit.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace eaglesim {

namespace {

// SGLang server_args.py (_handle_gpu_memory_settings): cuda_graph_max_bs by the smallest GPU's
// memory and TP; 256 at TP 1-2 and 512 at TP 4-8 on 80-141 GB GPUs (H100, H200, A100 80GB), 512
// on larger ones (B200); smaller GPUs get less.
std::int64_t sglang_default_max_bs(int tp, double gpu_mem_gb) {
  if (gpu_mem_gb > 160) return 512;
  if (gpu_mem_gb >= 60) return tp >= 4 ? 512 : 256;
  if (gpu_mem_gb >= 35) return tp >= 4 ? 256 : 80;
  return tp >= 4 ? 80 : 24;
}

// vLLM V1 (config/vllm.py): capture sizes count tokens, the largest min(max_num_seqs x (1 + k) x 2,
// 512) = 512 with the default max_num_seqs.
constexpr std::int64_t kVllmMaxCaptureTokens = 512;

// TensorRT-LLM (llmapi/llm_args.py, CudaGraphConfig): batch sizes 1-32, 64 and 128, padding off by
// default: a batch between them runs eagerly.
bool trtllm_captured(std::int64_t requests, std::int64_t max_bs) {
  if (requests > max_bs) return false;
  return requests <= 32 || requests == 64 || requests == 128;
}

}  // namespace

GraphDecision cuda_graph_decision(const EngineProfile& p, std::int64_t requests, std::int64_t tokens_per_request, int tp,
                                  double gpu_mem_gb) {
  GraphDecision d;
  const std::int64_t tokens = requests * std::max<std::int64_t>(1, tokens_per_request);
  switch (p.engine) {
    case ServingEngine::sglang: {
      const std::int64_t max_bs = p.cuda_graph_max_bs > 0 ? p.cuda_graph_max_bs : sglang_default_max_bs(tp, gpu_mem_gb);
      d.graph = requests <= max_bs;
      d.why = fmt::format("SGLang captures batches up to cuda_graph_max_bs {} (server_args.py{})", max_bs,
                          p.cuda_graph_max_bs > 0 ? ", as given" : fmt::format(": {:.0f} GB GPUs at TP {}", gpu_mem_gb, tp));
      break;
    }
    case ServingEngine::vllm: {
      const std::int64_t max_tokens = p.cuda_graph_max_bs > 0 ? p.cuda_graph_max_bs : kVllmMaxCaptureTokens;
      d.graph = tokens <= max_tokens;
      d.why = fmt::format("vLLM captures steps of up to {} tokens (max_cudagraph_capture_size; here {} x {} = {})",
                          max_tokens, requests, tokens_per_request, tokens);
      break;
    }
    case ServingEngine::trtllm: {
      const std::int64_t max_bs = p.cuda_graph_max_bs > 0 ? p.cuda_graph_max_bs : 128;
      d.graph = trtllm_captured(requests, max_bs);
      d.why = fmt::format("TensorRT-LLM captures batch sizes 1-32, 64 and 128 up to {} without padding (CudaGraphConfig)",
                          max_bs);
      break;
    }
    case ServingEngine::torch:
      d.why = "the reference step is one CUDA graph";
      break;
  }
  return d;
}

double eager_launch_excess_us(const EngineProfile& p, std::int64_t kernels, double gpu_us) {
  return std::max(0.0, static_cast<double>(kernels) * p.eager_launch_us - gpu_us);
}

}  // namespace eaglesim
