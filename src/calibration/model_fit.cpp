#include "calibration/model_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/nelder_mead.hpp"
#include "topology/calibration_keys.hpp"

namespace eaglesim {

namespace {

// Within 10 % of the measurement an error counts squared, beyond it linearly.
constexpr double kHuberDelta = 0.1;
constexpr double kMinFixedUs = 1e-3;
constexpr double kMaxFixedUs = 1e3;
constexpr double kMinRate = 1e-2;
constexpr double kPeakHeadroom = 1.5;

double huber(double r) {
  const double a = std::fabs(r);
  return a <= kHuberDelta ? r * r : 2 * kHuberDelta * a - kHuberDelta * kHuberDelta;
}

// The parameters in log space: fixed, bandwidth, then the FLOP rate (has_flops), then the
// geometry terms (has_geometry): per wave, per block bandwidth, combine.
struct FitShape {
  bool flops = false, geometry = false;
};

FittedModel from_log(const std::vector<double>& x, FitShape shape, const FitBounds& b) {
  FittedModel f;
  f.fixed_us = std::clamp(std::exp(x[0]), kMinFixedUs, kMaxFixedUs);
  f.bw_gbs = std::clamp(std::exp(x[1]), kMinRate, b.max_bw_gbs);
  std::size_t i = 2;
  f.tflops = shape.flops ? std::clamp(std::exp(x[i++]), kMinRate, b.max_tflops) : 0.0;
  if (shape.geometry) {
    f.wave_us = std::clamp(std::exp(x[i++]), kMinFixedUs, kMaxFixedUs);
    f.block_bw_gbs = std::clamp(std::exp(x[i++]), kMinRate, b.max_bw_gbs);
    f.combine_us = std::clamp(std::exp(x[i++]), kMinFixedUs, kMaxFixedUs);
  }
  return f;
}

}  // namespace

FittedModel fit_model(const std::vector<FitSample>& samples, bool has_flops, const FitBounds& bounds, bool has_geometry) {
  const FitShape shape{has_flops || has_geometry, has_geometry};
  std::vector<FitSample> s;
  for (const FitSample& p : samples)
    if (p.us > 0 && std::isfinite(p.us) && p.features.bytes >= 0) s.push_back(p);
  if (s.size() < 3) throw std::invalid_argument("fit_model: fewer than 3 usable samples");
  // Start: the fixed cost a little under the fastest point; the bandwidth and rate that the
  // largest points would reach if they were each all memory or all compute.
  // With geometry: a tenth of the fixed cost per wave and a third for the combine; the block
  // bandwidth that the point whose busiest CTA streams the most would need.
  double fastest = HUGE_VAL, bw = 0, tf = 0, block_bw = 0;
  for (const FitSample& p : s) fastest = std::min(fastest, p.us);
  const double fixed0 = std::max(kMinFixedUs, 0.7 * fastest);
  for (const FitSample& p : s) {
    const double t = std::max(p.us - fixed0, 0.05 * p.us);
    bw = std::max(bw, p.features.bytes / (t * 1e3));
    tf = std::max(tf, p.features.flops / (t * 1e6));
    block_bw = std::max(block_bw, p.features.crit_bytes / (t * 1e3));
  }
  std::vector<double> start{std::log(fixed0), std::log(std::clamp(bw, kMinRate, bounds.max_bw_gbs))};
  if (shape.flops) start.push_back(std::log(std::clamp(tf, kMinRate, bounds.max_tflops)));
  if (shape.geometry) {
    start.push_back(std::log(std::max(kMinFixedUs, 0.1 * fixed0)));
    start.push_back(std::log(std::clamp(block_bw, kMinRate, bounds.max_bw_gbs)));
    start.push_back(std::log(std::max(kMinFixedUs, 0.3 * fixed0)));
  }
  auto loss = [&](const std::vector<double>& x) {
    const FittedModel f = from_log(x, shape, bounds);
    double sum = 0;
    for (const FitSample& p : s) sum += huber(std::log(fitted_us(f, p.features) / p.us));
    return sum / static_cast<double>(s.size());
  };
  // Several starts (the rates' starting guesses scaled down): the loss has flat regions where a
  // term never wins, and a start inside one stays there.
  NelderMeadResult best;
  best.value = HUGE_VAL;
  const int evaluations = shape.geometry ? 20000 : 6000;
  for (double shrink : {0.0, std::log(0.5), std::log(0.2)}) {
    std::vector<double> x0 = start;
    for (std::size_t i = 1; i < x0.size(); ++i) x0[i] += shrink;
    NelderMeadResult r = nelder_mead(loss, x0, 0.5, 1e-14, evaluations);
    if (r.value < best.value) best = r;
  }
  FittedModel f = from_log(best.x, shape, bounds);
  f.points = static_cast<int>(s.size());
  double sq = 0;
  for (const FitSample& p : s) {
    const double r = fitted_us(f, p.features) / p.us - 1.0;
    sq += r * r;
    f.max_residual = std::max(f.max_residual, std::fabs(r));
  }
  f.rms_residual = std::sqrt(sq / static_cast<double>(s.size()));
  return f;
}

std::map<std::string, std::vector<FitSample>> fit_samples(const CalibrationRequest& q, const CalibrationMeasurements& m,
                                                          int sms) {
  if (m.compute_us.size() != q.compute.size() || (!m.add_rmsnorm_us.empty() && m.add_rmsnorm_us.size() != q.add_rmsnorm.size()))
    throw std::invalid_argument("fit_samples: measurements do not match the request");
  std::map<std::string, std::vector<FitSample>> out;
  auto add = [&](const Op& op, double us, bool fused) {
    if (!(us > 0) || !std::isfinite(us)) return;
    const std::string key = fitted_model_key(op, fused);
    if (key.empty()) return;
    out[key].push_back({fitted_features(op, sms, fused), us});
  };
  for (std::size_t i = 0; i < q.compute.size(); ++i) add(q.compute[i], m.compute_us[i], false);
  for (std::size_t i = 0; i < m.add_rmsnorm_us.size(); ++i) {
    Op norm = q.add_rmsnorm[i];
    norm.kind = OpKind::rmsnorm;  // the pair's norm prices the fused kernel
    add(norm, m.add_rmsnorm_us[i], true);
  }
  return out;
}

std::map<std::string, FittedModel> fit_compute_models(const CalibrationRequest& q, const CalibrationMeasurements& m,
                                                      const GpuSpec& gpu, bool attention_geometry) {
  FitBounds b;
  b.max_bw_gbs = kPeakHeadroom * gpu.mem_bw_gbs;
  b.max_tflops = kPeakHeadroom * std::max(gpu.bf16_tflops, gpu.fp8_tflops);
  std::map<std::string, FittedModel> out;
  for (const auto& [key, samples] : fit_samples(q, m, gpu.sms))
    if (samples.size() >= kMinFitPoints) out[key] = fit_model(samples, fitted_model_has_flops(key), b,
                           attention_geometry && fitted_model_has_geometry(key));
  return out;
}

}  // namespace eaglesim
