#include "cuda/custom_log.hpp"

#include <spdlog/spdlog.h>

namespace eaglesim::cuda {

void note_nccl_fallback(const std::string& strategy, int rank, std::size_t bytes, std::size_t max_bytes) {
  spdlog::warn("{} (rank {}): a {}-byte allreduce exceeds the {}-byte registered buffer; using NCCL for it "
               "(noted once per rank)",
               strategy, rank, bytes, max_bytes);
}

}  // namespace eaglesim::cuda
