#pragma once
// The pieces the two engine models are made of (comm/ only): an engine's options resolved for
// one run, the custom allreduce rules both engines share (SGLang's copy is adapted from vLLM's),
// and how a reason names a size. engine_dispatch.hpp is the interface the rest of eaglesim uses.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/engine_dispatch.hpp"

namespace eaglesim {

// One engine's option values for a run: what --engine-option gave, else the modelled default.
class EngineSettings {
 public:
  EngineSettings(const EngineModel& model, const ServingEngineOptions* options) : model_(model), options_(options) {}
  bool flag(const std::string& option) const;                // a true | false option
  std::optional<bool> forced(const std::string& option) const;  // an auto | true | false option; nullopt: auto
  std::string model_architecture() const { return options_ ? options_->model_architecture : std::string(); }

 private:
  const std::string& value(const std::string& option) const;
  const EngineModel& model_;
  const ServingEngineOptions* options_;
};

// The option both engines have: --disable-custom-all-reduce.
EngineOptionSpec disable_custom_all_reduce_option();

// "42 KiB", "256 KiB", "8 MiB" for whole KiB/MiB; else "43000 B".
std::string size_text(std::int64_t bytes);

// Where an engine's copy of the custom allreduce lives, for the reasons.
struct CustomAllreduceSource {
  const char* python_file;  // the gates: custom_all_reduce.py
  const char* kernel_file;  // one-shot vs two-shot: custom_all_reduce.cuh
};

// The custom allreduce's gates and kernel choice (the engines' custom_all_reduce.py and
// custom_all_reduce.cuh):
//   off: disabled by flag; world size not 2, 4, 6 or 8; more than 2 GPUs without NVLink between
//        every pair; the P2P test fails;
//   per call: bytes % 16 == 0 and bytes < max_size, else the next path;
//   kernel: 2 ranks one-shot; with full NVLink one-shot below 512 KiB up to 4 ranks and below
//           256 KiB up to 8, else two-shot.
// Returns the path when it takes the call; otherwise nullopt and `why_not` says why.
std::optional<DispatchChoice> custom_allreduce_path(const MachineFacts& m, const AllreduceCall& c,
                                                    std::int64_t max_size, const std::string& max_size_why,
                                                    bool disabled_by_flag, const CustomAllreduceSource& src,
                                                    std::string& why_not);

// FlashInfer's allreduce + residual add + RMSNorm kernel (both engines call it): one-shot runs as
// `fused`; two-shot as `twoshot`, its residual add and RMSNorm as their own kernels (eaglesim has
// no two-shot fused kernel). `on_why`: why fusion is on; `sizing`: why one-shot or two-shot.
DispatchChoice flashinfer_fused_path(bool oneshot, const std::string& on_why, const std::string& sizing);
// Its workspace is shared between the GPUs' memories: without P2P it is not made.
inline constexpr const char* kFusionNeedsP2p =
    "fusion skipped: FlashInfer's workspace is shared over P2P, which these GPUs lack";

const EngineModel& sglang_model();
const EngineModel& vllm_model();
DispatchChoice sglang_dispatch(const MachineFacts& m, const AllreduceCall& c, const EngineSettings& s);
DispatchChoice vllm_dispatch(const MachineFacts& m, const AllreduceCall& c, const EngineSettings& s);
// What the engine sets up once for a run of `ranks` ranks: fusion, custom allreduce, symmetric memory.
std::vector<std::string> sglang_setup(const MachineFacts& m, int ranks, const EngineSettings& s);
std::vector<std::string> vllm_setup(const MachineFacts& m, int ranks, const EngineSettings& s);
// The run-level part of the custom allreduce's gates (custom_allreduce_path without a call):
// "custom allreduce on (max)" or its reason for being off.
std::string custom_allreduce_setup(const MachineFacts& m, int ranks, std::int64_t max_size, bool disabled_by_flag,
                                   const CustomAllreduceSource& src);

}  // namespace eaglesim
