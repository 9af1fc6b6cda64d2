// TransformerEngine userbuffers comm-GEMM overlap (what Megatron-LM's --tp-comm-overlap runs; TE
// transformer_engine/pytorch/module/base.py initialize_ub, get_default_config and add_ub;
// transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp CommOverlapCore, CommOverlap,
// CommOverlapP2P). TE gives each TP+SP linear's GEMM a communicator by name (qkv_fprop, proj_fprop,
// fc1_fprop, fc2_fprop and the dgrad / wgrad entries) with one of three methods:
//   ring_exchange (CommOverlapP2P): the tp_size chunks of the gathered (or scattered) dimension are
//     exchanged peer to peer, each chunk's GEMM overlapping the next chunk's exchange; copy-engine
//     copies by default (use_ce = True), else userbuffers kernels of num_sm CTAs. This is async TP's
//     Looped CollectiveEinsum (async_tp.cpp), run here through the same builder with TE's knobs;
//   pipeline (CommOverlap split_overlap_rs): the GEMM split into num_splits chunks along M, each
//     chunk's reduce-scatter (a userbuffers kernel of num_sm CTAs) overlapping the next chunk's GEMM.
//     This is data slicing (data_slicing.cpp) with TE's CTA count and SM margin. TE refuses pipeline
//     for an all-gather (add_ub: "`pipeline` overlap method is not supported for AllGather"); the
//     sliced builder chunks a layer's all-gather too, so under method pipeline a layer's all-gather
//     is chunked where TE would run it as ring_exchange (docs/schemes.md says so);
//   bulk (CommOverlap bulk_overlap): a collective overlapped with an independent GEMM: in the training
//     backward, the input's all-gather beside dgrad and dgrad's reduce-scatter beside wgrad (TE's
//     default for qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad), training_step.cpp's bulk form. A
//     forward has no independent GEMM to hide its collectives behind, so method bulk runs the forward
//     unoverlapped.
// set_sm_margin: the GEMM runs on sm_count - num_sm SMs (CommOverlapCore: _math_sms = sm_count -
// num_comm_sm when set_sm_margin), so the communication kernels never wait for SMs.
// Per GEMM name (initialize_ub takes one ub_cfgs entry per name): params "<name>.<knob>" (e.g.
// proj_fprop.method: pipeline, fc2_fprop.num_splits: 8) set that name's linear; an absent one takes the
// scalar knob (te_userbuffers.hpp te_gemm_setting). With any per-name knob the layer is composed linear
// by linear (TeComposer below), each with its own method, CTAs and splits: qkv_fprop / fc1_fprop the
// column-parallel forwards (all-gather -> GEMM), proj_fprop / fc2_fprop the row-parallel forwards
// (GEMM -> reduce-scatter), proj_dgrad / fc2_dgrad the row-parallel dgrads (dY all-gather -> GEMM),
// qkv_dgrad / fc1_dgrad the column-parallel dgrads (bulk: the input's all-gather beside dgrad, with
// qkv_wgrad / fc1_wgrad's communicator running dgrad's reduce-scatter beside wgrad; otherwise dgrad ->
// reduce-scatter overlapped, TE's dgrad_reduce_scatter_overlap, and the wgrad name does not exist).
// cga_size: TE launches every userbuffers kernel cooperatively with a thread-block-cluster dimension
// of cga_size when num_sm % cga_size == 0, else 1, and the cluster attribute only on sm_arch >= 9
// (common/comm_gemm_overlap/userbuffers/userbuffers.cu SETUP_LAUNCH_CONFIG). The kernels use no
// distributed shared memory; a cluster only asks the hardware to place its CTAs on one GPC at once. The
// model already starts a communication kernel as a gang holding all num_sm SMs together (what the
// cooperative launch requires) and has no GPC placement, so cga_size has no timing effect here: it is
// checked (1..8, the portable cluster limit) and exported, not timed.
// atomic_gemm (ub_cfgs <gemm>.atomic_gemm; common/comm_gemm_overlap/comm_gemm_overlap.cpp
// CommOverlapBase::atomic_gemm_overlap_rs, CommOverlapP2PBase::atomic_gemm_overlap_rs and
// atomic_gemm_overlap_ag; common/gemm/cublaslt_gemm.cu nvte_cublas_atomic_gemm): the split GEMMs are
// replaced by ONE cuBLASLt GEMM that bumps a counter per chunk of its output as the chunk's tiles
// finish (m_split = num_splits for pipeline, n_split = tp for ring_exchange), and the communication
// of chunk i waits on counter i (TE's `consumer` kernel) instead of on a split GEMM's end:
//   pipeline: one GEMM over all M on _math_sms, then on the communication stream per chunk a wait and
//     the chunk's reduce-scatter of num_sm CTAs (the default NVTE_RS_STRIDED_ATOMIC=0 kernel; the
//     last chunk keeps num_sm: only the non-atomic path raises it to UB_MAX_SM);
//   ring_exchange, GEMM -> reduce-scatter: one GEMM of the tp output chunks, chunk i-1 sent to rank
//     r - i once its counter is set (tp - 1 sends on _stream_recv, copy engine unless use_ce is
//     false), the rank's own chunk last, then the reduction of the tp partial chunks (reduce_bf16);
//   ring_exchange, all-gather -> GEMM: TE launches one consuming GEMM whose chunk-i tiles spin until
//     chunk i has arrived. The engine has no per-tile wait inside a GEMM, so the consumer is timed as
//     the non-atomic ring_exchange's per-chunk GEMMs (an over-estimate by their launches), plus what
//     the atomic path adds: the output copied out of its (tp + 1)-chunk buffer (two D2D copies,
//     atomic_gemm_overlap_ag).
// The counters are the engine's (GemmOptions::tile_counters and wait ops, as FLUX's GEMM-RS in
// flux.cpp); the output tiles are taken to complete in chunk order (m_split / n_split chunks in
// order), so chunk i is done when its share of the tiles is.
// TE's rules, each refused here at its key (exit 2): FP8 only (add_ub: "Atomic GEMM overlap supported
// only for FP8 GEMM"; nvte_cublas_atomic_gemm also wants delayed tensor scaling); not for bulk (add_ub
// warns and sets atomic_gemm=False: a name set to it is refused, the scalar skips bulk names); an
// atomic ring_exchange all-gather and its reduce-scatter pair (qkv_fprop / proj_fprop, fc1_fprop /
// fc2_fprop, ag_rs_pairs) both or neither (add_ub's ValueError: the atomic AG-GEMM shuffles chunk
// outputs and the RS-GEMM un-shuffles them). Not checkable from a profile, so documented only: the
// atomic GEMM needs CUDA and cuBLAS >= 12.2 and < 13.0 (nvte_cublas_atomic_gemm refuses otherwise; TE
// keeps the path as of its 2026 main branch, add_ub warns it is a beta cuBLAS API "not tested for all
// use cases"), and the cuBLASMp backend runs its own atomic algorithms instead.
// The non-atomic pipeline's last chunk: split_overlap_rs sets _ub_comm->sms = UB_MAX_SM (32,
// comm_gemm_overlap.cpp) before the last chunk's reduce-scatter: nothing is left to overlap, so it
// takes more CTAs: min(32, sm_count - 1), in the per-name composition below and in the scalar
// pipeline (data slicing's sliced layers, SliceResources::last_reduce_scatter_channels).
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/param_rows.hpp"
#include "sim/schemes/reusable_builders.hpp"
#include "sim/schemes/te_userbuffers.hpp"
#include "sim/schemes/training_step.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

