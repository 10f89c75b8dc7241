#include "comm/engine_rules.hpp"

#include <fmt/format.h>

namespace eaglesim {

const std::string& EngineSettings::value(const std::string& option) const {
  if (options_)
    if (const std::string* v = options_->find(model_.name, option)) return *v;
  for (const EngineOptionSpec& o : model_.options)
    if (o.name == option) return o.default_value;
  throw std::logic_error("engine " + model_.name + ": no modelled option " + option);
}

bool EngineSettings::flag(const std::string& option) const { return value(option) == "true"; }

std::optional<bool> EngineSettings::forced(const std::string& option) const {
  const std::string& v = value(option);
  if (v == "auto") return std::nullopt;
  return v == "true";
}

EngineOptionSpec disable_custom_all_reduce_option() {
  return {"disable_custom_all_reduce", false, "false", "--disable-custom-all-reduce: NCCL instead of the custom allreduce"};
}

std::string size_text(std::int64_t bytes) {
  constexpr std::int64_t kib = 1024, mib = 1024 * 1024;
  if (bytes >= mib && bytes % mib == 0) return fmt::format("{} MiB", bytes / mib);
  if (bytes >= kib && bytes % kib == 0) return fmt::format("{} KiB", bytes / kib);
  return fmt::format("{} B", bytes);
}

std::optional<DispatchChoice> custom_allreduce_path(const MachineFacts& m, const AllreduceCall& c,
                                                    std::int64_t max_size, const std::string& max_size_why,
                                                    bool disabled_by_flag, const CustomAllreduceSource& src,
                                                    std::string& why_not) {
  const int n = c.ranks;
  if (disabled_by_flag) {
    why_not = "custom allreduce off: disable_custom_all_reduce";
    return std::nullopt;
  }
  if (n != 2 && n != 4 && n != 6 && n != 8) {
    why_not = fmt::format("custom allreduce off: world size {} is not 2, 4, 6 or 8 ({})", n, src.python_file);
    return std::nullopt;
  }
  if (n > 2 && !m.full_nvlink) {
    why_not = fmt::format("custom allreduce off: {} PCIe GPUs without NVLink (it runs on more than 2 GPUs only with "
                          "NVLink between every pair, {})",
                          n, src.python_file);
    return std::nullopt;
  }
  if (!m.p2p) {
    why_not = fmt::format("custom allreduce off: the GPUs fail the P2P test ({})", src.python_file);
    return std::nullopt;
  }
  if (c.bytes % 16 != 0) {
    why_not = fmt::format("custom allreduce skipped: {} B is not a multiple of 16 B ({})", c.bytes, src.python_file);
    return std::nullopt;
  }
  if (c.bytes >= max_size) {
    why_not = fmt::format("custom allreduce skipped: {} is not below its {} limit ({})", size_text(c.bytes),
                          size_text(max_size), max_size_why);
    return std::nullopt;
  }
  DispatchChoice d;
  const std::string taken = fmt::format("custom allreduce: {} < {} ({})", size_text(c.bytes), size_text(max_size),
                                        max_size_why);
  bool one_stage;
  std::string kernel_why;
  if (n == 2) {
    one_stage = true;
    kernel_why = "2 ranks always run one-shot";
  } else {
    const std::int64_t limit = n <= 4 ? 512 * 1024 : 256 * 1024;
    one_stage = c.bytes < limit;
    kernel_why = fmt::format("{} {} {} on {} NVLink ranks", size_text(c.bytes), one_stage ? "<" : ">=",
                             size_text(limit), n);
  }
  d.strategy = one_stage ? "oneshot" : "twoshot";
  d.path = one_stage ? "custom allreduce one-shot" : "custom allreduce two-shot";
  d.reason = fmt::format("{}; {}: {} ({})", taken, one_stage ? "one-shot" : "two-shot", kernel_why, src.kernel_file);
  return d;
}

DispatchChoice flashinfer_fused_path(bool oneshot, const std::string& on_why, const std::string& sizing) {
  if (oneshot) return {"fused", "FlashInfer allreduce+RMSNorm one-shot", on_why + "; " + sizing, false};
  return {"twoshot", "FlashInfer allreduce+RMSNorm two-shot",
          on_why + "; " + sizing +
              "; eaglesim has no two-shot fused kernel: a two-shot allreduce, the residual add and RMSNorm run as "
              "their own kernels",
          false};
}

std::string custom_allreduce_setup(const MachineFacts& m, int ranks, std::int64_t max_size, bool disabled_by_flag,
                                   const CustomAllreduceSource& src) {
  AllreduceCall probe;
  probe.ranks = ranks;
  probe.bytes = 16;  // passes the per-call rules: only the run-level gates can refuse it
  std::string why_not;
  if (custom_allreduce_path(m, probe, max_size, "", disabled_by_flag, src, why_not))
    return fmt::format("custom allreduce on: {} ranks{}, P2P, buffer {}", ranks, m.full_nvlink ? " over NVLink" : "",
                       size_text(max_size));
  return why_not;
}

}  // namespace eaglesim
