// vLLM's allreduce dispatch, as its source reads (docs/engine-dispatch.md names the files and the
// commits). In the order vLLM applies them to one allreduce of a decoder layer:
//   1. the compile pass that fuses allreduce + residual add + RMSNorm into FlashInfer's kernel
//      (compilation/passes/fusion/allreduce_rms_fusion.py), on by default at -O2 when TP > 1 on
//      SM 9.0 or 10.x with FlashInfer installed (config/vllm.py enable_allreduce_rms_fusion), for
//      tensors up to FI_ALLREDUCE_FUSION_MAX_SIZE_MB, one-shot up to
//      _FI_ALLREDUCE_ONE_SHOT_MAX_SIZES_MB;
//   2. NCCL symmetric kernels when VLLM_USE_NCCL_SYMM_MEM (off by default), outside the sizes the
//      custom allreduce wins (all_reduce_utils.py should_nccl_symm_mem_allreduce);
//   3. the custom allreduce (device_communicators/custom_all_reduce.py, csrc/custom_all_reduce.cuh;
//      engine_rules.hpp), buffer 8 MiB, or CUSTOM_ALL_REDUCE_MAX_SIZES when torch symmetric memory
//      is up;
//   4. torch symmetric memory (symm_mem.py; VLLM_ALLREDUCE_USE_SYMM_MEM on by default): SM 9.0 /
//      10.0 / 10.3 with NVLink multicast, bf16, up to SYMM_MEM_ALL_REDUCE_MAX_SIZES; multimem at
//      the world sizes _WORLD_SIZES_MULTIMEM lists, else two-shot;
//   5. NCCL (pynccl).
// The order of 2-5 is cuda_communicator.py's all_reduce.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "comm/engine_rules.hpp"