template <typename T>
T knob(const nlohmann::json& params, const std::string& name, T fallback) {
  if (params.is_object() && params.contains(name) && !params.at(name).is_null()) return params.at(name).get<T>();
  return fallback;
}

// A scalar knob's value: the one given, else its table row's default.
template <typename T>
T scalar_knob(const nlohmann::json& params, const SchemeParam& row) {
  return knob<T>(params, row.name, row.default_value.get<T>());
}

const SchemeParam kMethod =
    choice_param("method", {"ring_exchange", "pipeline", "bulk"},
                 "ring_exchange (P2P chunk exchange, each chunk's GEMM beside the next exchange) | pipeline (GEMM "
                 "split into num_splits, a reduce-scatter per split) | bulk (only the training backward's "
                 "collectives beside independent GEMMs; the forward unoverlapped)")
        .tune({"ring_exchange", "pipeline", "bulk"})
        .production("TransformerEngine ub_cfgs <gemm>.method (Megatron-LM --tp-comm-overlap-cfg YAML)");
// TE's default num_sm is 16 for pipeline and bulk, 1 for ring_exchange (get_default_config); one
// default serves all three here: 16.
const SchemeParam kNumSm = comm_sms_param("num_sm", 16, 1,
                                          "SMs (CTAs) the communication kernels take: pipeline's and bulk's "
                                          "reduce-scatter, ring_exchange's copies when use_ce is false")
                               .tune({4, 16, 24}, "method=pipeline")
                               .production("TransformerEngine ub_cfgs <gemm>.num_sm");
const SchemeParam kCgaSize = int_param("cga_size", 2, 1, 8,
                                       "communication kernels' thread-block-cluster size (exported; not timed)")
                                 .production("TransformerEngine ub_cfgs <gemm>.cga_size");
const SchemeParam kSetSmMargin =
    bool_param("set_sm_margin", false, "the overlapped GEMMs run on sm_count - num_sm SMs")
        .tune({false, true})
        .production("TransformerEngine ub_cfgs <gemm>.set_sm_margin");
const SchemeParam kAtomicGemm =
    bool_param("atomic_gemm", false,
               "one cuBLASLt GEMM signalling a counter per chunk instead of split GEMMs (pipeline, ring_exchange); "
               "TE allows it for FP8 GEMMs only (workload dtype fp8), CUDA 12.2-12.x")
        .tune({false, true}, "method=pipeline and workload.dtype=fp8")
        .production("TransformerEngine ub_cfgs <gemm>.atomic_gemm");
// comm_gemm_overlap.cpp `#define UB_MAX_SM 32`: the CTAs of the non-atomic pipeline's last chunk.
constexpr int kUbMaxSm = 32;
const SchemeParam kNumSplits = int_param("num_splits", 4, 1, 4096, "pipeline: chunks the GEMM is split into along M")
                                   .tune({2, 4, 8}, "method=pipeline")
                                   .production("TransformerEngine ub_cfgs <gemm>.num_splits (pipeline)");
const SchemeParam kUseCe = bool_param("use_ce", true,
                                      "ring_exchange: copy-engine copies (no SMs); false: userbuffers copy "
                                      "kernels of num_sm CTAs")
                               .tune({true, false}, "method=ring_exchange")
                               .production("TransformerEngine ub_cfgs <gemm>.use_ce");

// The per-name rows: "<name>.<knob>" for each knob TE's ub_cfgs entry of that name takes (a wgrad
// name is always bulk: no method row), defaulting to the scalar knob (shown as its name). Each is its
// scalar row under the name's key (the same type, range and choices), so a default or range is the
// scalar's. Tune searches the method, num_sm and num_splits rows name by name (sim/tune_schemes.cpp:
// grouped knobs).
std::vector<SchemeParam> per_name_params() {
  std::vector<SchemeParam> out;
  auto inherit = [](const SchemeParam& scalar, const std::string& name, std::string help, std::string formula) {
    SchemeParam p = scalar;
    p.name = name + "." + scalar.name;
    p.help = std::move(help);
    p.tune_values.clear();
    p.tune_when.clear();
    const nlohmann::json fallback = scalar.default_value;
    p.hardware_default = [fallback](const HardwareProfile&) { return fallback; };
    p.default_formula = std::move(formula);
    p.inherits = true;
    return p;
  };
  for (const std::string& name : te_all_gemm_names()) {
    const TeSide side = te_side(name);
    const bool backward = name.find("grad") != std::string::npos;
    const std::string prod = "TransformerEngine ub_cfgs " + name + ".";
    const std::string pipeline_when = name + ".method=pipeline";
    auto add = [&](SchemeParam p) { out.push_back(backward ? p.training() : p); };
    if (side == TeSide::all_gather) {
      // add_ub: "`pipeline` overlap method is not supported for AllGather".
      SchemeParam method = inherit(kMethod, name,
                                   name + ": ring_exchange | bulk (not overlapped); TE refuses pipeline for an all-gather",
                                   "method (pipeline: ring_exchange)");
      std::erase(method.allowed, nlohmann::json("pipeline"));
      add(method.tune({"ring_exchange", "bulk"}).production(prod + "method"));
    } else if (side == TeSide::reduce_scatter) {
      add(inherit(kMethod, name, name + ": ring_exchange | pipeline | bulk (not overlapped)", "method")
              .tune({"ring_exchange", "pipeline", "bulk"})
              .production(prod + "method"));
    } else if (side == TeSide::column_dgrad) {
      add(inherit(kMethod, name,
                  name + ": bulk (input all-gather beside dgrad, reduce-scatter beside wgrad) | "
                         "ring_exchange | pipeline (dgrad -> reduce-scatter overlapped)",
                  "bulk if method or column_backward is bulk, else method")
              .tune({"bulk", "ring_exchange", "pipeline"})
              .production(prod + "method"));
    }
    SchemeParam sm = inherit(kNumSm, name, name + ": num_sm", "num_sm");
    if (side == TeSide::reduce_scatter || side == TeSide::column_dgrad) sm = sm.tune({4, 16, 24}, pipeline_when);
    add(sm.production(prod + "num_sm"));
    add(inherit(kCgaSize, name, name + ": cga_size (exported; not timed)", "cga_size").production(prod + "cga_size"));
    add(inherit(kSetSmMargin, name, name + ": set_sm_margin", "set_sm_margin").production(prod + "set_sm_margin"));
    if (side == TeSide::reduce_scatter || side == TeSide::column_dgrad)
      add(inherit(kNumSplits, name, name + ": num_splits (pipeline)", "num_splits")
              .tune({2, 4, 8}, pipeline_when)
              .production(prod + "num_splits"));
    if (side != TeSide::column_wgrad)
      add(inherit(kUseCe, name, name + ": use_ce (ring_exchange)", "use_ce").production(prod + "use_ce"));
    // Tuned where it needs no pair (pipeline), on an fp8 workload only (TE's rule).
    if (side != TeSide::column_wgrad) {
      SchemeParam atomic = inherit(kAtomicGemm, name, name + ": atomic_gemm (fp8 only)",
                                   "atomic_gemm (false where bulk, or an all-gather under pipeline)");
      if (side == TeSide::reduce_scatter || side == TeSide::column_dgrad)
        atomic = atomic.tune({false, true}, pipeline_when + " and workload.dtype=fp8");
      add(atomic.production(prod + "atomic_gemm"));
    }
  }
  return out;
}

