#pragma once
// Fits the per-kind cost models of cost/fitted_model.hpp to calibrate's measurements: for each
// fitted key, the parameters (fixed µs, achieved GB/s, achieved TFLOP/s) that minimise a robust
// loss of the relative error over the kind's measured points, and the residuals left.
// Relative, not absolute: a 3 µs norm and a 3 ms prefill GEMM count alike, as they do in a
// step's error. Robust (Huber on log(fit / measured), quadratic within 10 %): one odd point (a
// shape cuBLAS handles with another algorithm) does not tilt the fit for all the others.
#include <map>
#include <string>
#include <vector>

#include "calibration/calibration_request.hpp"
#include "cost/fitted_model.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

struct FitSample {
  FittedFeatures features;
  double us = 0;  // measured
};

// Bounds of the fitted rates (the fit stays inside; a kind with no compute-bound point leaves its
// FLOP rate at whatever keeps those points memory-bound, so the cap keeps it physical).
struct FitBounds {
  double max_bw_gbs = 1e5;
  double max_tflops = 1e5;
  // The GPU's datasheet rates: the grid-bound form's memory and compute floor.
  double peak_bw_gbs = 1e4;
  double peak_tflops = 1e3;
};

// Fits one kind (`has_flops`: with a FLOP term; `has_geometry`: attention's launch geometry
// terms too, per wave, per block bandwidth and combine; `grid_bound`: a kernel whose time is its
// busiest CTA's — a persistent kernel of latency-bound CTAs — fitted in those terms alone, per
// KV step included, its bandwidth and FLOP rate the GPU's peaks). At least 3 samples with
// positive µs.
FittedModel fit_model(const std::vector<FitSample>& samples, bool has_flops, const FitBounds& bounds,
                      bool has_geometry = false, bool grid_bound = false);

// The samples of every fitted key in the measurements (`m` parallel to `q`): the compute ops by
// fitted_model_key, the fused add + RMSNorm cases under elementwise:add_rmsnorm; `sms` for the
// GEMMs' waves. Points that are not positive and finite are left out.
std::map<std::string, std::vector<FitSample>> fit_samples(const CalibrationRequest& q, const CalibrationMeasurements& m,
                                                          int sms);

// The one-request attention points a calibration keeps in its tables ("gqa:32:8:128:q4" → µs by
// kv_len), as the ops calibrate measured (one causal request) and their samples, by fitted key
// (attention:gqa, attention:gqa:decode, ...). Tables without a query-token count are left out.
// The attention models can be refitted from a calibration file with them (refit_attention_tables).
std::map<std::string, std::vector<FitSample>> attention_table_samples(const Calibration& cal, int sms);

// The bounds of the fitted rates on `gpu`: its peaks times 1.5, for what L2 and clocks above base
// give.
FitBounds fit_bounds(const GpuSpec& gpu);

// Every key with at least kMinFitPoints samples, fitted; fit_bounds bound the rates.
inline constexpr std::size_t kMinFitPoints = 4;
// attention_geometry: the attention kinds get the launch-geometry terms (per wave, busiest CTA,
// combine); false fits them in the plain form (fixed + max(bytes / BW, flops / F)) like the
// other kinds, with the geometry terms 0.
std::map<std::string, FittedModel> fit_compute_models(const CalibrationRequest& q, const CalibrationMeasurements& m,
                                                      const GpuSpec& gpu, bool attention_geometry = true);

// The one-request attention models fitted again from a calibration's attention tables (the batch
// points are not kept in a calibration file): keys with at least kMinFitPoints points.
std::map<std::string, FittedModel> refit_attention_tables(const Calibration& cal, const GpuSpec& gpu);

}  // namespace eaglesim
