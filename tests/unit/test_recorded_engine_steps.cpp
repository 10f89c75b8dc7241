// From an engine's recorded step to a calibrated simulator, without a GPU: a profile of the
// PyTorch reference step (synthesised here kernel by kernel from the generated `--engine torch`
// trace, with durations from known formulas, as one CUDA graph replay per ProfilerStep) is
// imported with the generated trace's shapes (--like), the per-kind models are fitted to it
// (calibrate --from-recordings), and a step of another shape is priced from the fit to within a
// few per cent of the same formulas. An inventory that is not what was recorded is refused with
// the op where they part.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "calibration/recorded_fit.hpp"
#include "core/errors.hpp"
#include "cost/compute_model.hpp"
#include "cost/engine_profile.hpp"
#include "topology/calibration_keys.hpp"
#include "import/kineto_import.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;

namespace {

const std::string kTinyLlama = std::string(EAGLESIM_TEST_DATA) + "/kineto/graph/tiny_llama.json";
constexpr double kGapUs = 0.5;  // the graph's kernel boundary between two kernels

Trace torch_step(std::int64_t tokens, std::int64_t kv_len, int batch = 1) {
  GenOptions o;
  o.tokens = static_cast<int>(tokens);
  o.kv_len = kv_len;
  o.batch = batch;
  o.engine = ServingEngine::torch;
  return generate_trace(read_model_config(kTinyLlama), o);
}

// The recordings' GPU: an H200's 132 SMs.
constexpr int kSms = 132;

// What the synthetic GPU takes for an op: a fixed cost and its bytes at a rate per kind; the
// attention as cuDNN's persistent kernel runs it: one CTA per SM walks tiles of 64 query rows of
// one (request, head), each streaming the request's KV in steps of 128 positions, at a cost per
// tile and per step.
double synthetic_us(const Op& op) {
  const double bytes = op.weight_bytes() + op.io_bytes();
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return 3.0 + bytes / 3.0e6;
    case OpKind::attention: {
      const double tiles = static_cast<double>(op.batch * op.heads) * std::ceil(static_cast<double>(op.q_tokens) / 64.0);
      const double per_cta = std::ceil(tiles / kSms);
      return 9.0 + 1.2 * per_cta + 2.6 * per_cta * std::ceil(static_cast<double>(op.kv_len) / 128.0);
    }
    case OpKind::rmsnorm: return 2.0 + bytes / 2.0e6;
    default: return 1.5 + bytes / 2.5e6;
  }
}

// PyTorch's kernel for each op of the reference step, by kind and name.
std::string kernel_name(const Op& op) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return "nvjet_sm90_tst_64x8_64x16_1x1_v_bz_NNT";
    case OpKind::attention: return "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel)";
    case OpKind::rmsnorm: return "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>";
    default: break;
  }
  if (op.name.find("silu") != std::string::npos)
    return "void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel(at::TensorIteratorBase&)>";
  if (op.name.find("cat") != std::string::npos) return "void at::native::CatArrayBatchedCopy<c10::BFloat16>";
  if (op.name.find("fill") != std::string::npos) return "void at::native::vectorized_elementwise_kernel<8, FillFunctor<c10::BFloat16>>";
  if (op.name.find("where") != std::string::npos) return "void at::native::elementwise_kernel<128, 4, where_kernel_impl>";
  if (op.name.find("copy") != std::string::npos || op.name.find("contiguous") != std::string::npos)
    return "void at::native::elementwise_kernel<128, 4, direct_copy_kernel_cuda>";
  if (op.name.find("add") != std::string::npos || op.name.find("sub") != std::string::npos)
    return "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>";
  return "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<MulFunctor<float>>>";
}