// A per-name knob's TE name ("proj_fprop" of "proj_fprop.num_sm"), or "" for a scalar knob.
std::string gemm_name_of(const std::string& key) {
  const auto dot = key.find('.');
  return dot == std::string::npos ? std::string{} : key.substr(0, dot);
}

// The TE name of a training-step backward linear ("bwd.L3.out_proj.dgrad" -> proj; qkv, fc1, fc2).
std::string te_linear_of(const std::string& op_name) {
  std::string s = op_name;
  for (const char* suffix : {".dgrad", ".wgrad"})
    if (s.size() > std::string(suffix).size() && s.ends_with(suffix)) s.resize(s.size() - std::string(suffix).size());
  const auto dot = s.rfind('.');
  if (dot != std::string::npos) s = s.substr(dot + 1);
  return s == "out_proj" ? "proj" : s;
}

// A layer's linears, each with its TE name's setting. Streams: a compute stream and a communication
// stream (priority 1) per rank for pipeline and bulk (TE's _stream_compute and _stream_comm), a second
// communication stream for the bulk all-gather that runs beside dgrad while the reduce-scatter waits
// for it, and one Looped CollectiveEinsum per distinct ring_exchange setting (its own streams).
class TeComposer {
 public:
  TeComposer(GraphBuilder& b, const BuildContext& ctx)
      : b_(b), ctx_(ctx), T_(b.ranks()), main_(b.add_streams("compute", 0)), comm_(b.add_streams("ub_comm", 1)),
        bulk_(b.add_streams("ub_bulk", 1)) {}

  RankStreams driver_streams() const { return RankStreams{main_, comm_}; }
  std::vector<Bytes>& collectives() { return collectives_; }
  TeGemmSetting setting(const std::string& name) const { return te_gemm_setting(ctx_.params, name); }

  // All-gather -> GEMM (qkv_fprop, fc1_fprop; proj_dgrad, fc2_dgrad): `rows` gathered rows of
  // `row_bytes`, the GEMM `g` over all of them; gather = false: no all-gather, the GEMM alone.
  PerRank all_gather_gemm(const std::string& name, const GemmShape& g, Bytes row_bytes, bool gather,
                          const PerRank& start, const std::string& tag) {
    const TeGemmSetting s = setting(name);
    if (!gather) return gemm(g, budget(s), start, main_, tag);
    collectives_.push_back(g.m * row_bytes);
    if (s.method == "ring_exchange") {
      LoopedEinsum& le = loop(s);
      const PerRank done = le.all_gather_matmul(g.m, row_bytes, le.unit(g), start, tag);
      if (!s.atomic_gemm) return done;
      // atomic_gemm_overlap_ag: the consumer GEMM writes a buffer of tp + 1 output chunks; the first
      // chunk is copied behind the last, then the tp chunks after the first into D (two D2D copies,
      // each read and written).
      const Bytes out_bytes = g.m * g.n * dtype_bytes(g.dtype);
      return memory(2 * (out_bytes + out_bytes / T_), done, tag + ".atomic_copy_out");
    }
    // bulk: not overlapped (a forward has no independent GEMM to hide it behind).
    const PerRank gathered = collective(Primitive::all_gather, g.m * row_bytes, s.num_sm, start, comm_, tag + ".all_gather");
    return gemm(g, budget(s), gathered, main_, tag);
  }

