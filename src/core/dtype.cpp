#include "core/dtype.hpp"

#include <stdexcept>

namespace eaglesim {

const char* to_string(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::fp8: return "fp8";
    case DType::int4: return "int4";
  }
  return "?";
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names{"bf16", "fp16", "fp32", "fp8", "int4"};
  return names;
}

bool parse_dtype(const std::string& name, DType& out) {
  static const DType all[] = {DType::bf16, DType::fp16, DType::fp32, DType::fp8, DType::int4};
  for (DType t : all)
    if (name == to_string(t)) { out = t; return true; }
  return false;
}

double bytes_per_element(DType t) {
  switch (t) {
    case DType::bf16: case DType::fp16: return 2.0;
    case DType::fp32: return 4.0;
    case DType::fp8: return 1.0;
    case DType::int4: return 0.5;
  }
  return 2.0;
}

std::size_t element_bytes(DType t) {
  if (t == DType::int4) throw std::logic_error("element_bytes: int4 packs two elements per byte");
  return static_cast<std::size_t>(bytes_per_element(t));
}

}  // namespace eaglesim
