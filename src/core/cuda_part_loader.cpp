#include "core/cuda_part_loader.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <sys/stat.h>
#include <vector>

namespace eaglesim {

namespace {

constexpr const char* kModuleName = "libeaglesim-cuda.so";
// The one symbol the module exports for us (src/cuda/register.cpp).
constexpr const char* kEntryPoint = "eaglesim_register_cuda_part";

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string executable_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  std::string exe(buf, static_cast<std::size_t>(n));
  auto slash = exe.rfind('/');
  return slash == std::string::npos ? std::string(".") : exe.substr(0, slash);
}

CudaPartLoad open_module() {
  CudaPartLoad r;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("EAGLESIM_CUDA_PART"); env && *env) {
    r.path = env;
    if (!is_file(r.path)) {
      r.why = "EAGLESIM_CUDA_PART=" + r.path + ": no such file (expected the path of " + kModuleName + ")";
      return r;
    }
    candidates.push_back(r.path);
  } else {
    const std::string dir = executable_dir();
    for (const std::string& c : {dir + "/" + kModuleName, dir + "/../lib/eaglesim/" + kModuleName})
      if (is_file(c)) candidates.push_back(c);
    if (candidates.empty()) {
      r.path = dir + "/" + kModuleName;
      r.why = "this eaglesim has no CUDA part (no " + std::string(kModuleName) + " in " + dir +
              " or " + dir + "/../lib/eaglesim; configure with -DEAGLESIM_CUDA=ON on a machine with the CUDA "
              "toolkit and NCCL)";
      return r;
    }
  }
  r.path = candidates.front();
  // RTLD_GLOBAL is not needed: the module resolves the host library's symbols from the executable,
  // which exports them (the eaglesim target's ENABLE_EXPORTS).
  void* handle = ::dlopen(r.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = ::dlerror();
    r.why = "the CUDA part " + r.path + " could not be loaded (" + std::string(err ? err : "unknown error") +
            "); the CUDA runtime, cuBLAS and NCCL libraries must be installed for GPU commands";
    return r;
  }
  using Entry = void (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, kEntryPoint));
  if (!entry) {
    r.why = "the CUDA part " + r.path + " has no " + std::string(kEntryPoint) + " (not an eaglesim CUDA module)";
    return r;
  }
  entry();
  r.loaded = true;
  return r;
}

}  // namespace

const CudaPartLoad& load_cuda_part() {
  static std::once_flag once;
  static CudaPartLoad result;
  std::call_once(once, [] { result = open_module(); });
  return result;
}

}  // namespace eaglesim
