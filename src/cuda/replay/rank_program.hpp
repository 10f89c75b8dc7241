#pragma once
// The ops of one step, made runnable on one GPU: every trace op becomes a closure that
// enqueues real work with the traced shape on a stream (cuBLASLt bf16 GEMMs, eaglesim's
// weight-only and grouped MoE GEMM kernels for quantised weights and experts, the
// verify-attention kernel, row-wise kernels (a residual add and the RMSNorm after it as one fused
// kernel), the rank's allreduce, a timed spin for `other`).
// Construction allocates
// and randomly fills everything (weights per op, KV caches, activations) and prepares the
// GEMM algorithms, so that enqueueing never allocates and can be captured into a CUDA graph.
// Must be constructed, used and destroyed on a thread whose current device is `device`.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda/comm/allreduce_self_check.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "cuda/ops/lt_gemm.hpp"
#include "cuda/comm/rank_comm.hpp"
#include "cuda/runtime/stream.hpp"
#include "cuda/runtime/unique_handle.hpp"
#include "cuda/ops/replay_kernels.hpp"
#include "cuda/ops/weight_arena.hpp"
#include "trace/trace.hpp"

namespace eaglesim::cuda {

struct MatmulChoice;        // rank_program.cpp
struct ActQuantRun;         // rank_program.cpp
struct ProgramPlan;         // rank_program.cpp
struct VerifyAttentionRun;  // rank_program.cpp

struct ProgramOptions {
  std::uint64_t seed = 1;
  bool skip_allreduces = false;  // fault injection (tests): this rank never joins the collectives
  bool fuse_add_norm = true;     // residual_add + rmsnorm as one kernel (RunOptions::fuse_add_norm)
  bool recorded_compute = false; // compute ops with a recorded `us` run as timed kernels of that length
  // The trace's batch and speculative configuration (TraceMeta): the verify tree an attention
  // op's tree mask and the sampling's acceptance walk follow, the draft's candidate structure
  // tree_build scores, the requests whose accepted lengths host_sync copies.
  int batch = 1;
  std::optional<SpeculativeConfig> speculative;
  // Further verify trees (parent lists) for programs that mix ops of several traces (calibrate):
  // a tree-mask attention op whose q_tokens the configuration's tree does not have takes the
  // tree of that many tokens from here.
  std::vector<std::vector<int>> verify_trees;
  double host_sync_timeout_s = 600;  // host_sync waits at most this long for the device (a stuck peer)
};

// The communicators of a step's allreduces on one rank: one per op (nullptr for the other ops),
// the same for every allreduce under one strategy, the path's under an engine strategy
// (backend/allreduce_routes.hpp); NCCL for allreduces larger than their communicator takes
// (nullptr when none are).
struct AllreduceComms {
  std::vector<RankComm*> per_op;
  RankComm* fallback = nullptr;
};
// `comm` for every allreduce of `step`.
AllreduceComms one_comm_for_all(const Step& step, RankComm& comm, RankComm* fallback);

// What one timed kernel costs on `device` beyond the time it spins (measured once per device).
double spin_boundary_us(int device);

class RankProgram {
 public:
  RankProgram(const Step& step, int device, const AllreduceComms& comms, const ProgramOptions& opts);
  // `comm` for every allreduce; fallback: for those larger than comm.max_bytes() (may be null
  // when none are).
  RankProgram(const Step& step, int device, RankComm& comm, RankComm* fallback, const ProgramOptions& opts)
      : RankProgram(step, device, one_comm_for_all(step, comm, fallback), opts) {}
  ~RankProgram();
  RankProgram(const RankProgram&) = delete;
  RankProgram& operator=(const RankProgram&) = delete;

