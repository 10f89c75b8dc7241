#pragma once
// Logging for the custom allreduce code, kept in a host .cpp so nvcc never parses spdlog/fmt.
#include <cstddef>
#include <string>

namespace eaglesim::cuda {

void note_nccl_fallback(const std::string& strategy, int rank, std::size_t bytes, std::size_t max_bytes);
// How a fused group's split rows meet (info level, once per group): pushed (no row sync), or
// pulled and then synced through clusters or the rendezvous; `reason` says why the rendezvous
// when `clusters` is false.
void note_fused_row_sync(bool push, bool clusters, const std::string& reason);

}  // namespace eaglesim::cuda