namespace eaglesim {

namespace {

constexpr std::int64_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr std::int64_t kCustomMaxBytes = 8192 * 1024;  // CustomAllreduce max_size default

// The files the reasons cite (docs/engine-dispatch.md gives their paths and commits).
constexpr CustomAllreduceSource kCustomSource{"custom_all_reduce.py", "csrc/custom_all_reduce.cuh"};
constexpr const char* kVllmConfig = "config/vllm.py";
constexpr const char* kFusionPass = "allreduce_rms_fusion.py";
constexpr const char* kUtils = "all_reduce_utils.py";
constexpr const char* kSymmMem = "symm_mem.py", *kCudaCommunicator = "cuda_communicator.py";

using SizeTable = std::map<int, std::int64_t>;  // world size -> bytes

// all_reduce_utils.py: the custom allreduce's limit while torch symmetric memory is up.
const std::map<std::string, SizeTable>& custom_max_with_symm_mem() {
  static const std::map<std::string, SizeTable> t{
      {"9.0", {{2, 64 * kMiB}, {4, 32 * kMiB}, {6, kMiB / 2}, {8, kMiB / 4}}},
      {"10.0", {{2, 2 * kMiB}, {4, 2 * kMiB}, {6, 1 * kMiB}, {8, 1 * kMiB}}},
      {"10.3", {{2, 4 * kMiB}, {4, 4 * kMiB}, {6, 8 * kMiB}, {8, 4 * kMiB}}},
  };
  return t;
}

// all_reduce_utils.py SYMM_MEM_ALL_REDUCE_MAX_SIZES.
const std::map<std::string, SizeTable>& symm_mem_max() {
  static const std::map<std::string, SizeTable> t{
      {"9.0", {{2, 64 * kMiB}, {4, 32 * kMiB}, {6, 64 * kMiB}, {8, 64 * kMiB}}},
      {"10.0", {{2, 8 * kMiB}, {4, 32 * kMiB}, {6, 128 * kMiB}, {8, 128 * kMiB}}},
      {"10.3", {{2, 4 * kMiB}, {4, 32 * kMiB}, {6, 32 * kMiB}, {8, 64 * kMiB}}},
  };
  return t;
}

// symm_mem.py _WORLD_SIZES_MULTIMEM: world sizes that run multimem_all_reduce_.
bool multimem_world_size(const std::string& cc, int ranks) {
  if (cc == "9.0") return ranks == 4 || ranks == 6 || ranks == 8;
  return (cc == "10.0" || cc == "10.3") && (ranks == 6 || ranks == 8);
}

// allreduce_rms_fusion.py, keyed by major * 10 + minor.
const std::map<int, SizeTable>& fusion_max() {
  static const std::map<int, SizeTable> t{
      {90, {{2, 64 * kMiB}, {4, 2 * kMiB}, {8, kMiB / 2}}},
      {100, {{2, 64 * kMiB}, {4, 32 * kMiB}, {8, 1 * kMiB}, {16, 64 * kMiB}}},
      {103, {{2, 64 * kMiB}, {4, 64 * kMiB}, {8, 4 * kMiB}, {16, 64 * kMiB}}},
      {107, {{2, 64 * kMiB}, {4, 64 * kMiB}, {8, 2 * kMiB}}},
  };
  return t;
}
const std::map<int, SizeTable>& fusion_oneshot_max() {
  static const std::map<int, SizeTable> t{
      {90, {{2, 32 * kMiB}, {4, 2 * kMiB}, {8, kMiB / 2}}},
      {100, {{2, 32 * kMiB}, {4, 4 * kMiB}, {8, 1 * kMiB}}},
      {103, {{2, 32 * kMiB}, {4, 4 * kMiB}, {8, 2 * kMiB}}},
      {107, {{2, 32 * kMiB}, {4, 4 * kMiB}, {8, 2 * kMiB}}},
  };
  return t;
}

std::optional<std::int64_t> lookup(const SizeTable& t, int ranks) {
  auto it = t.find(ranks);
  if (it == t.end()) return std::nullopt;
  return it->second;
}

struct Decision {
  bool on = false;
  std::string why;
};

Decision fusion_setting(const MachineFacts& m, int ranks, const EngineSettings& s) {
  if (std::optional<bool> forced = s.forced("fuse_allreduce_rms"))
    return {*forced, fmt::format("allreduce+RMSNorm fusion {}: fuse_allreduce_rms={}", *forced ? "on" : "off",
                                 *forced ? "true" : "false")};
  const ComputeCapability& cc = m.capability;
  if (ranks < 2) return {false, "allreduce+RMSNorm fusion off: TP 1"};
  if (!(cc.major == 10 || (cc.major == 9 && cc.minor == 0)))
    return {false, fmt::format("allreduce+RMSNorm fusion off: -O2 turns it on for SM 9.0 and 10.x, this GPU is SM "
                               "{} ({})", cc.to_string(), kVllmConfig)};
  return {true, fmt::format("allreduce+RMSNorm fusion on: -O2 turns it on with TP > 1 on SM {} and FlashInfer "
                            "installed ({})", cc.to_string(), kVllmConfig)};
}

// Torch symmetric memory comes up (SymmMemCostModel not disabled), or why not.
Decision symm_mem_setting(const MachineFacts& m, int ranks, const EngineSettings& s) {
  const std::string cc = m.capability.to_string();
  if (!s.flag("VLLM_ALLREDUCE_USE_SYMM_MEM")) return {false, "torch symmetric memory off: VLLM_ALLREDUCE_USE_SYMM_MEM=0"};
  auto table = symm_mem_max().find(cc);
  if (table == symm_mem_max().end())
    return {false, fmt::format("torch symmetric memory off: no size table for SM {} ({})", cc, kSymmMem)};
  if (!lookup(table->second, ranks))
    return {false, fmt::format("torch symmetric memory off: world size {} not in its table ({})", ranks, kSymmMem)};
  if (!m.multicast)
    return {false, fmt::format("torch symmetric memory off: no NVLink multicast on these GPUs ({})", kSymmMem)};
  return {true, fmt::format("torch symmetric memory on: SM {}, {} ranks, NVLink multicast ({})", cc, ranks, kSymmMem)};
}

// The custom allreduce's buffer: 8 MiB, or less while torch symmetric memory is up
// (CUSTOM_ALL_REDUCE_MAX_SIZES, custom_all_reduce.py takes the smaller).
std::int64_t custom_limit(const MachineFacts& m, int ranks, bool symm_mem_on, std::string& why) {
  why = "vLLM's 8 MiB buffer, custom_all_reduce.py";
  if (!symm_mem_on) return kCustomMaxBytes;
  const std::string cc = m.capability.to_string();
  auto t = custom_max_with_symm_mem().find(cc);
  if (t == custom_max_with_symm_mem().end()) return kCustomMaxBytes;
  const std::optional<std::int64_t> limit = lookup(t->second, ranks);
  if (!limit || *limit >= kCustomMaxBytes) return kCustomMaxBytes;
  why = fmt::format("its limit while symmetric memory is up, SM {} at {} ranks, {}", cc, ranks, kUtils);
  return *limit;
}

std::optional<DispatchChoice> fused_path(const MachineFacts& m, const AllreduceCall& c, const std::string& on_why,
                                         std::string& why_not) {
  if (!c.norm_follows) {
    why_not = "fusion skipped: no residual add + RMSNorm follows";
    return std::nullopt;
  }
  const int key = m.capability.as_int();
  auto table = fusion_max().find(key);
  if (table == fusion_max().end()) {
    why_not = fmt::format("fusion skipped: FlashInfer's fused allreduce has no size table for SM {} ({})",
                          m.capability.to_string(), kFusionPass);
    return std::nullopt;
  }
  const std::optional<std::int64_t> max = lookup(table->second, c.ranks);
  if (!max) {
    why_not = fmt::format("fusion skipped: no size limit for {} ranks on SM {} ({})", c.ranks,
                          m.capability.to_string(), kFusionPass);
    return std::nullopt;
  }
  if (c.bytes > *max) {
    why_not = fmt::format("fusion skipped: {} > {} for {} ranks on SM {} ({})", size_text(c.bytes), size_text(*max),
                          c.ranks, m.capability.to_string(), kFusionPass);
    return std::nullopt;
  }
  if (!m.p2p) {
    why_not = kFusionNeedsP2p;
    return std::nullopt;
  }
  const std::optional<std::int64_t> oneshot_max = lookup(fusion_oneshot_max().at(key), c.ranks);
  const bool oneshot = !oneshot_max || c.bytes <= *oneshot_max;
  const std::string sizing = fmt::format(
      "{} within the {} fusion limit at {} ranks on SM {}; {} ({})", size_text(c.bytes), size_text(*max), c.ranks,
      m.capability.to_string(),
      oneshot_max ? fmt::format("{} the {} one-shot limit: {}", oneshot ? "within" : "above", size_text(*oneshot_max),
                                oneshot ? "one-shot" : "two-shot")
                  : std::string("no one-shot limit: one-shot"),
      kFusionPass);
  return flashinfer_fused_path(oneshot, on_why, sizing);
}

// should_nccl_symm_mem_allreduce: NCCL symmetric kernels outside the custom allreduce's range.
bool nccl_symm_mem_takes(int ranks, std::int64_t bytes, std::string& why) {
  if (ranks < 4) return false;
  std::int64_t lo = 0, hi = 0;
  if (ranks == 4) lo = 16 * kKiB, hi = 512 * kKiB;
  else if (ranks == 8) lo = 16 * kKiB, hi = 128 * kKiB;
  else if (ranks > 8) {
    why = fmt::format("NCCL symmetric kernels: above 8 ranks always ({})", kUtils);
    return true;
  } else {
    return false;
  }
  if (bytes > lo && bytes < hi) return false;
  why = fmt::format("NCCL symmetric kernels (VLLM_USE_NCCL_SYMM_MEM): {} outside ({}, {}) at {} ranks ({})",
                    size_text(bytes), size_text(lo), size_text(hi), ranks, kUtils);
  return true;
}

}  // namespace

const EngineModel& vllm_model() {
  static const EngineModel model{
      "vllm", "vLLM", "main@00d618aa",  // strategy name, display name, the version label
      {
          disable_custom_all_reduce_option(),
          {"fuse_allreduce_rms", true, "auto",
           "compilation pass_config.fuse_allreduce_rms (FlashInfer allreduce + RMSNorm); auto: -O2's default"},
          {"VLLM_ALLREDUCE_USE_SYMM_MEM", false, "true", "torch symmetric memory allreduce (multimem / two-shot)"},
          {"VLLM_USE_NCCL_SYMM_MEM", false, "false", "NCCL symmetric-memory kernels for the sizes NCCL wins"},
      },
      {"VLLM_ALLREDUCE_USE_FLASHINFER", "VLLM_CUSTOM_ALLREDUCE_ALGO", "enforce_eager", "fi_allreduce_fusion_max_size_mb",
       "VLLM_BATCH_INVARIANT", "optimization_level"},
  };
  return model;
}

DispatchChoice vllm_dispatch(const MachineFacts& m, const AllreduceCall& c, const EngineSettings& s) {
  std::string passed;
  auto then = [&passed](const std::string& why) { passed += (passed.empty() ? "" : "; ") + why; };
  auto taken = [&passed](DispatchChoice d) {
    if (!passed.empty()) d.reason = passed + "; " + d.reason;
    return d;
  };

  const Decision fusion = fusion_setting(m, c.ranks, s);
  if (fusion.on) {
    std::string why_not;
    if (std::optional<DispatchChoice> d = fused_path(m, c, fusion.why, why_not)) return *d;
    then(why_not);
  }

  std::string nccl_symm_why;
  if (s.flag("VLLM_USE_NCCL_SYMM_MEM") && nccl_symm_mem_takes(c.ranks, c.bytes, nccl_symm_why))
    return taken({"nccl", "NCCL (symmetric memory)", nccl_symm_why, false});

  const Decision symm = symm_mem_setting(m, c.ranks, s);
  const std::string cc = m.capability.to_string();
  std::string custom_max_why;
  const std::int64_t custom_max = custom_limit(m, c.ranks, symm.on, custom_max_why);
  std::string why_not;
  if (std::optional<DispatchChoice> d = custom_allreduce_path(m, c, custom_max, custom_max_why,
                                                              s.flag("disable_custom_all_reduce"), kCustomSource,
                                                              why_not)) {
    d->reason += "; captured in the CUDA graph, the input buffer is registered (no copy)";
    return taken(*d);
  }
  then(why_not);

  if (symm.on) {
    const std::int64_t max = *lookup(symm_mem_max().at(cc), c.ranks);
    if (c.dtype == DType::bf16 && c.bytes % 4 == 0 && c.bytes <= max) {
      const bool multimem = multimem_world_size(cc, c.ranks);
      DispatchChoice d;
      d.strategy = "twoshot";
      d.path = multimem ? "torch symmetric memory multimem" : "torch symmetric memory two-shot";
      d.reason = fmt::format("{}; {} <= {} ({}); {}", symm.why, size_text(c.bytes), size_text(max), kUtils,
                             multimem ? fmt::format("multimem at {} ranks on SM {} ({}); eaglesim has no NVLink "
                                                    "multicast model: priced and run as its two-shot",
                                                    c.ranks, cc, kSymmMem)
                                      : fmt::format("two-shot at {} ranks ({})", c.ranks, kSymmMem));
      return taken(d);
    }
    then(fmt::format("torch symmetric memory skipped: {} {} (bf16 up to {}, {})", to_string(c.dtype),
                     size_text(c.bytes), size_text(max), kSymmMem));
  } else if (s.flag("VLLM_ALLREDUCE_USE_SYMM_MEM") && m.full_nvlink) {
    then(symm.why);
  }
  then(fmt::format("NCCL (pynccl, {})", kCudaCommunicator));
  return {"nccl", "NCCL", passed, false};
}

std::vector<std::string> vllm_setup(const MachineFacts& m, int ranks, const EngineSettings& s) {
  const Decision symm = symm_mem_setting(m, ranks, s);
  std::string custom_max_why;
  const std::int64_t custom_max = custom_limit(m, ranks, symm.on, custom_max_why);
  std::vector<std::string> out{fusion_setting(m, ranks, s).why,
                               custom_allreduce_setup(m, ranks, custom_max, s.flag("disable_custom_all_reduce"),
                                                      kCustomSource),
                               symm.why};
  if (s.flag("VLLM_USE_NCCL_SYMM_MEM")) out.push_back("NCCL symmetric kernels on (VLLM_USE_NCCL_SYMM_MEM)");
  return out;
}

}  // namespace eaglesim