  std::size_t size() const { return ops_.size(); }
  // Enqueue op i (nothing when it was absorbed into a fused predecessor).
  // A host-side op (host_sync) blocks the calling thread until the device has reached it, so it
  // cannot be captured into a graph: replays run the graphs of the device ops between host-side
  // ops (cuda/replay/step_graph.hpp).
  void enqueue(std::size_t i, cudaStream_t stream) const {
    if (ops_[i]) ops_[i](stream);
  }
  bool host_side(std::size_t i) const { return host_side_[i]; }
  // Whether kernels that can start before the kernel ahead of them ends (programmatic dependent
  // launch: the GEMV kernel and the weight-only kernel's `pdl` variants stream their first weights,
  // the verify-attention kernel its prefix KV tiles, the row norms their weight, the glue kernels
  // their launch, while the previous kernel finishes) do so, as in
  // a replayed step (the default), or wait for it. Read when an op is enqueued (captured).
  // calibrate's single-op chains switch it off: there the kernel ahead is a copy of the same op,
  // and overlapping its own copies would price an op below what it costs after any other kernel;
  // the overlap between two different kernels is measured by the pair chains, as a transition.
  void set_early_launch(bool on) { early_launch_ = on; }
  // The device buffers attention op i reads and writes (tests check its output against a
  // reference): Q [batch * q_tokens, heads, dk], the packed ragged K and V caches, out, the
  // requests' KV lengths and the mask words (empty: the chain).
  struct AttentionIo {
    const void* q = nullptr;
    const void* k = nullptr;
    const void* v = nullptr;
    const void* out = nullptr;
    std::vector<std::int32_t> kv_len;
    std::vector<std::uint32_t> mask;
  };
  AttentionIo attention_io(std::size_t i) const;
  bool absorbed(std::size_t i) const { return absorbed_[i]; }
  // The kind op i's time is reported under: its own, except a fused add + RMSNorm kernel (run by
  // the residual add), which reports as rmsnorm, as the simulator prices it and as the roofline
  // counts its traffic (backend/evaluate.cpp).
  OpKind reported_kind(std::size_t i) const { return reported_kinds_[i]; }
  const std::string& label(std::size_t i) const { return labels_[i]; }
  const std::string& detail(std::size_t i) const { return details_[i]; }
  // Substitutions and caveats, each once (e.g. "int4 GEMM m=64 replayed as fp8 ...").
  const std::vector<std::string>& notes() const { return notes_; }
  std::size_t weight_bytes() const { return arena_.requested_bytes(); }
  // Each distinct collective shape the step runs, with the communicator it runs through (for
  // AllreduceSelfCheck); in step order of first use, the same on every rank.
  const std::vector<CollectiveUse>& collectives() const { return collectives_; }

 private:
  // The constructor's phases, in order (rank_program.cpp says why).
  void open_device();
  ProgramPlan plan_step(const Step& step);
  void plan_matmul(std::size_t i, const Op& op, ProgramPlan& plan);
  void plan_grouped_matmul(std::size_t i, const Op& op, ProgramPlan& plan);
  void plan_attention_op(std::size_t i, const Op& op, ProgramPlan& plan);
  void plan_rowwise(std::size_t i, const Op& op, ProgramPlan& plan);
  void allocate(const ProgramPlan& plan);
  void fill_contents(const Step& step, const ProgramPlan& plan, std::uint64_t program_seed);
  void build_ops(const Step& step, const ProgramPlan& plan, const AllreduceComms& comms, const ProgramOptions& opts);
  void build_matmul(std::size_t i, const Op& op, const MatmulChoice& choice);
  void build_attention(std::size_t i, const Op& op, const ProgramPlan& plan);
  bool build_allreduce(std::size_t i, const Step& step, RankComm& comm, RankComm* fallback, bool skip_allreduces);
  bool build_add_rmsnorm(std::size_t i, const Step& step);
  void build_rowwise(std::size_t i, const Op& op);
  void build_recorded(std::size_t i, double us);
  void check_regions_fit(const ProgramPlan& plan, std::size_t free_bytes) const;
  void plan_cycle_op(std::size_t i, const Op& op, ProgramPlan& plan);
  void build_cycle_op(std::size_t i, const Op& op);
  bool fp8_on_cublas(const Op& op);
  void plan_act_quants(const Step& step, ProgramPlan& plan);
  void build_act_quant(std::size_t i, const ActQuantRun& q);

