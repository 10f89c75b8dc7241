#pragma once
// How `calibrate` turns what each GPU measured into one table entry: a tensor-parallel step waits
// for its slowest GPU at every allreduce, so an entry takes the slowest time among the GPUs the
// steps using it run on, the first `gpus` of the calibration (a one-GPU step replays on GPU 0).
// Host code, so the rule is unit-tested without a GPU.
#include <vector>

namespace eaglesim {

// per_gpu[g][i]: GPU g's time for entry i (NaN or non-positive: not measured there). Entry i of
// the result is the largest measured time among GPUs 0 .. gpus[i] - 1 (all GPUs where gpus is
// shorter than the entries; clamped to 1 .. per_gpu.size()), NaN when none of them measured it.
// Throws std::invalid_argument when the GPUs' vectors differ in length.
std::vector<double> slowest_of_first_gpus(const std::vector<std::vector<double>>& per_gpu, const std::vector<int>& gpus);

}  // namespace eaglesim
