// Runs the GPU test binary's verify-attention tests without a GPU: the handful of CUDA runtime
// calls tests/gpu/test_verify_attention.cpp makes, on host memory, with the three compiled
// entry points (upload, launch, reference) executed by the CPU emulator of
// tools/verify_attention_emulate.cpp. Stream capture records the launches; a graph replays them.
// This checks the test's own harness (layouts, strides, reference, comparisons) as well as the
// kernels; it is slow, so run the small tests:
//   g++ -std=c++17 -O2 -fno-strict-aliasing -DEAGLESIM_VA_EMULATE -DEAGLESIM_VA_EMULATE_NO_MAIN -Isrc -Ikernels \
//       -c tools/verify_attention_emulate.cpp -o /tmp/emu.o
//   g++ -std=c++17 -O2 -Isrc -I/usr/local/cuda/include tools/verify_attention_fake_cudart.cpp \
//       tests/gpu/test_verify_attention.cpp src/cost/verify_attention_plan.cpp src/cuda/ops/verify_attention_launch.cpp /tmp/emu.o -lgtest -lgtest_main \
//       -lpthread -o /tmp/va_tests_emulated
//   EAGLESIM_TEST_QUICK=1 /tmp/va_tests_emulated --gtest_filter='VerifyAttention*:-*MatchesDouble*:*LongRequests*'
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "cuda/ops/verify_attention_launch.hpp"

namespace eaglesim::va_emulator {
void add_global(const void* p, std::size_t n);
void remove_global(const void* p);
int launch(const cuda::VerifyAttentionParams& params, const cuda::VerifyAttentionPlan& plan, void* ws);
int reference(const cuda::VerifyAttentionParams& params, const cuda::VerifyAttentionShape& s);
}  // namespace eaglesim::va_emulator

namespace {
struct FakeStream {
  bool capturing = false;
  std::vector<std::function<int()>> captured;
};
struct FakeGraph {
  std::vector<std::function<int()>> ops;
};
FakeStream g_default;
FakeStream* stream_of(cudaStream_t s) { return s ? reinterpret_cast<FakeStream*>(s) : &g_default; }
cudaError_t to_error(int check) {
  return check == 0 ? cudaSuccess : check == 2 ? cudaErrorMisalignedAddress : cudaErrorInvalidValue;
}
// Runs now, or records into the capturing stream.
int run_or_capture(cudaStream_t s, std::function<int()> op) {
  FakeStream* fs = stream_of(s);
  if (fs->capturing) {
    fs->captured.push_back(std::move(op));
    return 0;
  }
  return op();
}
}  // namespace

extern "C" {
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t n) {
  const size_t bytes = (n + 255) / 256 * 256;
  *p = std::aligned_alloc(256, bytes ? bytes : 256);
  if (*p == nullptr) return cudaErrorMemoryAllocation;
  eaglesim::va_emulator::add_global(*p, bytes);
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (p) {
    eaglesim::va_emulator::remove_global(p);
    std::free(p);
  }
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind) {
  std::memcpy(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int v, size_t n) {
  std::memset(p, v, n);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated error"; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  *s = reinterpret_cast<cudaStream_t>(new FakeStream);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete reinterpret_cast<FakeStream*>(s);
  return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode) {
  stream_of(s)->capturing = true;
  stream_of(s)->captured.clear();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  auto* graph = new FakeGraph;
  graph->ops = std::move(stream_of(s)->captured);
  stream_of(s)->capturing = false;
  *g = reinterpret_cast<cudaGraph_t>(graph);
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  *exec = reinterpret_cast<cudaGraphExec_t>(new FakeGraph(*reinterpret_cast<FakeGraph*>(g)));
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  for (auto& op : reinterpret_cast<FakeGraph*>(exec)->ops)
    if (op() != 0) return cudaErrorLaunchFailure;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<FakeGraph*>(exec);
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete reinterpret_cast<FakeGraph*>(g);
  return cudaSuccess;
}
}  // extern "C"

namespace eaglesim::cuda {
int verify_attention_upload(const VerifyAttentionPlan& plan, void* workspace, CUstream_st*) {
  if (workspace == nullptr) return static_cast<int>(cudaErrorInvalidValue);
  std::memcpy(workspace, plan.metadata.data(), plan.metadata.size());
  return 0;
}
int verify_attention_launch(const VerifyAttentionParams& params, const VerifyAttentionPlan& plan, void* workspace,
                            CUstream_st* stream, const VerifyAttentionLaunchOptions&) {
  // Refusals are immediate, as in the CUDA build (resolve_verify_attention_params runs at launch).
  VerifyAttentionParams p = params;
  const VerifyAttentionCheck check = resolve_verify_attention_params(plan.shape, p);
  if (check != VerifyAttentionCheck::ok) return static_cast<int>(to_error(static_cast<int>(check)));
  const VerifyAttentionPlan* pl = &plan;
  return static_cast<int>(to_error(run_or_capture(stream, [=] { return va_emulator::launch(params, *pl, workspace); })));
}
int verify_attention_reference_launch(const VerifyAttentionParams& params, const VerifyAttentionShape& shape,
                                      CUstream_st* stream) {
  return static_cast<int>(to_error(run_or_capture(stream, [=] { return va_emulator::reference(params, shape); })));
}
}  // namespace eaglesim::cuda

#include "../tests/gpu/slow_writer.hpp"

namespace eaglesim::test {
// Launches here run to completion in stream order, so the writer's copies simply happen first
// (the emulator's wait_for_primary_grid has nothing to wait for).
int launch_slow_writer(const std::vector<CopySegment>& segments, double, CUstream_st* stream) {
  if (segments.size() > 16) return static_cast<int>(cudaErrorInvalidValue);
  return static_cast<int>(to_error(run_or_capture(stream, [segments] {
    for (const auto& s : segments) std::memcpy(s.dst, s.src, s.bytes);
    return 0;
  })));
}
}  // namespace eaglesim::test
