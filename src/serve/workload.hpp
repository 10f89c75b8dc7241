#pragma once
// The requests a serving benchmark sends: their input and output lengths (drawn as the
// benchmarks' "random" dataset draws them, or read from a file of lengths) and when the client
// sends each, by a request rate (Poisson, or gamma-distributed gaps with a burstiness, as SGLang's
// bench_serving and `vllm bench serve` do; infinite: all at once) under a cap on requests in
// flight (--max-concurrency: the client sends the next one when one finishes). Deterministic for
// a seed.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace eaglesim {

struct ServeRequest {
  std::int64_t input_len = 0;
  std::int64_t output_len = 0;
  double arrival_s = 0;  // when the client would send it, before any concurrency cap
};

// How the benchmark's random dataset spreads lengths around the given ones: SGLang's
// bench_serving draws uniformly in [max(1, L * r), L]; vLLM's in [L * (1 - r), L * (1 + r)].
enum class RangeRule { sglang, vllm };

struct WorkloadSpec {
  int num_prompts = 1000;
  std::int64_t input_len = 1024;   // random dataset
  std::int64_t output_len = 1024;
  double range_ratio = 0.0;
  RangeRule range_rule = RangeRule::sglang;
  std::string lengths_file;        // instead of the random dataset (workload.cpp: formats)
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s
  double burstiness = 1.0;         // gamma shape of the gaps; 1: Poisson
  int max_concurrency = 0;         // 0: no cap
  std::uint64_t seed = 1;
};

// Throws InputError naming the flag or file for anything a benchmark could not run: no prompts,
// a rate or burstiness <= 0, lengths < 1 (outputs) or < 1 (inputs), a range ratio outside its
// rule's interval, an empty or malformed lengths file.
std::vector<ServeRequest> make_workload(const WorkloadSpec& spec);

// Lengths from a file: JSON Lines of {"input_len": N, "output_len": M}; a CSV whose header names
// input_len and output_len; or a `vllm bench serve --save-result` / bench_serving result with
// input_lens and output_lens arrays (of bench_serving's JSON Lines of runs, the last run). In file order; InputError with the file, line or field.
std::vector<std::pair<std::int64_t, std::int64_t>> read_lengths_file(const std::string& path);

// Largest input + output length the workload holds.
std::int64_t longest_request(const std::vector<ServeRequest>& requests);

}  // namespace eaglesim
