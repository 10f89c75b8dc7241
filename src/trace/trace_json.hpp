#pragma once
// Reading and writing the native trace format (docs/trace-format.md). The reader validates
// every field and reports the first problem as "FILE: JSON.PATH: expected X, got Y"; the writer
// is deterministic, so write -> read -> write is byte-identical, and writes version 1 whenever
// the trace holds nothing of version 2.
#include <string>

#include <nlohmann/json.hpp>

#include "trace/trace.hpp"

namespace eaglesim {

Trace read_trace(const std::string& path);
Trace parse_trace(const nlohmann::json& doc, const std::string& file);
std::string trace_to_string(const Trace& trace);
void write_trace(const Trace& trace, const std::string& path);  // atomic

// Per-field limits: beyond these a value is rejected as absurd rather than priced.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;        // m, n, k, hidden
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 22;
constexpr std::int64_t kMaxElementwiseOperands = 16;  // elementwise: tensors one small kernel reads and writes
constexpr std::int64_t kMaxKvLen = std::int64_t{1} << 24;
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 38;      // 256 GiB per allreduce
constexpr std::int64_t kMaxHeads = 4096;
constexpr std::int64_t kMaxExperts = 65536;
constexpr int kMaxTp = 1024;
constexpr std::int64_t kMaxBatch = 4096;                        // concurrent requests (version 2)
constexpr std::int64_t kMaxTreeCandidates = std::int64_t{1} << 40;
constexpr double kMaxOpUs = 1e9;

}  // namespace eaglesim
