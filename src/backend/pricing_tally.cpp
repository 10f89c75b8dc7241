#include "backend/pricing_tally.hpp"

#include <fmt/format.h>

#include "core/setting.hpp"

namespace eaglesim {

namespace {

// A note and the count that calls for it: written, after "STEP: ", when the count is above 0
// (and `also` is too, where one is named). The text names the values append_notes passes: n (the
// count), s (the plural ending for n), model, absorbed, models, ranks and transition_us.
struct TallyNote {
  int PricingTally::*count;
  const char* text;
  int PricingTally::*also = nullptr;
};

// In the order the notes appear.
const TallyNote kTallyNotes[] = {
    {&PricingTally::measured, "{n} compute ops from measured times, {model} from the cost model", &PricingTally::model},
    {&PricingTally::fallback, "{n} ops of the imported trace had no measured time: cost model used"},
    {&PricingTally::extrapolated, "{n} op shapes outside the calibration tables: cost model used"},
    {&PricingTally::untabled, "{n} ops have no calibration table for their kind or shape: cost model used"},
    {&PricingTally::comm_extrapolated, "{n} allreduce sizes outside the calibration table: cost model used"},
    {&PricingTally::comm_untabled,
     "{n} allreduce sizes have no calibration table for {models} on {ranks} ranks: cost model used"},
    {&PricingTally::in_context, "{n} allreduce{s} priced as measured between the same two ops (calibration in context)"},
    {&PricingTally::transitions, "kernel transitions from the calibration added to {n} ops ({transition_us:+.1f} us in all)"},
    {&PricingTally::fused, "{n} allreduce{s} fused with the {absorbed} residual_add/rmsnorm ops after them"},
    {&PricingTally::add_norm,
     "{n} residual_add + rmsnorm pair{s} run as one fused kernel each (reported as rmsnorm; {unfused_flag} runs "
     "them as two)"},
    {&PricingTally::unfused, "{n} allreduce{s} not followed by an rmsnorm: run unfused"},
};

}  // namespace

void PricingTally::count_modelled(const OpCost& c, int ops, bool calibrated_topo, bool fallback_op) {
  if (c.measured) measured += ops;
  else model += ops;
  if (c.extrapolated) ++extrapolated;
  else if (!c.calibrated && !c.measured && calibrated_topo) ++untabled;
  if (fallback_op) fallback += ops;
}

void PricingTally::count_untabled_comm(const std::string& strategy) {
  ++comm_untabled;
  if (untabled_models.find(strategy) == std::string::npos)
    untabled_models += (untabled_models.empty() ? "" : ", ") + strategy;
}

void PricingTally::count_transition(double us) {
  transition_us += us;
  ++transitions;
}

void PricingTally::append_notes(const std::string& step, int ranks, std::vector<std::string>& notes) const {
  for (const TallyNote& note : kTallyNotes) {
    const int n = this->*note.count;
    if (n <= 0 || (note.also && this->*note.also <= 0)) continue;
    notes.push_back(step + ": " +
                    fmt::format(fmt::runtime(note.text), fmt::arg("n", n), fmt::arg("s", n == 1 ? "" : "s"),
                                fmt::arg("model", model), fmt::arg("absorbed", absorbed),
                                fmt::arg("models", untabled_models), fmt::arg("ranks", ranks),
                                fmt::arg("transition_us", transition_us),
                                fmt::arg("unfused_flag", setting_name(Setting::unfused_add_norm))));
  }
}

}  // namespace eaglesim
