#include "cuda/shared_nccl.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace eaglesim::cuda {

namespace {

// The environment variables apply_nccl_options sets; NCCL reads them when it creates a
// communicator, so communicators made under other values are other entries.
std::string cache_key(const std::vector<int>& devices) {
  std::string key;
  for (int d : devices) key += std::to_string(d) + ",";
  for (const char* var : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}) {
    const char* v = std::getenv(var);
    key += std::string("|") + (v ? v : "");
  }
  return key;
}

struct Cache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<NcclComms>> comms;
};

// Never destroyed: communicators torn down by a static destructor at exit would race the CUDA
// runtime's own teardown; the process's exit frees them.
Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

}  // namespace

std::shared_ptr<NcclComms> shared_nccl_comms(const std::vector<int>& devices) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  std::shared_ptr<NcclComms>& slot = c.comms[cache_key(devices)];
  if (!slot) slot = std::make_shared<NcclComms>(devices);
  return slot;
}

void forget_shared_nccl_comms(const NcclComms* comms) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto it = c.comms.begin(); it != c.comms.end(); ++it)
    if (it->second.get() == comms) {
      c.comms.erase(it);
      return;
    }
}

}  // namespace eaglesim::cuda
