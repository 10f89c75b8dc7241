#pragma once
// bf16 on the host, bit for bit as the device converts (round to nearest even): for the GPU
// tests' inputs, drawn on the host, and their CPU references.
#include <cstdint>
#include <cstring>

namespace eaglesim::test {

inline std::uint16_t to_bf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline float from_bf(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace eaglesim::test
