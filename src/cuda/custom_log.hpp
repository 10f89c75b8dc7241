#pragma once
// Logging for the custom allreduce code, kept in a host .cpp so nvcc never parses spdlog/fmt.
#include <cstddef>
#include <string>

namespace eaglesim::cuda {

void note_nccl_fallback(const std::string& strategy, int rank, std::size_t bytes, std::size_t max_bytes);
// Which row sync a fused group's split rows use (info level, once per group): `reason` says
// why the rendezvous when `clusters` is false.
void note_fused_row_sync(bool clusters, const std::string& reason);

}  // namespace eaglesim::cuda
