#pragma once
// What the GEMM tuner (cuda::LtGemm::tune) compares two algorithms' outputs of one product by,
// without a second copy of the output: four random ±1 projections of the bf16 elements and their
// sum of squares, in double. Two algorithms computing the same product differ by rounding only
// (each element by about one bf16 unit in the last place, in no pattern), which moves a projection
// by a few thousandths of the output's norm; an algorithm that computes something else (a lost
// split of k, a wrong layout, zeros, NaN) moves the projections or the sum of squares by a large
// fraction of it.
#include <cstddef>
#include <string>

#include <cuda_runtime.h>

namespace eaglesim::cuda {

struct GemmFingerprint {
  double projection[4] = {0, 0, 0, 0};
  double sum_squares = 0;
};

// `count` bf16 elements at `y`; `scratch` holds 5 doubles of device memory. Stream-ordered, then
// waits for the stream to read the result back (setup only, never inside a capture).
GemmFingerprint fingerprint_bf16(const void* y, std::size_t count, double* scratch, cudaStream_t stream);

// Empty when `got` is the product `reference` is, up to rounding; else what differs.
std::string fingerprint_mismatch(const GemmFingerprint& got, const GemmFingerprint& reference);

}  // namespace eaglesim::cuda
