#pragma once
// Element types a trace can name. int4 is weight-only (packed two per byte, as in the
// Kimi-K2.5/K2.6 releases); activations and allreduces stay bf16 unless a strategy says otherwise.
#include <cstddef>
#include <string>
#include <vector>

namespace eaglesim {

enum class DType { bf16, fp16, fp32, fp8, int4 };

const char* to_string(DType t);
// Throws InputError-free: returns false on unknown names (callers build the message).
bool parse_dtype(const std::string& name, DType& out);
const std::vector<std::string>& dtype_names();
double bytes_per_element(DType t);  // int4 -> 0.5
// Bytes of one element in a buffer of a whole-byte type (bf16/fp16 2, fp32 4, fp8 1), for sizing
// and indexing device buffers; int4 (weights only, two per byte) throws std::logic_error.
std::size_t element_bytes(DType t);

}  // namespace eaglesim
