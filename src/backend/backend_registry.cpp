#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/cuda_part_loader.hpp"
#include "core/errors.hpp"
#include "backend/backend.hpp"

namespace eaglesim {

namespace {
std::map<std::string, BackendFactory>& registry() {
  static std::map<std::string, BackendFactory> r;
  return r;
}
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

void register_backend(const std::string& name, BackendFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[name] = std::move(factory);
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  auto find = [&]() -> BackendFactory {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(name);
    return it == registry().end() ? BackendFactory{} : it->second;
  };
  if (BackendFactory f = find()) return f();
  if (name == "cuda") {
    // The CUDA part registers the backend when its module loads (core/cuda_part_loader.hpp).
    const CudaPartLoad& part = load_cuda_part();
    if (BackendFactory f = find()) return f();
    throw DeviceError(setting_name(Setting::backend) + " cuda: " +
                      (part.why.empty() ? "the CUDA part did not register a backend" : part.why));
  }
  std::lock_guard<std::mutex> lock(registry_mutex());
  // Always name the cuda backend: in a build without it the user should still learn it exists.
  std::vector<std::string> names{"sim", "cuda"};
  for (const auto& [n, f] : registry())
    if (n != "sim" && n != "cuda") names.push_back(n);
  throw SettingError(Setting::backend, fmt::format("unknown backend '{}' (known: {})", name, fmt::join(names, ", ")));
}

}  // namespace eaglesim
