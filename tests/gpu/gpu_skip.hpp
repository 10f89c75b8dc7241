#pragma once
// Whether a CUDA GPU is visible, and the skip every GPU test starts with, so that the suite
// passes cleanly on a machine without one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

namespace eaglesim::test {

inline bool has_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

}  // namespace eaglesim::test

#define SKIP_WITHOUT_GPU()                                             \
  do {                                                                 \
    if (!::eaglesim::test::has_gpu()) GTEST_SKIP() << "needs a CUDA GPU"; \
  } while (0)
