#include "calibration/model_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/nelder_mead.hpp"
#include "core/nnls.hpp"
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

double fit_loss(const FittedModel& f, const std::vector<FitSample>& s) {
  double sum = 0;
  for (const FitSample& p : s) sum += huber(std::log(fitted_us(f, p.features) / p.us));
  return sum / static_cast<double>(s.size());
}

// The simplex over the parameters in log space (the plain form, and one candidate of the
// geometry form).
FittedModel simplex_fit(const std::vector<FitSample>& s, FitShape shape, const FitBounds& bounds) {
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
  auto loss = [&](const std::vector<double>& x) { return fit_loss(from_log(x, shape, bounds), s); };
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
  return from_log(best.x, shape, bounds);
}

// The geometry form is linear in its per-term costs (µs per wave, per byte, per FLOP, ...) once
// each point's binding term of the max is known: columns of the linear fit, in relative error
// (each row divided by the measured µs), every cost >= 0, the rates at most the bounds.
enum GeometryColumn { kFixed, kWave, kCombine, kCombineBytes, kBytes, kFlops, kCritBytes, kCritFlops, kCritSteps, kColumns };
enum class Binding { memory, compute, cta };

std::vector<double> geometry_row(const FittedFeatures& f, Binding b) {
  std::vector<double> row(kColumns, 0.0);
  row[kFixed] = 1;
  row[kWave] = f.waves;
  row[kCombine] = f.combine;
  row[kCombineBytes] = f.combine_bytes;
  if (b == Binding::memory) row[kBytes] = f.bytes;
  if (b == Binding::compute) row[kFlops] = f.flops;
  if (b == Binding::cta) row[kCritBytes] = f.crit_bytes, row[kCritFlops] = f.crit_flops, row[kCritSteps] = f.crit_steps;
  return row;
}

FittedModel geometry_model(const std::vector<double>& c, const FitBounds& b) {
  auto rate = [](double cost, double scale, double max) { return std::clamp(1.0 / (cost * scale), kMinRate, max); };
  FittedModel f;
  f.fixed_us = std::min(c[kFixed], kMaxFixedUs);
  f.wave_us = std::min(c[kWave], kMaxFixedUs);
  f.combine_us = std::min(c[kCombine], kMaxFixedUs);
  f.step_us = std::min(c[kCritSteps], kMaxFixedUs);
  f.combine_gbs = c[kCombineBytes] > 0 ? rate(c[kCombineBytes], 1e3, b.max_bw_gbs) : 0.0;
  f.bw_gbs = rate(c[kBytes], 1e3, b.max_bw_gbs);
  f.tflops = rate(c[kFlops], 1e6, b.max_tflops);
  f.block_bw_gbs = c[kCritBytes] > 0 ? rate(c[kCritBytes], 1e3, b.max_bw_gbs) : 0.0;
  f.block_tflops = c[kCritFlops] > 0 ? rate(c[kCritFlops], 1e6, b.max_tflops) : 0.0;
  return f;
}

Binding binding(const FittedModel& f, const FittedFeatures& x) {
  const double memory = x.bytes / (f.bw_gbs * 1e3), compute = x.flops / (f.tflops * 1e6);
  const double cta = x.crit_steps * f.step_us + (f.block_bw_gbs > 0 ? x.crit_bytes / (f.block_bw_gbs * 1e3) : 0.0) +
                     (f.block_tflops > 0 ? x.crit_flops / (f.block_tflops * 1e6) : 0.0);
  if (cta >= memory && cta >= compute) return Binding::cta;
  return memory >= compute ? Binding::memory : Binding::compute;
}

// From a first binding per point: the non-negative least squares of the relative error with
// Huber weights (a point beyond kHuberDelta weighs delta / |r|), the bindings read off the result,
// again, until they settle.
// `rebind` false keeps the first bindings (the grid-bound form: every point its busiest CTA's).
FittedModel geometry_fit_from(const std::vector<FitSample>& s, std::vector<Binding> bind, const FitBounds& b,
                              bool rebind = true) {
  // Lowest costs: the rates' bounds (bandwidth and FLOP rate are always in the max).
  std::vector<double> lowest(kColumns, 0.0);
  lowest[kBytes] = 1.0 / (b.max_bw_gbs * 1e3);
  lowest[kFlops] = 1.0 / (b.max_tflops * 1e6);
  std::vector<double> weight(s.size(), 1.0);
  FittedModel f;
  for (int round = 0; round < 40; ++round) {
    std::vector<std::vector<double>> a;
    std::vector<double> y;
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::vector<double> row = geometry_row(s[i].features, bind[i]);
      double target = 1.0;
      const double w = std::sqrt(weight[i]);
      for (std::size_t j = 0; j < row.size(); ++j) {
        row[j] /= s[i].us;
        target -= row[j] * lowest[j];
        row[j] *= w;
      }
      a.push_back(std::move(row));
      y.push_back(target * w);
    }
    std::vector<double> c = nnls(a, y);
    for (std::size_t j = 0; j < c.size(); ++j) c[j] += lowest[j];
    f = geometry_model(c, b);
    bool settled = true;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const double r = std::fabs(fitted_us(f, s[i].features) / s[i].us - 1.0);
      const double w = r <= kHuberDelta ? 1.0 : kHuberDelta / r;
      const Binding now = rebind ? binding(f, s[i].features) : bind[i];
      settled = settled && now == bind[i] && std::fabs(w - weight[i]) < 1e-3;
      bind[i] = now;
      weight[i] = w;
    }
    if (settled) break;
  }
  return f;
}