  // GEMM -> reduce-scatter (proj_fprop, fc2_fprop; qkv_dgrad, fc1_dgrad when not bulk): `g` with its
  // M the scattered rows, `bytes` the collective's S.
  PerRank gemm_reduce_scatter(const std::string& name, const GemmShape& g, Bytes bytes, const PerRank& start,
                              const std::string& tag) {
    const TeGemmSetting s = setting(name);
    collectives_.push_back(bytes);
    if (s.method == "ring_exchange") {
      if (s.atomic_gemm) return atomic_p2p_reduce_scatter(s, g, bytes, start, tag);
      LoopedEinsum& le = loop(s);
      return le.matmul_reduce_scatter(g.m, bytes / std::max<std::int64_t>(1, g.m), le.unit(g), start, tag);
    }
    // pipeline: num_splits chunks along M, chunk i's reduce-scatter (num_sm CTAs) beside chunk i+1's
    // GEMM (CommOverlapBase::split_overlap_rs), the last chunk's on UB_MAX_SM CTAs; bulk: one chunk,
    // not overlapped.
    const int k = s.method == "pipeline" ? static_cast<int>(std::min<std::int64_t>(s.num_splits, std::max<std::int64_t>(1, g.m))) : 1;
    auto rows_of = [&](int c) { return g.m / k + (c < g.m % k ? 1 : 0); };
    if (s.method == "pipeline" && s.atomic_gemm) {
      // CommOverlapBase::atomic_gemm_overlap_rs: one GEMM, counter c set by chunk c's tiles.
      const CounterCall call = atomic_gemm_call(g, s, start, tag);
      PerRank scattered;
      std::int64_t rows_through = 0;
      for (int c = 0; c < k; ++c) {
        rows_through += rows_of(c);
        const std::string part = k > 1 ? fmt::format("[{}]", c) : std::string{};
        const PerRank waited = wait_rows(call, rows_through, g.m, tag + ".wait" + part);
        scattered = collective(Primitive::reduce_scatter, bytes / g.m * rows_of(c), s.num_sm, waited, comm_,
                               tag + ".reduce_scatter" + part);
      }
      return scattered;
    }
    PerRank last = start;
    PerRank scattered;
    for (int c = 0; c < k; ++c) {
      const std::string part = k > 1 ? fmt::format("[{}]", c) : std::string{};
      last = gemm(GemmShape{rows_of(c), g.n, g.k, g.dtype}, budget(s), c == 0 ? start : PerRank{}, main_, tag + part);
      const bool last_chunk = s.method == "pipeline" && c == k - 1;
      const int ctas = last_chunk ? std::min(kUbMaxSm, ctx_.hardware.gpu.sm_count - 1) : s.num_sm;
      scattered = collective(Primitive::reduce_scatter, bytes / g.m * rows_of(c), ctas, last, comm_,
                             tag + ".reduce_scatter" + part);
    }
    return scattered;
  }

  // The column-parallel backward's bulk pair (TE's qkv_dgrad / qkv_wgrad, fc1_dgrad / fc1_wgrad):
  // dgrad's reduce-scatter on the wgrad name's communicator (num_sm CTAs), after dgrad.
  PerRank bulk_dgrad(const std::string& linear, const GemmShape& dgrad, Primitive scatter, Bytes bytes,
                     const PerRank& start, const std::string& tag) {
    const TeGemmSetting d = setting(linear + "_dgrad"), w = setting(linear + "_wgrad");
    collectives_.push_back(bytes);
    const PerRank mm = gemm(dgrad, budget(d), start, main_, tag);
    return collective(scatter, bytes, w.num_sm, mm, comm_, tag + "." + primitive_name(scatter));
  }
  // ... and the input's all-gather on the dgrad name's communicator, beside dgrad (a stream of its
  // own: the reduce-scatter above waits for dgrad), then wgrad.
  PerRank bulk_wgrad(const std::string& linear, const GemmShape& wgrad, Bytes regather_bytes, const PerRank& start,
                     const std::string& tag) {
    const TeGemmSetting d = setting(linear + "_dgrad"), w = setting(linear + "_wgrad");
    collectives_.push_back(regather_bytes);
    const PerRank gathered =
        collective(Primitive::all_gather, regather_bytes, d.num_sm, start, bulk_, tag + ".input_all_gather");
    return gemm(wgrad, budget(w), gathered, main_, tag);
  }

  // The input's re-gather -> wgrad along K under a dgrad that is not bulk: ring_exchange decomposes it
  // as async TP does (partial wgrads accumulating); pipeline leaves it to NCCL before wgrad.
  PerRank regather_wgrad(const std::string& linear, const GemmShape& wgrad, Bytes bytes, const PerRank& start,
                         const std::string& tag) {
    const TeGemmSetting d = setting(linear + "_dgrad");
    collectives_.push_back(bytes);
    if (d.method == "ring_exchange") {
      LoopedEinsum& le = loop(d);
      return le.all_gather_matmul(wgrad.k, bytes / std::max<std::int64_t>(1, wgrad.k), le.unit(wgrad, true), start, tag,
                                  true);
    }
    const PerRank gathered = collective(Primitive::all_gather, bytes, -1, start, comm_, tag + ".all_gather");
    return gemm(wgrad, 0, gathered, main_, tag);
  }

  PerRank memory(Bytes bytes, const PerRank& start, const std::string& tag) {
    PerRank out;
    for (int r = 0; r < T_; ++r)
      out.push_back(b_.add_memory(r, main_[ri(r)], MemoryKernel{tag, bytes, deps_of(start, r), 0}));
    return out;
  }

  // One forward block with every linear's setting.
  PerRank forward(const Workload& w, Block block, const PerRank& start, const std::string& prefix) {
    const int T = w.tp;
    const Transformer* t = std::get_if<Transformer>(&w.shape);
    const bool attention = t ? block == Block::attention : w.kind == WorkloadKind::attention_tpsp;
    if (attention) {
      const AttentionTpSp att = t ? transformer_attention(*t) : std::get<AttentionTpSp>(w.shape);
      const AttentionShapes s = attention_shapes(att, T);
      const PerRank qkv = all_gather_gemm("qkv_fprop", s.qkv, s.qkv.k * dtype_bytes(s.qkv.dtype), att.gather_input,
                                          start, prefix + "qkv");
      PerRank core;
      for (int r = 0; r < T_; ++r)
        core.push_back(add_core_attention(b_, r, main_[ri(r)], s, att.dtype, prefix + "attention", deps_of(qkv, r)));
      return gemm_reduce_scatter("proj_fprop", s.out, s.reduce_scatter_bytes, core, prefix + "proj");
    }
    const MlpTpSp mlp = t ? transformer_mlp(*t) : std::get<MlpTpSp>(w.shape);
    const MlpShapes s = mlp_shapes(mlp, T);
    const PerRank fc1 = all_gather_gemm("fc1_fprop", s.col, s.col.k * dtype_bytes(s.col.dtype), mlp.gather_input, start,
                                        prefix + "fc1");
    const PerRank act = memory(s.activation_bytes, fc1, prefix + "activation");
    return gemm_reduce_scatter("fc2_fprop", s.row, s.reduce_scatter_bytes, act, prefix + "fc2");
  }

 private:
  static std::size_t ri(int r) { return static_cast<std::size_t>(r); }
  static std::vector<OpId> deps_of(const PerRank& start, int r) {
    if (start.empty() || start[ri(r)] == kNoOp) return {};
    return {start[ri(r)]};
  }
  int budget(const TeGemmSetting& s) const { return s.set_sm_margin ? ctx_.hardware.gpu.sm_count - s.num_sm : 0; }

