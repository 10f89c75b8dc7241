// SGLang's allreduce dispatch, as its source reads (docs/engine-dispatch.md names the files and
// the commits). In the order SGLang applies them to one allreduce of a decoder layer:
//   1. FlashInfer allreduce + residual add + RMSNorm fusion (layers/communicator.py
//      apply_flashinfer_allreduce_fusion): on when enabled (server_args.py turns it on by itself
//      for a list of MoE architectures on SM 9.0 / 10.x, one node, not H20), the GPU is SM 9.0 or
//      10.x, a residual add + RMSNorm follow and the batch is 1..2048 tokens
//      (FUSE_ALLREDUCE_MAX_BATCH_SIZE). FlashInfer picks one-shot when
//      tokens x hidden x 2 x ranks x 2 B <= 512 / 64 / 42 MiB at 2 / 4 / 8 ranks
//      (flashinfer/comm/trtllm_ar.py _should_use_oneshot), else two-shot.
//   2. the custom allreduce (distributed/device_communicators/custom_all_reduce.py,
//      sgl-kernel/csrc/allreduce/custom_all_reduce.cuh; engine_rules.hpp), buffer 8 MiB
//      (_MAX_CAR_SIZE); in a CUDA graph its input is registered, eagerly it is copied first;
//   3. NCCL with symmetric memory when enable_symm_mem (distributed/parallel_state.py);
//   4. NCCL (pynccl).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "comm/engine_rules.hpp"

