#include "cuda/comm/custom_log.hpp"

#include <spdlog/spdlog.h>

namespace eaglesim::cuda {

void note_nccl_fallback(const std::string& strategy, int rank, std::size_t bytes, std::size_t max_bytes) {
  spdlog::warn("{} (rank {}): a {}-byte allreduce exceeds the {}-byte registered buffer; using NCCL for it "
               "(noted once per rank)",
               strategy, rank, bytes, max_bytes);
}

void note_fused_row_sync(bool push, bool clusters, const std::string& reason) {
  if (push)
    spdlog::info("fused: split rows are pushed to every rank and read whole locally, no row sync");
  else if (clusters)
    spdlog::info("fused: split rows combine their sums of squares through thread-block clusters (rows of up to "
                 "8 chunks)");
  else
    spdlog::info("fused: split rows combine their sums of squares through the global-memory rendezvous ({})",
                 reason);
}

}  // namespace eaglesim::cuda
