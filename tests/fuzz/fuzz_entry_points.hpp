#pragma once
// The code each libFuzzer target runs on one input, shared with the regression test
// (tests/unit/test_fuzz_regressions.cpp) so that a saved crash is replayed through exactly the
// path that found it. Contract: an InputError is the expected answer to bad bytes and is
// swallowed here; any other exception, a crash, a sanitizer report or a broken invariant
// (std::logic_error thrown below) is a finding. Each returns whether the input was accepted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace eaglesim::fuzz {

// Native trace JSON: parse, validate, and when accepted check that write -> read -> write is
// byte-identical (docs/trace-format.md promises it) and that the inspect statistics compute.
bool trace_reader(const std::uint8_t* data, std::size_t size);
// Topology JSON: parse, validate, and when accepted round-trip it and walk every GPU pair's path.
bool topology_reader(const std::uint8_t* data, std::size_t size);
// Hugging Face config.json: parse, and when accepted generate a TP1 and a TP2 verify step whose
// trace the native reader must accept again.
bool model_config_reader(const std::uint8_t* data, std::size_t size);
// Kineto / Chrome-trace JSON as one rank's file (written to a temporary file, because the
// importer reads files; named .json.gz when the bytes start with the gzip magic, so that the
// gzip path is fuzzed too); when accepted the imported trace must round-trip.
bool kineto_importer(const std::uint8_t* data, std::size_t size);
// serve's --dataset-path: JSON Lines, CSV or a benchmark result; accepted files give lengths >= 1
// and a workload of the prompts asked for.
bool lengths_file_reader(const std::uint8_t* data, std::size_t size);

struct Target {
  const char* name;  // directory name under tests/data/fuzz_regressions/ and tools/fuzz.sh
  bool (*run)(const std::uint8_t*, std::size_t);
};
const std::vector<Target>& targets();

}  // namespace eaglesim::fuzz
