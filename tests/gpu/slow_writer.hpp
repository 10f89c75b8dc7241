#pragma once
// A test kernel that stands for "the previous kernel of the step": it lets the stream's next
// kernel launch at once (griddepcontrol.launch_dependents), waits, and only then writes its
// output (byte copies). A kernel launched after it with programmatic stream serialization that
// read this output before its griddepcontrol.wait would see the old contents.
#include <cstddef>
#include <vector>

struct CUstream_st;

namespace eaglesim::test {

struct CopySegment {
  void* dst = nullptr;
  const void* src = nullptr;
  std::size_t bytes = 0;
};

// At most 16 segments. Returns a cudaError_t value (0 = cudaSuccess).
int launch_slow_writer(const std::vector<CopySegment>& segments, double delay_us, CUstream_st* stream);

}  // namespace eaglesim::test
