#include "cuda/ops/fp8_scaling.hpp"

#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "fp8_quant_layout.cuh"

namespace eaglesim::cuda {

namespace kf = eaglesim::kernels::fp8;

namespace {

kf::ActScaling act_scaling(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::channel: return kf::ActScaling::per_token;
    case Fp8Scaling::block: return kf::ActScaling::per_group;
    case Fp8Scaling::tensor: break;
  }
  return kf::ActScaling::tensor_static;
}

int as_int(std::int64_t v) { return static_cast<int>(v); }

}  // namespace

const char* to_string(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::tensor: return "tensor";
    case Fp8Scaling::channel: return "channel";
    case Fp8Scaling::block: return "block";
  }
  return "?";
}

bool parse_fp8_scaling(const std::string& name, Fp8Scaling& out) {
  for (Fp8Scaling s : {Fp8Scaling::tensor, Fp8Scaling::channel, Fp8Scaling::block})
    if (name == to_string(s)) {
      out = s;
      return true;
    }
  return false;
}

const char* describe_scaling(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::tensor: return "per-tensor scales";
    case Fp8Scaling::channel: return "per-channel weight scales, per-token activation scales";
    case Fp8Scaling::block: return "128x128 weight-block scales, 1x128 activation-group scales";
  }
  return "?";
}

std::int64_t fp8_gemm_rows(Fp8Scaling s, std::int64_t m) {
  return s == Fp8Scaling::block ? (m + kf::kRowAlign - 1) / kf::kRowAlign * kf::kRowAlign : m;
}

std::size_t fp8_weight_scale_floats(Fp8Scaling s, std::int64_t n, std::int64_t k) {
  switch (s) {
    case Fp8Scaling::channel: return static_cast<std::size_t>(n);
    case Fp8Scaling::block: return kf::block_scale_count(as_int(n), as_int(k));
    case Fp8Scaling::tensor: break;
  }
  return 1;
}

std::size_t fp8_act_scale_floats(Fp8Scaling s, std::int64_t m, std::int64_t k) {
  return kf::act_scale_count(act_scaling(s), as_int(m), as_int(k));
}

std::string fp8_lt_unsupported_reason(Fp8Scaling s, std::int64_t m, std::int64_t n, std::int64_t k) {
  if (m < 1 || n < 1 || k < 1) return fmt::format("empty GEMM (m={} n={} k={})", m, n, k);
  if (fp8_gemm_rows(s, m) > INT_MAX || n > INT_MAX || k > INT_MAX) return "a dimension beyond int range";
  // cuBLASLt's fp8 kernels need every operand row on a 16-byte boundary: the e4m3 rows of W and x
  // (k bytes) and the bf16 rows of y (2n bytes).
  if (k % 16 != 0) return fmt::format("k={} is not a multiple of 16 (cuBLASLt's fp8 GEMMs need 16-byte rows)", k);
  if (n % 8 != 0)
    return fmt::format("n={} is not a multiple of 8 (cuBLASLt's fp8 GEMMs need 16-byte bf16 output rows)", n);
  return {};
}

const char* to_string(Fp8GemmPath p) {
  switch (p) {
    case Fp8GemmPath::rule: return "rule";
    case Fp8GemmPath::weight_only: return "weight_only";
    case Fp8GemmPath::cublas: return "cublas";
  }
  return "?";
}

Fp8GemmPath fp8_gemm_path_from_env() {
  const char* v = std::getenv(kFp8GemmEnv);
  if (!v || !*v) return Fp8GemmPath::rule;
  for (Fp8GemmPath p : {Fp8GemmPath::rule, Fp8GemmPath::weight_only, Fp8GemmPath::cublas})
    if (std::string(v) == to_string(p)) return p;
  throw InputError(fmt::format("{}={}: expected rule, weight_only or cublas", kFp8GemmEnv, v));
}

Fp8Scaling fp8_scaling_from_env() {
  const char* v = std::getenv(kFp8ScalingEnv);
  if (!v || !*v) return Fp8Scaling::block;
  Fp8Scaling s;
  if (!parse_fp8_scaling(v, s))
    throw InputError(fmt::format("{}={}: expected block, channel or tensor", kFp8ScalingEnv, v));
  return s;
}

}  // namespace eaglesim::cuda
