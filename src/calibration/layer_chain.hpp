#pragma once
// The chain `calibrate` replays to measure what a decoder layer's allreduces add to it
// (AllreduceLayerCase): `copies` copies of the layer, then the layer's tail (the next layer's head
// ops that the last copy's allreduce absorbs under a fused strategy; in between copies the next
// copy's head plays that part), and the same ops without the allreduces and what they absorb.
// Host code, so the index arithmetic is unit-tested without a GPU.
#include <cstddef>
#include <vector>

#include "calibration/calibration_request.hpp"
#include "trace/op.hpp"

namespace eaglesim {

struct LayerChain {
  std::vector<Op> ops;                // copies x layer, then the tail
  std::vector<std::size_t> with;      // every op, in order
  std::vector<std::size_t> without;   // the baseline: `with` minus every copy's dropped ops
  std::vector<std::size_t> absorbed;  // dropped ops that are not allreduces (a fused kernel must absorb them)
};

// `copies` >= 1. Throws std::invalid_argument when a dropped index is outside the layer + tail.
LayerChain layer_chain(const AllreduceLayerCase& layer, int copies);

// `chain` with its copies run twice over (copies 0..C-1, again 0..C-1, then the tail; `ops`
// unchanged, the index lists repeated): the longer of two chain lengths whose difference
// calibrate takes, so that what a chain pays once (the graph's start, the ranks lining up at its
// first allreduce) cancels. `core_ops` = copies x layer size: indices below it are the copies.
LayerChain repeated(const LayerChain& chain, std::size_t core_ops);

// The weight bytes of ops[0, n) (all of them by default): what one copy of a layer streams.
double layer_weight_bytes(const std::vector<Op>& ops, std::size_t n = static_cast<std::size_t>(-1));

// Copies of a layer in its chain: at least 8 (one copy's weight placement is not the step's, and
// the differences sought are a few tenths of a µs per allreduce), and enough that the copies'
// weights rotate past an L2 of `l2_bytes` twice; at most 32.
int layer_chain_copies(double weight_bytes, double l2_bytes);
int layer_chain_copies(const AllreduceLayerCase& layer, double l2_bytes);  // the layer's weights, tail excluded

// Copies of a layer in a compute-layer chain (ComputeLayerCase), whose time is compared with its
// ops' own chains: enough that the chain streams at least 4 GiB of weights from as many
// allocations (the same GEMM runs slower from some allocations than from others, and over a few
// copies of a small layer that luck does not average out; docs/fidelity.md has the figures),
// at least layer_chain_copies, at most 64.
int compute_layer_chain_copies(double weight_bytes, double l2_bytes);

// Placements a compute-layer chain is timed over (its copies allocated anew each time while the
// earlier placements still hold theirs; the layer takes the median): 3 where three chains'
// weights, with room for their KV caches and activations, fit in half of `free_bytes`; fewer
// where they do not; at least 1.
int compute_layer_placements(double chain_weight_bytes, double free_bytes);

}  // namespace eaglesim
