#include "cuda/measure/device_ceilings.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "cuda/runtime/device_guard.hpp"
#include "cuda/ops/lt_gemm.hpp"
#include "cuda/runtime/stream.hpp"
#include "cuda/runtime/unique_handle.hpp"

namespace eaglesim::cuda {

namespace {

constexpr std::size_t kReadBytes = std::size_t{2} << 30;  // 2 GiB: ~40x an H200's L2
constexpr std::int64_t kGemmDim = 8192;
constexpr std::size_t kGemmWorkspaceBytes = std::size_t{32} << 20;  // cuBLASLt's advice for Hopper
constexpr int kRepeats = 5;

// Every thread reads 16 bytes per load, four loads in flight per iteration. The XOR of what was
// read is stored only if it equals a value random data will not produce, so the loads cannot be
// dropped, and the read stays a pure read.
__global__ void stream_read(const uint4* __restrict__ in, std::size_t n, unsigned* out) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = in[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u) *out = acc;
}

// The fastest of kRepeats runs of `work` after one untimed run, in ms.
template <typename Work>
float fastest_ms(cudaStream_t stream, Work&& work) {
  Event start, stop;
  work();
  float best = 0;
  for (int r = 0; r < kRepeats; ++r) {
    EAGLESIM_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    work();
    EAGLESIM_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    EAGLESIM_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    const float ms = elapsed_ms(start.get(), stop.get());
    best = r == 0 ? ms : std::min(best, ms);
  }
  return best;
}

double read_gbps(int device, cudaStream_t stream) {
  DeviceBuffer in(kReadBytes), out(sizeof(unsigned));
  EAGLESIM_CUDA_CHECK(cudaMemsetAsync(in.get(), 0x5a, kReadBytes, stream));
  int sms = 0;
  EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int threads = 256;
  const int blocks = sms * 8;  // 2048 resident threads per SM on every GPU since Volta
  const std::size_t n = kReadBytes / sizeof(uint4);
  const float ms = fastest_ms(stream, [&] {
    stream_read<<<blocks, threads, 0, stream>>>(in.as<const uint4>(), n, out.as<unsigned>());
    EAGLESIM_CUDA_CHECK_LAUNCH();
  });
  return static_cast<double>(kReadBytes) / (ms * 1e6);  // B/ms -> GB/s
}

using LtHandle = UniqueHandle<cublasLtHandle_t, cublasLtDestroy>;

double bf16_tflops(cudaStream_t stream) {
  LtHandle lt;
  EAGLESIM_CUBLAS_CHECK(cublasLtCreate(lt.out()));
  const std::size_t matrix = static_cast<std::size_t>(kGemmDim) * kGemmDim * 2;
  DeviceBuffer w(matrix), x(matrix), y(matrix), workspace(kGemmWorkspaceBytes);
  // Small non-zero values: a GEMM of zeros draws less power and would clock higher than a real one.
  EAGLESIM_CUDA_CHECK(cudaMemsetAsync(w.get(), 0x3c, matrix, stream));
  EAGLESIM_CUDA_CHECK(cudaMemsetAsync(x.get(), 0x3c, matrix, stream));
  const LtGemm gemm(lt.get(), nullptr, kGemmDim, kGemmDim, kGemmDim, DType::bf16, kGemmWorkspaceBytes);
  const float ms = fastest_ms(stream, [&] { gemm.run(w.get(), x.get(), y.get(), workspace.get(), stream); });
  const double flops = 2.0 * kGemmDim * kGemmDim * kGemmDim;
  return flops / (ms * 1e9);  // FLOP/ms -> TFLOP/s
}

}  // namespace

std::optional<DeviceCeilings> device_ceilings(int device) {
  static std::mutex mutex;
  static std::map<int, DeviceCeilings> measured;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto it = measured.find(device); it != measured.end()) return it->second;

  DeviceGuard guard(device);
  std::size_t free = 0, total = 0;
  EAGLESIM_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const std::size_t needed = kReadBytes + 3 * static_cast<std::size_t>(kGemmDim) * kGemmDim * 2 + kGemmWorkspaceBytes;
  if (free < needed + (std::size_t{256} << 20)) return std::nullopt;

  cudaDeviceProp prop{};
  EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceCeilings c;
  c.device = prop.name;
  {
    const Stream stream;
    c.read_gbps = read_gbps(device, stream.get());
    c.bf16_tflops = bf16_tflops(stream.get());
  }
  measured.emplace(device, c);
  return c;
}

}  // namespace eaglesim::cuda