  LoopedEinsum& loop(const TeGemmSetting& s) {
    LoopedEinsumOptions o;
    o.sm_transport = !s.use_ce;
    o.streams = 2;
    o.copy_sms = s.num_sm;
    o.gemm_sm_budget = budget(s);
    const auto key = std::make_tuple(o.sm_transport, o.copy_sms, o.gemm_sm_budget);
    auto it = loops_.find(key);
    if (it == loops_.end()) it = loops_.emplace(key, std::make_unique<LoopedEinsum>(b_, o)).first;
    return *it->second;
  }

  PerRank gemm(const GemmShape& g, int sm_budget, const PerRank& start, const std::vector<StreamId>& streams,
               const std::string& tag) {
    PerRank out;
    for (int r = 0; r < T_; ++r) {
      GemmOptions o;
      o.name = tag;
      o.sm_budget = sm_budget;
      o.deps = deps_of(start, r);
      out.push_back(b_.add_gemm(r, streams[ri(r)], g, o));
    }
    return out;
  }

  PerRank collective(Primitive p, Bytes bytes, int channels, const PerRank& start, const std::vector<StreamId>& streams,
                     const std::string& tag) {
    CollectiveSpec spec;
    spec.name = tag;
    spec.primitive = p;
    spec.bytes = bytes;
    spec.streams = streams;
    spec.channels = channels;
    for (int r = 0; r < T_; ++r) spec.deps.push_back(deps_of(start, r));
    return b_.add_collective(spec);
  }

  // One atomic GEMM per rank over all of `g`, each tile adding 1 to the rank's counter as it ends.
  struct CounterCall {
    PerRank gemm;
    std::vector<CounterId> counter;
    std::int64_t tiles = 1;
  };
  CounterCall atomic_gemm_call(const GemmShape& g, const TeGemmSetting& s, const PerRank& start, const std::string& tag) {
    CounterCall call;
    call.tiles = std::max<std::int64_t>(1, plan_gemm(ctx_.hardware, g).tiles);
    for (int r = 0; r < T_; ++r) {
      call.counter.push_back(b_.add_counter(fmt::format("{}r{}.chunks", tag, r)));
      GemmOptions o;
      o.name = tag + ".atomic_gemm";
      o.sm_budget = budget(s);
      o.tile_counters = {call.counter.back()};
      o.deps = deps_of(start, r);
      call.gemm.push_back(b_.add_gemm(r, main_[ri(r)], g, o));
    }
    return call;
  }
  // TE's `consumer` kernel on the communication stream: waits until the GEMM's tiles through output
  // row `rows_through` of `rows` are done (tiles in chunk order, rounded up to whole tiles).
  PerRank wait_rows(const CounterCall& call, std::int64_t rows_through, std::int64_t rows, const std::string& tag) {
    const std::int64_t target =
        std::max<std::int64_t>(1, (call.tiles * rows_through + rows - 1) / std::max<std::int64_t>(1, rows));
    PerRank out;
    for (int r = 0; r < T_; ++r) out.push_back(b_.add_wait(r, comm_[ri(r)], call.counter[ri(r)], target, tag));
    return out;
  }

  // CommOverlapP2PBase::atomic_gemm_overlap_rs: one GEMM of the tp output chunks in send order; step
  // i = 1 .. tp-1 waits for chunk i-1 and sends it to its owner, rank r - i (TE's send_rank = tp_id -
  // i), receiving its own rows' partial from rank r + i; the rank's own chunk is the GEMM's last; then
  // the tp partials of the rank's rows are summed (reduce_bf16: tp chunks read, one written).
  PerRank atomic_p2p_reduce_scatter(const TeGemmSetting& s, const GemmShape& g, Bytes bytes, const PerRank& start,
                                    const std::string& tag) {
    const CounterCall call = atomic_gemm_call(g, s, start, tag);
    const Bytes row_bytes = bytes / std::max<std::int64_t>(1, g.m);
    auto mod = [](int a, int n) { return ((a % n) + n) % n; };
    auto rows_of = [&](int d) { return static_cast<std::int64_t>(chunk_bytes(g.m, T_, d)); };
    std::vector<std::vector<OpId>> arrived(static_cast<std::size_t>(T_));
    for (int step = 1; step < T_; ++step) {
      const std::int64_t id = s.use_ce ? -1 : b_.new_collective_id();
      for (int r = 0; r < T_; ++r) {
        const int dst = mod(r - step, T_), src = mod(r + step, T_);
        // Chunks 0 .. step-1 of rank r's output are done: the rows of the first `step` owners.
        std::int64_t through = 0;
        for (int j = 1; j <= step; ++j) through += rows_of(mod(r - j, T_));
        const std::int64_t target =
            std::max<std::int64_t>(1, (call.tiles * through + g.m - 1) / std::max<std::int64_t>(1, g.m));
        const OpId wait = b_.add_wait(r, comm_[ri(r)], call.counter[ri(r)], target, fmt::format("{}.wait{}", tag, step));
        b_.add_required_bytes(r, dst, rows_of(dst) * row_bytes);
        PeerCopy x;
        x.name = fmt::format("{}.send{}", tag, step);
        x.ctas = s.use_ce ? 0 : s.num_sm;
        x.collective = id;
        x.members = T_;
        x.send_to = dst;
        x.send_bytes = rows_of(dst) * row_bytes;
        x.recv_from = src;
        x.recv_bytes = rows_of(r) * row_bytes;
        x.push = true;
        x.deps = {wait};
        arrived[ri(r)].push_back(add_peer_copy(b_, r, comm_[ri(r)], x));
      }
    }
    // A copy-engine write completes on the sender's stream: rank r's rows are in once every sender's
    // write to r is done, so the reduction waits for every rank's sends (as flux.cpp's GEMM-RS).
    std::vector<OpId> all_sends;
    for (const auto& a : arrived) all_sends.insert(all_sends.end(), a.begin(), a.end());
    PerRank out;
    for (int r = 0; r < T_; ++r) {
      MemoryKernel k{tag + ".reduce", static_cast<Bytes>(T_ + 1) * rows_of(r) * row_bytes, {call.gemm[ri(r)]}, 0};
      k.deps.insert(k.deps.end(), all_sends.begin(), all_sends.end());
      out.push_back(b_.add_memory(r, main_[ri(r)], k));
    }
    return out;
  }

