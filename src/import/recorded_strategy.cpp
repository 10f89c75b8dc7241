#include "import/recorded_strategy.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace eaglesim {

std::string strategy_for_allreduce_family(const std::string& f) {
  if (f == "NCCL") return "nccl";
  if (f.find("fusion") != std::string::npos) return "fused";  // allreduce + residual add + RMSNorm in one kernel
  if (f.find("1-stage") != std::string::npos || f.find("one-shot") != std::string::npos) return "oneshot";
  if (f.find("2-stage") != std::string::npos || f.find("two-shot") != std::string::npos) return "twoshot";
  return "";
}

std::vector<RecordedAllreducePath> recorded_allreduce_paths(const std::vector<const ImportedOp*>& ops,
                                                            const std::vector<double>& us) {
  std::vector<RecordedAllreducePath> paths;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ImportedOp& io = *ops[i];
    if (io.op.kind != OpKind::allreduce) continue;
    // The collective kernel, not the input copy folded in front of it.
    const ImportedKernel* k = nullptr;
    for (const auto& kernel : io.kernels)
      if (kernel.family != "memcpy" && kernel.family != "copy" && kernel.family != "memset") k = &kernel;
    if (!k) continue;
    auto it = std::find_if(paths.begin(), paths.end(), [&](const RecordedAllreducePath& p) { return p.kernel == k->name; });
    if (it == paths.end()) {
      paths.push_back({k->family, k->name, strategy_for_allreduce_family(k->family), 0, 0});
      it = paths.end() - 1;
    }
    ++it->count;
    it->us += us[i];
  }
  return paths;
}

std::string describe(const RecordedAllreducePath& p) {
  return fmt::format("{} x {} ({}), {:.1f} us per step{}", p.count, p.family, p.kernel, p.us,
                     p.strategy.empty() ? ": no eaglesim strategy runs this algorithm"
                                        : ": the algorithm of eaglesim strategy " + p.strategy);
}

}  // namespace eaglesim
