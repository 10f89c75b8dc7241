#pragma once
// The per-kind cost models fitted to recorded steps instead of measured chains: the ops of
// imported traces (eaglesim import kineto, their measured us, kinds and shapes from --config or
// --like) grouped by fitted key, one point per distinct shape (the median of its recorded us), and
// each key with enough points fitted in the plain form of cost/fitted_model.hpp (fixed + max(bytes
// / BW, FLOPs / F)): the recorded kernels are the engine's, whose launch grid the replay's planner
// does not describe, so the attention models get no geometry terms — except the torch reference
// step's (meta.engine torch), whose attention kernel's grid is known (cuDNN's persistent SDPA
// kernel, cost/attention_geometry.hpp): its key kPersistentAttentionKey gets the geometry form
// with that grid's waves and per-step terms. `calibrate
// --from-recordings` writes them into a topology: the simulator then prices that engine's
// kernels on that GPU.
#include <map>
#include <string>
#include <vector>

#include "cost/fitted_model.hpp"
#include "topology/topology.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct RecordedFit {
  std::map<std::string, FittedModel> fitted;   // keys with at least kMinFitPoints distinct shapes
  std::map<std::string, int> points;           // distinct shapes per key, fitted or not
  int ops = 0;                                 // recorded ops read (with us and a fitted key)
};

// `files` parallel to `traces`, for messages. Throws InputError naming the file when a trace is not
// an imported one or holds no op with a measured us and a fitted key.
RecordedFit fit_recorded_ops(const std::vector<Trace>& traces, const std::vector<std::string>& files, const GpuSpec& gpu);

// `base` with its calibration replaced by the fit (tables, transitions and allreduce figures of
// the base are not the recorded engine's and are dropped); `source` goes into the fits' source
// and the calibration's notes.
Topology topology_from_recorded_fit(const Topology& base, const RecordedFit& fit, const std::string& source);

}  // namespace eaglesim