  GraphBuilder& b_;
  const BuildContext& ctx_;
  int T_;
  std::vector<StreamId> main_, comm_, bulk_;
  std::map<std::tuple<bool, int, int>, std::unique_ptr<LoopedEinsum>> loops_;
  std::vector<Bytes> collectives_;
};

// A training step's backward, name by name (the file's header).
class TePass final : public PassEmitter {
 public:
  TePass(GraphBuilder& b, TeComposer& c, const Workload& w) : PassEmitter(b, c.driver_streams()), c_(c), w_(w) {}

  PerRank forward(Block block, const PerRank& start, const std::string& prefix) override {
    return c_.forward(w_, block, start, prefix);
  }

  // dY's all-gather -> a row-parallel dgrad (proj_dgrad, fc2_dgrad), or the input's re-gather -> a
  // column-parallel wgrad (split_k), which its dgrad's method decides.
  PerRank gather_gemm(const GatherGemm& g, const PerRank& start) override {
    if (g.primitive != Primitive::all_gather) return PassEmitter::gather_gemm(g, start);
    const std::string linear = te_linear_of(g.name);
    if (!g.split_k) {
      if (c_.setting(linear + "_dgrad").method == "bulk") return PassEmitter::gather_gemm(g, start);
      return c_.all_gather_gemm(linear + "_dgrad", g.gemm, g.bytes / std::max<std::int64_t>(1, g.gemm.m), true, start,
                                g.name);
    }
    if (c_.setting(linear + "_dgrad").method == "bulk") return c_.bulk_wgrad(linear, g.gemm, g.bytes, start, g.name);
    return c_.regather_wgrad(linear, g.gemm, g.bytes, start, g.name);
  }

  // A column-parallel dgrad and its reduce-scatter (qkv_dgrad, fc1_dgrad).
  PerRank gemm_scatter(const GemmScatter& g, const PerRank& start) override {
    if (g.primitive != Primitive::reduce_scatter) return PassEmitter::gemm_scatter(g, start);
    const std::string linear = te_linear_of(g.name);
    if (c_.setting(linear + "_dgrad").method == "bulk")
      return c_.bulk_dgrad(linear, g.gemm, g.primitive, g.bytes, start, g.name);
    return c_.gemm_reduce_scatter(linear + "_dgrad", g.gemm, g.bytes, start, g.name);
  }

 private:
  TeComposer& c_;
  const Workload& w_;
};

// The per-name knobs given must name linears the workload has, and TE's pairing rules hold.
void check_per_name(const BuildContext& ctx) {
  const Workload& w = ctx.workload;
  const bool attention = w.kind == WorkloadKind::transformer || w.kind == WorkloadKind::attention_tpsp;
  const bool mlp = w.kind == WorkloadKind::transformer || w.kind == WorkloadKind::mlp_tpsp;
  for (auto it = ctx.params.begin(); it != ctx.params.end(); ++it) {
    const std::string name = gemm_name_of(it.key());
    if (name.empty()) continue;
    // Graphs are also built from code: the row's check, as BuildContext::param does for the scalars.
    static const std::vector<SchemeParam> rows = per_name_params();
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const SchemeParam& p) { return p.name == it.key(); });
    if (row == rows.end()) throw InputError("", 0, "params." + it.key(), "unknown per-GEMM-name knob of te_userbuffers");
    if (const auto why = check_param_value(*row, *it, ctx.hardware)) throw InputError("", 0, "params." + it.key(), *why);
    const bool has = name.starts_with("qkv_") || name.starts_with("proj_") ? attention : mlp;
    if (!has)
      throw InputError("", 0, "params." + it.key(),
                       fmt::format("a '{}' workload has no {} GEMM (TE's qkv_* / proj_* are attention's linears, "
                                   "fc1_* / fc2_* the MLP's)",
                                   workload_kind_name(w.kind), name));
    if (te_side(name) == TeSide::column_wgrad) {
      const std::string dgrad = name.substr(0, name.find('_')) + "_dgrad";
      if (te_gemm_setting(ctx.params, dgrad).method != "bulk")
        throw InputError("", 0, "params." + it.key(),
                         fmt::format("{} exists only when {} is bulk (TE initialize_ub: a dgrad that is not bulk "
                                     "overlaps its own reduce-scatter, and the wgrad entry must not be given)",
                                     name, dgrad));
    }
  }
}

// The names a workload runs (forward names; the backward's where it has one), TE's order.
std::vector<std::string> names_of(const Workload& w) {
  std::vector<std::string> out;
  const bool attention = w.kind == WorkloadKind::transformer || w.kind == WorkloadKind::attention_tpsp;
  const bool mlp = w.kind == WorkloadKind::transformer || w.kind == WorkloadKind::mlp_tpsp;
  for (const std::string& name : te_all_gemm_names()) {
    if (name.find("grad") != std::string::npos && !has_backward(w)) continue;
    if (name.starts_with("qkv_") || name.starts_with("proj_") ? attention : mlp) out.push_back(name);
  }
  return out;
}