  void note(const std::string& text);
  void use_collective(const CollectiveUse& use);  // remembered once
  // The cuBLASLt plan of a GEMM shape, made and tuned on (w, x, y) the first time it is asked for
  // (fp8: in `scaling`, tuned with `scales`, the program's unit scales where null).
  const LtGemm& gemm_plan(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, const void* w, const void* x,
                          void* y, Fp8Scaling scaling = Fp8Scaling::tensor, const LtScales& scales = {});
  // One verify-attention plan (and workspace) per distinct shape and KV lengths; throws
  // std::invalid_argument when the kernel does not take the shape.
  VerifyAttentionRun& verify_run(const Op& op, std::size_t i);
  std::vector<std::uint32_t> mask_words(const Op& op, std::size_t i) const;

  int device_ = 0;
  int sm_count_ = 0;
  int compute_capability_ = 0;  // major * 10 + minor
  bool has_fp8_ = false;
  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;  // the GEMM tuner's cublasGemmEx candidate (lt_gemm.hpp)
  DeviceBuffer workspace_, x_, x8_, y_, z_, residual_, part_acc_, part_ml_, ids_;
  std::optional<UnitFp8Scales> fp8_scales_;  // made in open_device, on the rank's device
  // Dense fp8 GEMMs: which path (EAGLESIM_FP8_GEMM) and cuBLASLt's scale mode (EAGLESIM_FP8_SCALING,
  // per tensor on GPUs without the other modes: fp8_scaling_note_ says so); the fp8 activations'
  // scales beside x8_.
  Fp8GemmPath fp8_path_ = Fp8GemmPath::rule;
  Fp8Scaling fp8_scaling_ = Fp8Scaling::block;
  std::string fp8_scaling_note_;
  DeviceBuffer x8_scales_;
  // Per (m, n, k, mode): why cuBLASLt's fp8 GEMM refused the shape (empty: it takes it).
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int>, std::string> fp8_refusals_;
  // The grouped GEMM kernels' shared workspace and the rows each expert gets, per grouped op.
  DeviceBuffer moe_workspace_, expert_offsets_;
  // The per-cycle ops' scratch: fp32 logits, top-k ids and probabilities, the top-k kernel's
  // workspace, the target's argmax,
  // the requests' accepted lengths and tokens, and per op its own inputs (ProgramPlan::cycle).
  DeviceBuffer logits_, topk_ids_, topk_probs_, topk_workspace_, predict_, accept_len_, accepted_;
  UniqueHandle<void*, cudaFreeHost> host_accept_len_;  // pinned: host_sync's destination
  Event host_sync_done_;
  std::map<std::size_t, DeviceBuffer> cycle_inputs_;
  std::vector<bool> host_side_;
  std::map<std::size_t, AttentionIo> attention_io_;  // per attention op on the verify kernel
  ProgramOptions opts_;
  std::size_t moe_counter_bytes_ = 0;  // the counters' part of moe_workspace_ (the most any plan needs)
  WeightArena arena_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int>, std::unique_ptr<LtGemm>> gemms_;
  std::map<std::vector<std::int64_t>, std::unique_ptr<VerifyAttentionRun>> verify_runs_;
  std::vector<std::function<void(cudaStream_t)>> ops_;
  bool early_launch_ = true;  // set_early_launch
  std::vector<bool> absorbed_;
  std::vector<OpKind> reported_kinds_;
  double spin_boundary_us_ = 0;  // spin_boundary_us(device), taken off every recorded duration
  std::vector<bool> recorded_;  // runs as a timed kernel of its recorded `us` (ProgramOptions::recorded_compute)
  std::vector<std::string> labels_, details_, notes_;
  std::vector<CollectiveUse> collectives_;
};

}  // namespace eaglesim::cuda
