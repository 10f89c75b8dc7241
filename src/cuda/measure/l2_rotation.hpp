#pragma once
// How many copies of an op a calibration chain rotates over so that nothing a copy reads is still
// in L2 when that copy runs again, as in a real step where every layer reads its own weights and
// KV cache. Shared by the compute chains (calibrate_compute.cpp) and the allreduce context chains
// (calibrate_comm.cpp).
#include "trace/op.hpp"

namespace eaglesim::cuda {

// Rotating copies together span this many L2 caches.
constexpr double kL2Multiple = 4.0;

// Bytes one copy of an op streams that a cache could keep (weights, KV); 0: nothing worth rotating.
double streamed_bytes(const Op& op);

// Copies whose streamed bytes together span kL2Multiple L2 caches, within [min_copies,
// max_copies]; 1 for an op that streams nothing.
int rotation_copies(const Op& op, double l2_bytes, int min_copies, int max_copies);

}  // namespace eaglesim::cuda
