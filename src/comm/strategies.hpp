#pragma once
// Factories of the built-in strategies (one file each); the registry owns the instances.
#include <memory>

#include "comm/communicator.hpp"

namespace eaglesim {

std::unique_ptr<Communicator> make_nccl_communicator();
std::unique_ptr<Communicator> make_oneshot_communicator();       // the pull kernel
std::unique_ptr<Communicator> make_oneshot_push_communicator();  // the push kernel
std::unique_ptr<Communicator> make_twoshot_communicator();
std::unique_ptr<Communicator> make_fused_communicator();
std::unique_ptr<Communicator> make_quant_communicator();
std::unique_ptr<Communicator> make_ideal_communicator();
std::unique_ptr<Communicator> make_auto_communicator();
std::unique_ptr<Communicator> make_sglang_communicator();
std::unique_ptr<Communicator> make_vllm_communicator();

}  // namespace eaglesim