// TE's atomic GEMM rules (the file's header), each refused at the key that set it: the name's own
// "<name>.atomic_gemm" when given, else the scalar "atomic_gemm".
void check_atomic(const BuildContext& ctx) {
  const nlohmann::json& params = ctx.params;
  const Workload& w = ctx.workload;
  auto key_for = [&](const std::string& name) {
    const std::string own = name + ".atomic_gemm";
    return "params." + (params.is_object() && params.contains(own) ? own : std::string("atomic_gemm"));
  };
  const bool scalar = scalar_knob<bool>(params, kAtomicGemm);
  std::vector<std::string> atomic_names;
  // gemm_collective's one GEMM takes the scalars, as an all-gather or a reduce-scatter name would.
  const auto* gc = std::get_if<GemmCollective>(&w.shape);
  const std::vector<std::string> names =
      w.kind == WorkloadKind::gemm_collective && gc
          ? std::vector<std::string>{gc->primitive == Primitive::all_gather ? "fc1_fprop" : "fc2_fprop"}
          : names_of(w);
  for (const std::string& name : names) {
    const std::string own = name + ".atomic_gemm";
    const bool given = params.is_object() && params.contains(own) && knob<bool>(params, own, false);
    const TeGemmSetting s = te_gemm_setting(params, name);
    if (given && (s.method == "bulk" || s.method.empty()))
      throw InputError("", 0, "params." + own,
                       fmt::format("{} is bulk: TransformerEngine has no atomic GEMM for a bulk overlap (initialize_ub "
                                   "add_ub, transformer_engine/pytorch/module/base.py, warns and sets atomic_gemm=False)",
                                   name));
    if (s.atomic_gemm) atomic_names.push_back(name);
  }
  if (atomic_names.empty()) {
    if (scalar)
      throw InputError("", 0, "params.atomic_gemm",
                       "no GEMM of this workload runs atomic under this method: TransformerEngine drops atomic_gemm for "
                       "a bulk overlap, and refuses pipeline for an all-gather, whose ring_exchange here pairs an "
                       "atomic GEMM only with an atomic ring_exchange reduce-scatter (initialize_ub add_ub, "
                       "transformer_engine/pytorch/module/base.py); use method ring_exchange or pipeline with a "
                       "reduce-scatter");
    return;
  }
  if (workload_dtype(w) != DType::fp8)
    throw InputError("", 0, key_for(atomic_names.front()),
                     fmt::format("atomic GEMM overlap is FP8 only (TransformerEngine initialize_ub add_ub, "
                                 "transformer_engine/pytorch/module/base.py: \"Atomic GEMM overlap supported only for "
                                 "FP8 GEMM\"); the workload's dtype is {}: set workload.dtype: fp8 or leave it false",
                                 dtype_name(workload_dtype(w))));
  // add_ub: an atomic ring_exchange all-gather and its reduce-scatter (ag_rs_pairs) both or neither.
  for (const auto& [ag, rs] : {std::pair<std::string, std::string>{"qkv_fprop", "proj_fprop"},
                               std::pair<std::string, std::string>{"fc1_fprop", "fc2_fprop"}}) {
    if (std::find(names.begin(), names.end(), ag) == names.end()) continue;
    const TeGemmSetting a = te_gemm_setting(params, ag), r = te_gemm_setting(params, rs);
    const bool atomic_re_a = a.atomic_gemm && a.method == "ring_exchange";
    const bool atomic_re_r = r.atomic_gemm && r.method == "ring_exchange";
    if (atomic_re_a != atomic_re_r)
      throw InputError("", 0, key_for(atomic_re_a ? ag : rs),
                       fmt::format("{} and {} form a TP block: TransformerEngine's atomic AG-GEMM with ring_exchange "
                                   "shuffles the chunk outputs and the RS-GEMM un-shuffles them, so either both use "
                                   "atomic_gemm with ring_exchange or neither (initialize_ub add_ub, "
                                   "transformer_engine/pytorch/module/base.py, ag_rs_pairs)",
                                   ag, rs));
  }
}

BuiltScheme build_per_name(const BuildContext& ctx) {
  const Workload& w = ctx.workload;
  validate_workload(w);
  check_per_name(ctx);
  check_atomic(ctx);
  GraphBuilder b(ctx);
  TeComposer c(b, ctx);
  std::string how;
  for (const std::string& name : te_all_gemm_names()) {
    const bool backward = name.find("grad") != std::string::npos;
    if (backward && !has_backward(w)) continue;
    const bool attention = name.starts_with("qkv_") || name.starts_with("proj_");
    if (attention ? !(w.kind == WorkloadKind::transformer || w.kind == WorkloadKind::attention_tpsp) : !(w.kind == WorkloadKind::transformer || w.kind == WorkloadKind::mlp_tpsp))
      continue;
    const TeGemmSetting s = c.setting(name);
    if (s.method.empty()) continue;
    how += fmt::format("{}{} {}", how.empty() ? "" : ", ", name, s.method);
    if (s.method == "pipeline") how += fmt::format(" x{}", s.num_splits);
    if (s.atomic_gemm) how += " atomic";
  }
  if (w.kind == WorkloadKind::gemm_collective) {
    // One GEMM and its collective (only the scalar knobs reach here: check_per_name refuses names):
    // the setting of a reduce-scatter name or of an all-gather name, which are the scalars'.
    const GemmCollective g = gemm_collective_shape(w);
    const GemmShape gm{g.m, g.n, g.k, g.dtype};
    const bool gather = g.primitive == Primitive::all_gather;
    const TeGemmSetting s = c.setting(gather ? "fc1_fprop" : "fc2_fprop");
    if (gather) c.all_gather_gemm("fc1_fprop", gm, g.k * dtype_bytes(g.dtype), true, {}, "ag");
    else c.gemm_reduce_scatter("fc2_fprop", gm, g.m * g.n * dtype_bytes(g.dtype), {}, "rs");
    return b.finish(fmt::format("TE userbuffers {}{}", s.method, s.atomic_gemm ? " atomic GEMM" : ""),
                    decomposition_bound_ps(ctx.hardware, w.tp, c.collectives(), false));
  }
  if (is_training_step(w)) {
    TePass pass(b, c, w);
    BuiltScheme built = build_training_step(ctx, pass, TrainingStepOptions{ColumnBackward::scheme,
                                                                           "TE userbuffers per GEMM name (" + how + ")"});
    built.bound_ps = decomposition_bound_ps(ctx.hardware, w.tp, c.collectives(), true);
    return built;
  }
  std::string layers;
  if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    compose_layers(
        t->layers,
        [&](const std::vector<OpId>& start, const std::string& prefix) {
          return c.forward(w, Block::attention, start, prefix);
        },
        [&](const std::vector<OpId>& start, const std::string& prefix) { return c.forward(w, Block::mlp, start, prefix); });
    layers = fmt::format("{} layers, ", t->layers);
  } else {
    c.forward(w, Block::whole, {}, "");
  }
  return b.finish(fmt::format("{}TE userbuffers per GEMM name ({})", layers, how),
                  decomposition_bound_ps(ctx.hardware, w.tp, c.collectives(), w.kind == WorkloadKind::transformer));
}

