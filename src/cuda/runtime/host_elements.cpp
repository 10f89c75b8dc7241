#include "cuda/runtime/host_elements.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace eaglesim::cuda {

namespace {

// fp8 and int4 are not element types of any allreduce buffer (quant's fp8 is its wire format,
// inside the kernel); a caller passing one is a bug, not bad input.
[[noreturn]] void unsupported(DType t) {
  throw std::invalid_argument(std::string("host_elements: no host reference for dtype ") + to_string(t));
}

}  // namespace

double read_element(DType t, const unsigned char* base, std::size_t i) {
  switch (t) {
    case DType::bf16: {
      __nv_bfloat16 v;
      std::memcpy(&v, base + 2 * i, 2);
      return __bfloat162float(v);
    }
    case DType::fp16: {
      __half v;
      std::memcpy(&v, base + 2 * i, 2);
      return __half2float(v);
    }
    case DType::fp32: {
      float v;
      std::memcpy(&v, base + 4 * i, 4);
      return v;
    }
    default:
      unsupported(t);
  }
}

void write_element(DType t, unsigned char* base, std::size_t i, double value) {
  const float v = static_cast<float>(value);
  switch (t) {
    case DType::bf16: {
      const __nv_bfloat16 b = __float2bfloat16(v);
      std::memcpy(base + 2 * i, &b, 2);
      return;
    }
    case DType::fp16: {
      const __half h = __float2half(v);
      std::memcpy(base + 2 * i, &h, 2);
      return;
    }
    case DType::fp32:
      std::memcpy(base + 4 * i, &v, 4);
      return;
    default:
      unsupported(t);
  }
}

}  // namespace eaglesim::cuda
