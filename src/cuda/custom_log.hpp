#pragma once
// Logging for the custom allreduce code, kept in a host .cpp so nvcc never parses spdlog/fmt.
#include <cstddef>
#include <string>

namespace eaglesim::cuda {

void note_nccl_fallback(const std::string& strategy, int rank, std::size_t bytes, std::size_t max_bytes);

}  // namespace eaglesim::cuda