// A Chrome trace of `replays` graph replays of `t`'s verify step, one per ProfilerStep.
std::string write_recording(const Trace& t, const std::string& name, int replays = 3, std::size_t drop = SIZE_MAX) {
  nlohmann::json events = nlohmann::json::array();
  double gpu = 50000;
  for (int r = 0; r < replays; ++r) {
    const double cpu = 1000.0 + 100.0 * r;
    const int corr = 1000 + r;
    events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(r + 5)},
                      {"pid", 1}, {"tid", 1}, {"ts", cpu}, {"dur", 50.0}, {"args", {{"External id", 0}}}});
    events.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaGraphLaunch"}, {"pid", 1}, {"tid", 1},
                      {"ts", cpu + 1}, {"dur", 8}, {"args", {{"External id", r + 1}, {"cbid", 311}, {"correlation", corr}}}});
    const auto& ops = t.verify().ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (i == drop) continue;
      const double dur = synthetic_us(ops[i]);
      events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kernel_name(ops[i])}, {"pid", 0}, {"tid", 7},
                        {"ts", gpu}, {"dur", dur},
                        {"args", {{"External id", r + 1}, {"device", 0}, {"stream", 7}, {"correlation", corr},
                                  {"graph id", 3}, {"graph node id", 400 + static_cast<int>(i)}}}});
      gpu += dur + kGapUs;
    }
    gpu += 1000;
  }
  nlohmann::json doc = {{"schemaVersion", 1}, {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H200"}}}},
                        {"traceEvents", events}};
  const std::string path = (std::filesystem::temp_directory_path() / ("eaglesim_" + name + ".json")).string();
  std::ofstream(path) << doc.dump();
  return path;
}

KinetoImportOptions like(const Trace& generated) {
  KinetoImportOptions o;
  o.like = generated;
  o.like_file = "generated.json";
  return o;
}

}  // namespace

TEST(RecordedEngineSteps, ImportTakesTheGeneratedShapesAndKeepsTheRecordedTimes) {
  const Trace gen = torch_step(4, 128);
  const Trace rec = import_kineto({write_recording(gen, "torch_t4")}, like(gen));
  ASSERT_EQ(rec.steps.size(), 1u);
  const auto& ops = rec.steps[0].ops;
  ASSERT_EQ(ops.size(), gen.verify().ops.size());
  double recorded = 0, expected = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].kind, gen.verify().ops[i].kind) << i;
    EXPECT_EQ(ops[i].name, gen.verify().ops[i].name) << i;
    EXPECT_EQ(ops[i].layer, gen.verify().ops[i].layer) << i;
    ASSERT_TRUE(ops[i].us) << i;
    recorded += *ops[i].us;
    expected += synthetic_us(gen.verify().ops[i]) + (i > 0 ? kGapUs : 0.0);
  }
  // Every kernel's time and every boundary inside the replay, SiLU and its multiply included
  // (the importer groups them; --like gives each its share).
  EXPECT_NEAR(recorded, expected, 1e-6 * expected);
  EXPECT_EQ(rec.meta.source, "imported");
  ASSERT_TRUE(rec.meta.engine);
  EXPECT_EQ(*rec.meta.engine, ServingEngine::torch);
}

