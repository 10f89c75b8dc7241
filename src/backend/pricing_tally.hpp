#pragma once
// What pricing a step counted on the way (where compute times came from, what the calibration
// tables did not cover, which ops fused, which transitions and in-context allreduces applied),
// and the notes a step plan reports those counts in.
#include <string>
#include <vector>

#include "cost/compute_model.hpp"

namespace eaglesim {

struct PricingTally {
  int measured = 0;           // compute ops priced by a measured time
  int model = 0;              // compute ops priced by the cost model (a fused add+norm kernel: 2)
  int fallback = 0;           // ops of an imported trace priced by the cost model, having no measured time
  int extrapolated = 0;       // compute ops priced outside the calibration tables
  int untabled = 0;           // compute ops no calibration table covers (calibrated topology only)
  int comm_extrapolated = 0;  // allreduce calls outside the calibration table
  int comm_untabled = 0;      // allreduce calls no calibration table covers (calibrated topology only)
  std::string untabled_models;  // the strategies those ran as (an engine strategy runs several)
  int in_context = 0;         // allreduces priced by their calibration in context
  int transitions = 0;        // compute ops a kernel transition was added to
  double transition_us = 0;   // the transitions added, summed in step order
  int fused = 0;              // allreduces that absorbed the ops after them
  int absorbed = 0;           // the ops they absorbed
  int add_norm = 0;           // residual_add + rmsnorm pairs run as one kernel
  int unfused = 0;            // allreduces of an always-fusing strategy with no rmsnorm to absorb

  // A compute op (`ops` of them for a fused kernel) priced by the cost model as `c`.
  // `calibrated_topo`: the topology has calibration tables; `fallback_op`: an imported trace's op
  // the cost model stood in for.
  void count_modelled(const OpCost& c, int ops, bool calibrated_topo, bool fallback_op);
  // An allreduce call no calibration table covers, run as `strategy`.
  void count_untabled_comm(const std::string& strategy);
  void count_transition(double us);

  // Appends the notes the counts call for to `notes`, each led by `step`. `ranks`: the ranks the
  // allreduces ran on.
  void append_notes(const std::string& step, int ranks, std::vector<std::string>& notes) const;
};

}  // namespace eaglesim
