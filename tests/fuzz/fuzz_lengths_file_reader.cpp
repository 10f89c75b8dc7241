// libFuzzer target: lengths_file_reader (see fuzz_entry_points.hpp for what it checks). Run: tools/fuzz.sh
#include <cstddef>
#include <cstdint>

#include "fuzz_entry_points.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)eaglesim::fuzz::lengths_file_reader(data, size);
  return 0;
}