BuiltScheme build_te_userbuffers(const BuildContext& ctx) {
  const std::string method = ctx.text(kMethod);
  const int num_sm = ctx.integer(kNumSm);
  (void)ctx.integer(kCgaSize);  // checked; exported by `tune --export te-userbuffers`, not timed
  const bool atomic = ctx.boolean(kAtomicGemm);
  ColumnBackward column = column_backward(ctx);
  if (method == "bulk") column = ColumnBackward::bulk;
  // The bulk backward's collectives are TE's userbuffers kernels of num_sm CTAs (CommOverlap::
  // bulk_overlap launches its reduce-scatter / all-gather with _num_comm_sm): the composed build
  // gives them num_sm (the training-step driver's own bulk form runs NCCL's channel count).
  // The atomic GEMM (one GEMM signalling per chunk) exists only in the composition name by name.
  if (atomic || te_has_per_name(ctx.params) || (has_backward(ctx.workload) && column == ColumnBackward::bulk))
    return build_per_name(ctx);
  const bool margin = ctx.boolean(kSetSmMargin);
  const int budget = margin ? ctx.hardware.gpu.sm_count - num_sm : 0;
  const std::string margin_text = margin ? fmt::format(", set_sm_margin (GEMM on {} SMs)", budget) : "";

  if (method == "ring_exchange") {
    LoopedEinsumOptions o;
    o.sm_transport = !ctx.boolean(kUseCe);
    o.streams = 2;  // TE alternates the chunk GEMMs over its _stream_compute streams
    o.copy_sms = num_sm;
    o.gemm_sm_budget = budget;
    o.column = column;
    o.label = "TE userbuffers ring_exchange";
    return build_looped_einsum(ctx, o);
  }
  SlicedLayerOptions o;
  o.chunks = method == "pipeline" ? ctx.integer(kNumSplits) : 1;
  o.column = column;
  SliceResources res;
  res.gemm_sm_budget = budget;
  res.comm_channels = num_sm;
  if (method == "pipeline") res.last_reduce_scatter_channels = std::min(kUbMaxSm, ctx.hardware.gpu.sm_count - 1);
  BuiltScheme built = build_sliced_layers(ctx, o, res);
  built.reason = method == "pipeline"
                     ? fmt::format("TE userbuffers pipeline, {} splits, reduce-scatter on {} SMs{}; {}", o.chunks,
                                   num_sm,
                                   margin_text, built.reason)
                     : fmt::format("TE userbuffers bulk (forward unoverlapped){}; {}", margin_text, built.reason);
  return built;
}

std::vector<SchemeParam> te_params() {
  std::vector<SchemeParam> out = {kMethod,   kNumSm,     kCgaSize, kSetSmMargin,
                                  kAtomicGemm, kNumSplits, kUseCe,   column_backward_param()};
  for (SchemeParam& p : per_name_params()) out.push_back(std::move(p));
  return out;
}

}  // namespace

TeSide te_side(const std::string& name) {
  if (name == "qkv_fprop" || name == "fc1_fprop" || name == "proj_dgrad" || name == "fc2_dgrad")
    return TeSide::all_gather;
  if (name == "proj_fprop" || name == "fc2_fprop") return TeSide::reduce_scatter;
  if (name == "qkv_dgrad" || name == "fc1_dgrad") return TeSide::column_dgrad;
  return TeSide::column_wgrad;
}

const std::vector<std::string>& te_all_gemm_names() {
  static const std::vector<std::string> names = {"qkv_fprop", "proj_fprop", "fc1_fprop",  "fc2_fprop",
                                                 "qkv_dgrad", "qkv_wgrad",  "proj_dgrad", "fc1_dgrad",
                                                 "fc1_wgrad", "fc2_dgrad"};
  return names;
}

bool te_has_per_name(const nlohmann::json& params) {
  if (!params.is_object()) return false;
  for (auto it = params.begin(); it != params.end(); ++it)
    if (!gemm_name_of(it.key()).empty()) return true;
  return false;
}

TeGemmSetting te_gemm_setting(const nlohmann::json& params, const std::string& name) {
  const std::string method = scalar_knob<std::string>(params, kMethod);
  const bool bulk_backward = method == "bulk" || scalar_knob<std::string>(params, column_backward_param()) == "bulk";
  TeGemmSetting s;
  const std::string own = name + ".method";
  switch (te_side(name)) {
    case TeSide::all_gather:
      s.inherited_pipeline = method == "pipeline" && !(params.is_object() && params.contains(own));
      s.method = knob<std::string>(params, own, method == "pipeline" ? "ring_exchange" : method);
      break;
    case TeSide::reduce_scatter: s.method = knob<std::string>(params, own, method); break;
    case TeSide::column_dgrad: s.method = knob<std::string>(params, own, bulk_backward ? "bulk" : method); break;
    case TeSide::column_wgrad: {
      const std::string dgrad = name.substr(0, name.find('_')) + "_dgrad";
      s.method = te_gemm_setting(params, dgrad).method == "bulk" ? "bulk" : "";
      break;
    }
  }
  // Each "<name>.<knob>" falls back to the scalar knob, and that to its row's default.
  const std::string prefix = name + ".";
  s.num_sm = knob<int>(params, prefix + kNumSm.name, scalar_knob<int>(params, kNumSm));
  s.cga_size = knob<int>(params, prefix + kCgaSize.name, scalar_knob<int>(params, kCgaSize));
  s.set_sm_margin = knob<bool>(params, prefix + kSetSmMargin.name, scalar_knob<bool>(params, kSetSmMargin));
  s.num_splits = knob<int>(params, prefix + kNumSplits.name, scalar_knob<int>(params, kNumSplits));
  s.use_ce = knob<bool>(params, prefix + kUseCe.name, scalar_knob<bool>(params, kUseCe));
  // The scalar reaches a name only where TE would keep it (add_ub drops it for bulk; an all-gather
  // under the scalar pipeline runs ring_exchange, whose atomic form needs an atomic ring_exchange pair).
  const bool scalar_atomic = scalar_knob<bool>(params, kAtomicGemm) && s.method != "bulk" && !s.method.empty() &&
                             !s.inherited_pipeline;
  s.atomic_gemm = knob<bool>(params, prefix + kAtomicGemm.name, scalar_atomic);
  return s;
}

SchemeInfo make_te_userbuffers_scheme() {
  return {.name = "te_userbuffers",
          .source = "TransformerEngine userbuffers (transformer_engine/pytorch/module/base.py initialize_ub; "
                    "common/comm_gemm_overlap/comm_gemm_overlap.cpp)",
          .summary = "TE's comm-GEMM overlap of TP+SP linears: ring_exchange (P2P chunks), pipeline (num_splits "
                     "chunks, reduce-scatter on num_sm SMs) or bulk, with TE's knobs",
          .params = te_params(),
          .backward = "ring_exchange: dY all-gather -> dgrad and dgrad -> reduce-scatter as P2P chunk exchanges; "
                      "pipeline: both cut into num_splits; bulk (or column_backward bulk): the input's all-gather "
                      "beside dgrad and dgrad's reduce-scatter beside wgrad (TE's qkv/fc1 dgrad/wgrad default)",
          .applies = applies_to_tp_sp_linears,
          .build = build_te_userbuffers};
}

}  // namespace overlap::sim
