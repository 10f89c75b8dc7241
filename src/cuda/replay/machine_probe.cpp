#include "cuda/replay/machine_probe.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

namespace {

// CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED of `device`, without linking the driver library: the
// runtime hands out the driver's entry points. False where the driver does not have it.
bool multicast_supported(int device) {
  using GetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || !fn) {
    (void)cudaGetLastError();
    return false;
  }
  int value = 0;
  if (reinterpret_cast<GetAttribute>(fn)(&value, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, device) != CUDA_SUCCESS)
    return false;
  return value != 0;
}

}  // namespace

MachineFacts probe_machine(const std::vector<int>& devices) {
  MachineFacts m;
  m.gpu_count = static_cast<int>(devices.size());
  m.gpus_per_node = m.gpu_count;  // one machine: every GPU it drives is local
  if (devices.empty()) return m;
  cudaDeviceProp prop{};
  EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, devices[0]));
  m.gpu_name = prop.name;
  m.capability = {prop.major, prop.minor};
  m.p2p = true;
  m.full_nvlink = devices.size() > 1;
  for (int a : devices)
    for (int b : devices) {
      if (a == b) continue;
      int access = 0, atomics = 0;
      EAGLESIM_CUDA_CHECK(cudaDeviceCanAccessPeer(&access, a, b));
      if (access) EAGLESIM_CUDA_CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b));
      m.p2p = m.p2p && access;
      m.full_nvlink = m.full_nvlink && access && atomics;
    }
  m.multicast = true;
  for (int d : devices) m.multicast = m.multicast && multicast_supported(d);
  m.source = fmt::format("this machine ({} x {}, probed)", m.gpu_count, m.gpu_name);
  return m;
}

}  // namespace eaglesim::cuda