// The geometry form: the linear fit from three first bindings (every point bound by its busiest
// CTA, by bandwidth, or as the simplex's own fit binds it), and the simplex's fit itself; the
// lowest loss wins.
FittedModel geometry_fit(const std::vector<FitSample>& s, const FitBounds& b) {
  const FittedModel simplex = simplex_fit(s, FitShape{true, true}, b);
  std::vector<Binding> from_simplex;
  for (const FitSample& p : s) from_simplex.push_back(binding(simplex, p.features));
  FittedModel best = simplex;
  double best_loss = fit_loss(simplex, s);
  for (const std::vector<Binding>& start : {std::vector<Binding>(s.size(), Binding::cta),
                                            std::vector<Binding>(s.size(), Binding::memory), from_simplex}) {
    const FittedModel f = geometry_fit_from(s, start, b);
    const double loss = fit_loss(f, s);
    if (loss < best_loss) best = f, best_loss = loss;
  }
  return best;
}

// The grid-bound form: every point bound by its busiest CTA (fixed, per wave, per KV step, its
// bytes and tile FLOPs fitted); bandwidth and FLOP rate are the GPU's peaks, a floor the kernel
// reaches only when its CTAs together saturate the GPU.
FittedModel grid_bound_fit(const std::vector<FitSample>& s, const FitBounds& b) {
  FittedModel f = geometry_fit_from(s, std::vector<Binding>(s.size(), Binding::cta), b, false);
  f.bw_gbs = b.peak_bw_gbs;
  f.tflops = b.peak_tflops;
  return f;
}

}  // namespace

// The GPU's peaks (times kPeakHeadroom) bound the fitted rates.
FitBounds fit_bounds(const GpuSpec& gpu) {
  FitBounds b;
  b.peak_bw_gbs = gpu.mem_bw_gbs;
  b.peak_tflops = gpu.bf16_tflops;
  b.max_bw_gbs = kPeakHeadroom * gpu.mem_bw_gbs;
  b.max_tflops = kPeakHeadroom * std::max(gpu.bf16_tflops, gpu.fp8_tflops);
  return b;
}

FittedModel fit_model(const std::vector<FitSample>& samples, bool has_flops, const FitBounds& bounds, bool has_geometry,
                      bool grid_bound) {
  std::vector<FitSample> s;
  for (const FitSample& p : samples)
    if (p.us > 0 && std::isfinite(p.us) && p.features.bytes >= 0) s.push_back(p);
  if (s.size() < 3) throw std::invalid_argument("fit_model: fewer than 3 usable samples");
  FittedModel f = grid_bound     ? grid_bound_fit(s, bounds)
                  : has_geometry ? geometry_fit(s, bounds)
                                 : simplex_fit(s, FitShape{has_flops, false}, bounds);
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
    const std::string key = fitted_model_key(op, sms, fused);
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

std::map<std::string, std::vector<FitSample>> attention_table_samples(const Calibration& cal, int sms) {
  std::map<std::string, std::vector<FitSample>> out;
  for (const auto& [key, points] : cal.attention) {
    const std::size_t q = key.rfind(":q");
    if (!valid_attention_key(key) || q == std::string::npos) continue;
    Op op;
    op.kind = OpKind::attention;
    op.name = "table_attention";
    op.variant = key.rfind("mla:", 0) == 0 ? AttentionVariant::mla : AttentionVariant::gqa;
    long long f[4] = {0, 0, 0, 0};
    if (std::sscanf(key.c_str() + 4, "%lld:%lld:%lld:q%lld", &f[0], &f[1], &f[2], &f[3]) != 4) continue;
    op.heads = f[0];
    if (op.variant == AttentionVariant::mla) op.kv_lora_rank = f[1], op.rope_dim = f[2];
    else op.kv_heads = f[1], op.head_dim = f[2];
    op.q_tokens = f[3];
    for (const SizeCalPoint& p : points) {
      if (!(p.us > 0) || !std::isfinite(p.us) || p.size < op.q_tokens) continue;
      op.kv_len = p.size;
      out[fitted_model_key(op, sms)].push_back({fitted_features(op, sms), p.us});
    }
  }
  return out;
}

std::map<std::string, FittedModel> refit_attention_tables(const Calibration& cal, const GpuSpec& gpu) {
  std::map<std::string, FittedModel> out;
  for (const auto& [key, samples] : attention_table_samples(cal, gpu.sms))
    if (samples.size() >= kMinFitPoints) out[key] = fit_model(samples, true, fit_bounds(gpu), true);
  return out;
}

std::map<std::string, FittedModel> fit_compute_models(const CalibrationRequest& q, const CalibrationMeasurements& m,
                                                      const GpuSpec& gpu, bool attention_geometry) {
  const FitBounds b = fit_bounds(gpu);
  std::map<std::string, FittedModel> out;
  for (const auto& [key, samples] : fit_samples(q, m, gpu.sms))
    if (samples.size() >= kMinFitPoints) out[key] = fit_model(samples, fitted_model_has_flops(key), b,
                           attention_geometry && fitted_model_has_geometry(key));
  return out;
}

}  // namespace eaglesim
