#include "calibration/recorded_fit.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "calibration/model_fit.hpp"
#include "core/errors.hpp"
#include "core/median.hpp"
#include "topology/calibration_keys.hpp"
#include "trace/serving_engine.hpp"

namespace eaglesim {

RecordedFit fit_recorded_ops(const std::vector<Trace>& traces, const std::vector<std::string>& files, const GpuSpec& gpu) {
  // key -> shape -> recorded us of every op of that shape (36 layers of one step are one shape)
  std::map<std::string, std::map<std::string, std::vector<double>>> by_shape;
  std::map<std::string, std::map<std::string, FittedFeatures>> features;
  RecordedFit out;
  for (std::size_t t = 0; t < traces.size(); ++t) {
    if (traces[t].meta.source != "imported")
      throw InputError::at(files[t], "meta.source",
                           fmt::format("expected an imported trace (eaglesim import kineto), got {}", traces[t].meta.source));
    // The torch reference step's attention is cuDNN's persistent SDPA kernel: its own key and
    // launch geometry (the other engines' recorded kernels keep the plain form).
    const bool persistent_attention = traces[t].meta.engine == ServingEngine::torch;
    int used = 0;
    for (const Step& step : traces[t].steps)
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        const Op& op = step.ops[i];
        if (!op.us || !(*op.us > 0) || op.kind == OpKind::other || op.is_comm()) continue;
        // An RMSNorm after a 0-us residual add of its rows was recorded as the fused kernel.
        const bool fused = op.kind == OpKind::rmsnorm && i > 0 && step.ops[i - 1].kind == OpKind::residual_add &&
                           step.ops[i - 1].us && *step.ops[i - 1].us == 0.0;
        const bool persistent = persistent_attention && op.kind == OpKind::attention && op.variant == AttentionVariant::gqa;
        const std::string key = persistent ? std::string(kPersistentAttentionKey) : fitted_model_key(op, gpu.sms, fused);
        if (key.empty()) continue;
        const std::string shape = op.shape_string() + fmt::format(" {}{}", to_string(op.kind), fused ? " fused" : "");
        by_shape[key][shape].push_back(*op.us);
        features[key][shape] = persistent ? persistent_attention_features(op, gpu.sms) : fitted_features(op, gpu.sms, fused);
        ++used;
      }
    if (used == 0)
      throw InputError::at(files[t], "steps",
                           "expected recorded ops with a measured us and a kind the fitted models cover (gemm, "
                           "attention, norms, elementwise; import with --config or --like to type them)");
    out.ops += used;
  }
  const FitBounds bounds = fit_bounds(gpu);
  for (const auto& [key, shapes] : by_shape) {
    std::vector<FitSample> samples;
    for (const auto& [shape, us] : shapes) samples.push_back({features[key][shape], median(us)});
    out.points[key] = static_cast<int>(samples.size());
    if (samples.size() < kMinFitPoints) continue;
    out.fitted[key] = fit_model(samples, fitted_model_has_flops(key), bounds, false, key == kPersistentAttentionKey);
  }
  return out;
}

Topology topology_from_recorded_fit(const Topology& base, const RecordedFit& fit, const std::string& source) {
  Topology t = base;
  t.calibration = Calibration{};
  t.calibration.fitted = fit.fitted;
  for (auto& [key, model] : t.calibration.fitted) model.source = source;
  t.calibration.notes = fmt::format("fitted: {} ({} recorded ops)", source, fit.ops);
  return t;
}

}  // namespace eaglesim
