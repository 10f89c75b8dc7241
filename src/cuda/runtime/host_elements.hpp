#pragma once
// bf16 / fp16 / fp32 elements of a host byte buffer (a device buffer's copy), as doubles: for the
// host-side references that allreduce results are checked against (bench-comm, the replay's
// self-check). Other dtypes throw std::invalid_argument: no allreduce buffer holds them.
#include <cstddef>

#include "core/dtype.hpp"

namespace eaglesim::cuda {

double read_element(DType t, const unsigned char* base, std::size_t i);
void write_element(DType t, unsigned char* base, std::size_t i, double value);  // rounded to t

}  // namespace eaglesim::cuda
