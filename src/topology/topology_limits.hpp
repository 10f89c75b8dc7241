#pragma once
// Bounds the topology reader enforces. They reject typos (a bandwidth in B/s instead of GB/s, a
// latency in ns instead of µs), not real hardware: each is far above anything shipping today.
#include <cstdint>

namespace eaglesim {

constexpr std::int64_t kMaxGpus = 1024;
constexpr std::int64_t kMaxNodes = 128;
constexpr std::int64_t kMaxNicsPerNode = 64;
constexpr std::int64_t kMaxSms = 1000;
constexpr double kMaxTflops = 100000;      // 100 PFLOP/s dense on one GPU
constexpr double kMaxBwGbs = 100000;       // 100 TB/s for one memory system or link
constexpr double kMaxMemGb = 10000;
constexpr double kMaxLatencyUs = 10000;    // 10 ms for one hop or launch
constexpr double kMaxCalUs = 1e7;          // 10 s for one measured op
constexpr double kMaxSequenceOverheadUs = 100;  // per op, either sign: a kernel transition is ~1 µs
constexpr std::int64_t kMaxFittedPoints = 1000000;
constexpr double kMaxFittedResidual = 100;  // fit / measured - 1: a fit 100x off is a broken file
constexpr std::int64_t kMaxGemmDim = std::int64_t{1} << 24;

}  // namespace eaglesim
