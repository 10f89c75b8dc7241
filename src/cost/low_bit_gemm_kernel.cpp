#include "cost/low_bit_gemm_kernel.hpp"

#include <algorithm>

namespace eaglesim {

bool gemv_picked(bool int4, std::int64_t rows, std::int64_t n, double packed_bytes) {
  if (rows < 1 || rows > kGemvMaxRows) return false;
  const double limit = (int4 ? 16e6 : 40e6) * (rows > 8 ? 0.5 : 1.0);
  return packed_bytes <= limit && !(rows > 8 && n > 2048);
}

int weight_only_row_tile(std::int64_t rows) { return rows <= 8 ? 8 : rows <= 16 ? 16 : rows <= 32 ? 32 : 64; }

int dense_weight_only_row_tile(bool int4, std::int64_t rows) {
  const int tile = weight_only_row_tile(rows);
  return std::min(tile, int4 || rows <= 48 ? 16 : 32);
}

double low_bit_packed_bytes(const Op& op) {
  const double n = static_cast<double>(op.n), k = static_cast<double>(op.k);
  if (op.dtype == DType::int4) return n * k / 2 + n * (k / 32) * 2;
  const double blocks = static_cast<double>((op.n + 127) / 128) * static_cast<double>((op.k + 127) / 128);
  return n * k + blocks * 4;
}

LowBitGemmKernel low_bit_gemm_kernel(const Op& op) {
  const bool int4 = op.dtype == DType::int4;
  if (op.m > kWeightOnlyMaxRows) return LowBitGemmKernel::cublas;
  if (gemv_picked(int4, op.m, op.n, low_bit_packed_bytes(op))) return LowBitGemmKernel::gemv;
  return int4 ? LowBitGemmKernel::stream_k : LowBitGemmKernel::cublas;
}

}  // namespace eaglesim