TEST(RecordedEngineSteps, AnInventoryThatIsNotWhatRanIsRefusedWhereTheyPart) {
  const Trace gen = torch_step(4, 128);
  // The recording lacks the first layer's K-cache copy (op 16, after norm, qkv and 7 + 7 RoPE
  // kernels); the mask's fills and where then meet attention.
  const std::string file = write_recording(gen, "torch_t4_missing", 3, 16);
  try {
    import_kineto({file}, like(gen));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("op 19 is attention"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is not what was recorded"), std::string::npos) << msg;
  }
}

TEST(RecordedEngineSteps, ModelsFittedToRecordingsPriceAnotherShapeWithinAFewPercent) {
  std::vector<Trace> recordings;
  std::vector<std::string> files;
  for (std::int64_t tokens : {1, 2, 4, 8, 16}) {
    const Trace gen = torch_step(tokens, 64 * tokens);
    files.push_back(write_recording(gen, "torch_fit_t" + std::to_string(tokens)));
    recordings.push_back(import_kineto({files.back()}, like(gen)));
  }
  const Topology base = read_topology(resolve_topology_path("2x-h200-nvlink"));
  ASSERT_EQ(base.gpu.sms, kSms);
  const RecordedFit fit = fit_recorded_ops(recordings, files, base.gpu);
  for (const char* key : {"gemm:bf16", "elementwise:rmsnorm", "elementwise:elementwise", kPersistentAttentionKey})
    EXPECT_TRUE(fit.fitted.count(key)) << key;
  const Topology topo = topology_from_recorded_fit(base, fit, "synthetic recordings");
  EXPECT_TRUE(topo.calibration.gemm.empty());  // the base's own tables are not the recorded engine's
  // A shape none of the recordings has, priced as the simulator prices a generated torch step.
  const Trace unseen = torch_step(6, 300);
  const EngineProfile torch = default_engine_profile(ServingEngine::torch);
  double predicted = 0, actual = 0;
  for (const Op& op : unseen.verify().ops) {
    predicted += compute_cost(op, topo, torch).us;
    actual += synthetic_us(op) + kGapUs;
  }
  EXPECT_NEAR(predicted / actual, 1.0, 0.05) << predicted << " vs " << actual;
  // Not imported: refused by name.
  EXPECT_THROW(fit_recorded_ops({unseen}, {"gen.json"}, base.gpu), InputError);
}

// The persistent kernel's time follows its busiest CTA — tiles per SM times KV steps — not the
// bytes the batch streams: fitted on batches of 1 to 3 tiles per SM, a batch of 5 per SM and a
// KV length between the recorded ones is priced within a few per cent, and a batch whose bytes
// double without another tile per SM (the grid still one wave) costs the same.
TEST(RecordedEngineSteps, TheTorchStepsAttentionFollowsCuDnnsPersistentGrid) {
  std::vector<Trace> recordings;
  std::vector<std::string> files;
  const std::vector<std::pair<int, std::int64_t>> shapes{{1, 256}, {8, 1024}, {40, 512}, {70, 2048}, {100, 768}, {20, 4096}};
  for (const auto& [batch, kv] : shapes) {
    const Trace gen = torch_step(4, kv, batch);
    files.push_back(write_recording(gen, "torch_grid_b" + std::to_string(batch) + "_kv" + std::to_string(kv)));
    recordings.push_back(import_kineto({files.back()}, like(gen)));
  }
  const Topology base = read_topology(resolve_topology_path("2x-h200-nvlink"));
  const RecordedFit fit = fit_recorded_ops(recordings, files, base.gpu);
  ASSERT_TRUE(fit.fitted.count(kPersistentAttentionKey));
  EXPECT_EQ(fit.points.count("attention:gqa"), 0u);  // the torch step's attention has its own key
  const FittedModel& m = fit.fitted.at(kPersistentAttentionKey);
  // Per KV step or per K/V byte of the busiest CTA (one head dim: the two are one term).
  EXPECT_TRUE(m.step_us > 0 || m.block_bw_gbs > 0);
  EXPECT_EQ(m.bw_gbs, base.gpu.mem_bw_gbs);  // the roofline, a floor only
  EXPECT_LT(m.rms_residual, 0.02);
  const Topology topo = topology_from_recorded_fit(base, fit, "synthetic recordings");
  const EngineProfile torch = default_engine_profile(ServingEngine::torch);
  auto attention_of = [](const Trace& t) {
    const Op* op = t.verify().first(OpKind::attention);
    if (!op) throw std::logic_error("no attention op");
    return *op;
  };
  const Op unseen = attention_of(torch_step(4, 1536, 150));  // 600 tiles: 5 per SM
  EXPECT_NEAR(compute_cost(unseen, topo, torch).us / synthetic_us(unseen), 1.0, 0.03);
  // 8 and 16 requests are one wave of tiles either way: the same busiest CTA.
  const Op eight = attention_of(torch_step(4, 1024, 8)), sixteen = attention_of(torch_step(4, 1024, 16));
  EXPECT_NEAR(compute_cost(sixteen, topo, torch).us / compute_cost(eight, topo, torch).us, 1.0, 0.01);
}
