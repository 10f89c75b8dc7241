#pragma once
// Launch geometry of the replay's memory-bound kernels: the row norms (RMSNorm and the fused
// residual add + RMSNorm, kernels/row_norm.cuh) and the point-wise kernels (residual add,
// SiLU * mul, kernels/pointwise_bf16.cuh). Host C++ without CUDA headers, so the choices are
// unit-tested without a GPU; src/cuda/ops/replay_kernels.cu launches what it says.
#include <cstdint>

namespace eaglesim::cuda {

// The widest row a row norm holds in registers: 1024 threads x 4 vectors x 8 bf16 (8 vectors
// would not fit the 64 registers a 1024-thread block leaves each thread; no model's norm is wider
// than 16384).
constexpr std::int64_t kRowNormMaxHidden = 32768;
constexpr int kRowNormMaxThreads = 1024;
constexpr int kRowNormWarpRowsPerBlock = 4;  // one-warp rows: warps (rows) per block
constexpr int kPointwiseThreads = 256;

struct RowNormGeometry {
  bool packed = false;         // 16-byte loads (the caller says whether width and pointers allow)
  bool warp_per_row = false;   // rows of at most 32 x 4 units: one warp each
  int vectors_per_thread = 1;  // V: units of 8 elements a thread holds (1, 2 or 4)
  int threads = 32;            // per block
  std::int64_t blocks = 1;
};

// The fewest vectors per thread that fit the row into one warp (rows of <= 128 units: V <= 4)
// or into one block of <= 1024 threads (V <= 4), threads rounded up to whole warps. Units are
// 16-byte vectors when packed, else groups of 8 elements (ceil(hidden / 8)). InputError when
// rows < 1 or hidden is outside [1, kRowNormMaxHidden] (the message names the width).
RowNormGeometry row_norm_geometry(std::int64_t rows, std::int64_t hidden, bool packed);

struct PointwiseGeometry {
  int threads = kPointwiseThreads;
  int units_per_thread = 1;   // U: 1, 2 or 4 units (16-byte vectors, or elements when scalar)
  std::int64_t grid_x = 1;    // over one row's units
  int grid_y = 1;             // over rows, at most 65535 (the kernel strides over the rest)
};

// The most units per thread (4, 2, then 1) that still leave at least 4 blocks per SM over the
// whole grid, so that large ops keep several loads in flight per thread and small ops still
// spread over every SM. rows >= 1, units_per_row >= 0 (0: one idle block).
PointwiseGeometry pointwise_geometry(std::int64_t rows, std::int64_t units_per_row, int sm_count);

}  // namespace eaglesim::cuda