namespace eaglesim {

namespace {

// The files the reasons cite (docs/engine-dispatch.md gives their paths and commits).
constexpr CustomAllreduceSource kCustomSource{"custom_all_reduce.py", "sgl-kernel custom_all_reduce.cuh"};
constexpr const char* kServerArgs = "server_args.py";
constexpr const char* kCommunicator = "layers/communicator.py";
constexpr const char* kParallelState = "parallel_state.py", *kTrtllmAr = "flashinfer trtllm_ar.py";

constexpr std::int64_t kCustomMaxBytes = 8192 * 1024;  // CustomAllreduce._MAX_CAR_SIZE
constexpr std::int64_t kFusionMaxTokens = 2048;        // FUSE_ALLREDUCE_MAX_BATCH_SIZE

// server_args.py: architectures whose FlashInfer allreduce fusion is on by default.
constexpr std::array<const char*, 6> kFusionArchitectures{
    "DeepseekV3ForCausalLM", "GptOssForCausalLM",   "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM", "Qwen3MoeForCausalLM", "KimiK25ForConditionalGeneration"};

// FlashInfer's one-shot ceiling per world size, in MiB of tokens x hidden x 2 x ranks x 2 B.
int oneshot_heuristic_mib(int ranks) { return ranks == 2 ? 512 : ranks == 4 ? 64 : ranks == 8 ? 42 : 0; }

bool sm90_or_sm100(const ComputeCapability& cc) { return (cc.major == 9 && cc.minor == 0) || cc.major == 10; }

bool is_h20(const std::string& gpu) {
  return gpu.find("H20") != std::string::npos && gpu.find("H200") == std::string::npos;
}

struct Decision {
  bool on = false;
  std::string why;
};

// Whether the fusion is on for the whole run, and why.
Decision fusion_setting(const MachineFacts& m, const EngineSettings& s) {
  if (s.flag("enforce_disable_flashinfer_allreduce_fusion"))
    return {false, "FlashInfer allreduce fusion off: enforce_disable_flashinfer_allreduce_fusion"};
  if (std::optional<bool> forced = s.forced("enable_flashinfer_allreduce_fusion"))
    return {*forced, fmt::format("FlashInfer allreduce fusion {}: enable_flashinfer_allreduce_fusion={}",
                                 *forced ? "on" : "off", *forced ? "true" : "false")};
  const std::string arch = s.model_architecture();
  const std::string sm = "SM " + m.capability.to_string();
  if (arch.empty()) return {false, "FlashInfer allreduce fusion off: the model's architecture is unknown, so " +
                                       std::string(kServerArgs) + "'s default list cannot turn it on"};
  if (std::find(kFusionArchitectures.begin(), kFusionArchitectures.end(), arch) == kFusionArchitectures.end())
    return {false, fmt::format("FlashInfer allreduce fusion off: {} is not among the architectures {} turns it on "
                               "for", arch, kServerArgs)};
  if (!sm90_or_sm100(m.capability))
    return {false, fmt::format("FlashInfer allreduce fusion off: {} turns it on for {} only on SM 9.0 or 10.x, "
                               "this GPU is {}", kServerArgs, arch, sm)};
  if (is_h20(m.gpu_name))
    return {false, fmt::format("FlashInfer allreduce fusion off: {} keeps it off on H20", kServerArgs)};
  return {true, fmt::format("FlashInfer allreduce fusion on: {} turns it on for {} on {}, one node", kServerArgs, arch,
                            sm)};
}

// The fused path for one call, or why not (fusion on).
std::optional<DispatchChoice> fused_path(const MachineFacts& m, const AllreduceCall& c, const std::string& on_why,
                                         std::string& why_not) {
  if (!sm90_or_sm100(m.capability)) {
    why_not = fmt::format("fusion skipped: it runs on SM 9.0 or 10.x, this GPU is SM {} ({})",
                          m.capability.to_string(), kCommunicator);
    return std::nullopt;
  }
  if (!c.norm_follows) {
    why_not = "fusion skipped: no residual add + RMSNorm follows";
    return std::nullopt;
  }
  if (c.rows < 1 || c.rows > kFusionMaxTokens) {
    why_not = fmt::format("fusion skipped: {} tokens, not 1..{} ({} FUSE_ALLREDUCE_MAX_BATCH_SIZE)", c.rows,
                          kFusionMaxTokens, kCommunicator);
    return std::nullopt;
  }
  const int limit_mib = oneshot_heuristic_mib(c.ranks);
  if (limit_mib == 0) {
    why_not = fmt::format("fusion skipped: FlashInfer's fused kernel takes 2, 4 or 8 ranks, not {} ({})", c.ranks,
                          kTrtllmAr);
    return std::nullopt;
  }
  if (!m.p2p) {
    why_not = kFusionNeedsP2p;
    return std::nullopt;
  }
  const double comm_mib = static_cast<double>(c.bytes) * 2.0 * c.ranks / (1024.0 * 1024.0);
  const bool oneshot = comm_mib <= limit_mib;
  const std::string sizing = fmt::format("{} tokens; {:.2f} MiB (bytes x 2 x ranks) {} {} MiB at {} ranks: {} ({})",
                                         c.rows, comm_mib, oneshot ? "<=" : ">", limit_mib, c.ranks,
                                         oneshot ? "one-shot" : "two-shot", kTrtllmAr);
  return flashinfer_fused_path(oneshot, on_why, sizing);
}

}  // namespace

const EngineModel& sglang_model() {
  static const EngineModel model{
      "sglang", "SGLang", "main@0005973a",  // strategy name, display name, the version label
      {
          disable_custom_all_reduce_option(),
          {"enable_flashinfer_allreduce_fusion", true, "auto",
           "FlashInfer allreduce + residual + RMSNorm fusion; auto: on for the architectures server_args.py lists "
           "on SM 9.0 / 10.x"},
          {"enforce_disable_flashinfer_allreduce_fusion", false, "false",
           "--enforce-disable-flashinfer-allreduce-fusion"},
          {"enable_symm_mem", false, "false", "--enable-symm-mem: NCCL on symmetric memory where the custom allreduce "
                                              "does not run"},
          {"disable_cuda_graph", false, "false",
           "run eagerly: the custom allreduce copies its input into its registered buffer first"},
      },
      {"enable_mscclpp", "enable_torch_symm_mem", "flashinfer_allreduce_fusion_backend", "enable_nccl_nvls",
       "enable_quant_communications", "enable_aiter_allreduce_fusion"},
  };
  return model;
}

DispatchChoice sglang_dispatch(const MachineFacts& m, const AllreduceCall& c, const EngineSettings& s) {
  std::string passed;  // the paths tried before the one taken, and why not
  auto then = [&passed](const std::string& why) { passed += (passed.empty() ? "" : "; ") + why; };

  const Decision fusion = fusion_setting(m, s);
  if (fusion.on) {
    std::string why_not;
    if (std::optional<DispatchChoice> d = fused_path(m, c, fusion.why, why_not)) return *d;
    then(why_not);
  }

  std::string why_not;
  if (std::optional<DispatchChoice> d =
          custom_allreduce_path(m, c, kCustomMaxBytes, "SGLang's 8 MiB buffer, custom_all_reduce.py",
                                s.flag("disable_custom_all_reduce"), kCustomSource, why_not)) {
    d->copies_input = s.flag("disable_cuda_graph");
    d->reason += d->copies_input ? "; outside a CUDA graph (disable_cuda_graph) the input is copied into the "
                                   "registered buffer first"
                                 : "; captured in the CUDA graph, the input buffer is registered (no copy)";
    if (!passed.empty()) d->reason = passed + "; " + d->reason;
    return *d;
  }
  then(why_not);

  DispatchChoice d;
  d.strategy = "nccl";
  if (s.flag("enable_symm_mem")) {
    d.path = "NCCL (symmetric memory)";
    then(fmt::format("NCCL on symmetric memory (enable_symm_mem, {})", kParallelState));
  } else {
    d.path = "NCCL";
    then(fmt::format("NCCL ({})", kParallelState));
  }
  d.reason = passed;
  return d;
}

std::vector<std::string> sglang_setup(const MachineFacts& m, int ranks, const EngineSettings& s) {
  std::vector<std::string> out{fusion_setting(m, s).why,
                               custom_allreduce_setup(m, ranks, kCustomMaxBytes, s.flag("disable_custom_all_reduce"),
                                                      kCustomSource)};
  if (s.flag("enable_symm_mem")) out.push_back("NCCL on symmetric memory where the custom allreduce does not run");
  if (s.flag("disable_cuda_graph")) out.push_back("no CUDA graph: the custom allreduce copies its input first");
  return out;
}

}  // namespace eaglesim
