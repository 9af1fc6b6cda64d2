// Training steps (workload.pass / recompute / parallel; docs/guide/training.md): the closed forms that
// hold exactly because the schedule is known, on Llama-3-70B layers (Meta, "The Llama 3 Herd of
// Models", Table 3: d_model 8192, FFN 28672, 64 heads, 8 KV heads) at TP = 8 with sequence parallelism.
//
// Every expected number below is written from the model's dimensions and the Megatron-LM sequence-
// parallel backward (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
// Models", Sec. 4.2.2) or from ZeRO's communication volumes (Rajbhandari et al., Sec. 7), never read
// back from the code under test.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/schemes/ideal_profile.hpp"
#include "tests/support/cli_run.hpp"

using namespace overlap;
using namespace overlap::sim;
using overlap::test::cli;
using overlap::test::CliResult;

namespace {

const std::string kSource = OVERLAP_SOURCE_DIR;
const std::string kHardwareDir = kSource + "/scenarios/hardware";

// Llama-3-70B at TP = 8: per rank, the weights of one layer's four linears (Table 3's shapes split as
// Megatron splits them: column-parallel QKV and FC1 shard their outputs, row-parallel out_proj and FC2
// their inputs). Head dim 128; 8 query heads and 1 KV head per rank.
constexpr std::int64_t kTokens = 8192;
constexpr std::int64_t kDModel = 8192;
constexpr std::int64_t kQkvParams = kDModel * (8 + 2 * 1) * 128;  // 10,485,760
constexpr std::int64_t kOutParams = (8 * 128) * kDModel;          // 8,388,608
constexpr std::int64_t kFc1Params = kDModel * 2 * (28672 / 8);    // SwiGLU: gate and up, 58,720,256
constexpr std::int64_t kFc2Params = (28672 / 8) * kDModel;        // 29,360,128
constexpr std::int64_t kLayerParams = kQkvParams + kOutParams + kFc1Params + kFc2Params;  // 106,954,752
static_assert(kLayerParams * 8 == 855'638'016);  // one layer of the 70B model, all ranks
// nccl-tests S of every TP collective of a TP + SP layer: the whole token x d_model activation, bf16.
constexpr Bytes kActivation = kTokens * kDModel * 2;
constexpr double kMiB = 1024.0 * 1024.0;

Workload llama70b(int layers, Pass pass, Recompute recompute = Recompute::none, DataParallel dp = {}) {
  Workload w;
  w.kind = WorkloadKind::transformer;
  w.tp = 8;
  w.shape = Transformer{.model = "llama3-70b", .layers = layers, .batch = 1, .seq = kTokens, .d_model = kDModel,
                        .d_ffn = 28672, .heads = 64, .kv_heads = 8, .dtype = DType::bf16};
  w.training = Training{pass, recompute, dp};
  return w;
}

DataParallel data_parallel(int dp, Sharding s, double bucket_mb = 25, int prefetch = 1) {
  DataParallel d;
  d.dp = dp;
  d.fsdp = s;
  d.bucket_mb = bucket_mb;
  d.prefetch = prefetch;
  return d;
}

const HardwareProfile& h100() {
  static const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  return hw;
}

const HardwareProfile& h100_two_nodes() {
  static const HardwareProfile hw = load_profile("h100-2node-ib400", kHardwareDir);
  return hw;
}

SchemeResult run_scheme(const std::string& name, const Workload& w, const HardwareProfile& hw) {
  const SchemeInfo* s = find_scheme(name);
  REQUIRE(s != nullptr);
  static const nlohmann::json params = nlohmann::json::object();
  return evaluate(*s, BuildContext{w, hw, params, Fidelity::curve});
}

struct CommunicatorTotals {
  Bytes bytes = 0;
  int calls = 0;
  std::map<std::string, int> calls_by_primitive;
  std::map<std::string, Bytes> bytes_by_primitive;
  int calls_of(const std::string& primitive) const {
    const auto it = calls_by_primitive.find(primitive);
    return it == calls_by_primitive.end() ? 0 : it->second;
  }
  Bytes bytes_of(const std::string& primitive) const {
    const auto it = bytes_by_primitive.find(primitive);
    return it == bytes_by_primitive.end() ? 0 : it->second;
  }
};

CommunicatorTotals totals(const SchemeResult& r, const std::string& communicator) {
  CommunicatorTotals t;
  for (const CollectiveFigure& c : r.collectives) {
    if (c.communicator != communicator) continue;
    t.bytes += c.bytes;
    ++t.calls;
    ++t.calls_by_primitive[c.primitive];
    t.bytes_by_primitive[c.primitive] += c.bytes;
  }
  return t;
}

double gemm_flops(const RankGemm& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
}

// `text` with its `pass: step` line replaced.
std::string replace_pass(const std::string& text, const std::string& with) {
  std::string out = text;
  const auto at = out.find("pass: step");
  REQUIRE(at != std::string::npos);
  return out.replace(at, std::string("pass: step").size(), with);
}

// The schemes that run a training step (a backward form) and apply to `w`.
std::vector<const SchemeInfo*> step_schemes(const Workload& w) {
  std::vector<const SchemeInfo*> out;
  for (const SchemeInfo& s : scheme_registry())
    if (!s.backward.empty() && (!s.applies || s.applies(w))) out.push_back(&s);
  return out;
}

}  // namespace

TEST_CASE("a backward's GEMMs are twice the forward's FLOPs, dgrad and wgrad each once", "[training][closed_form]") {
  // Forward GEMMs of a TP + SP layer on one rank: every token through the rank's weight shard, 2 FLOPs
  // per multiply-add: 2 x tokens x parameters. The backward computes dX = dY W^T and dW = X^T dY for
  // each, the same count each (Narayanan et al., Sec. 5.1).
  const Workload w = llama70b(1, Pass::step);
  double backward_gemm = 0, dgrad = 0, wgrad = 0, core_backward = 0, core_forward = 0, forward_all = 0;
  for (const Block block : layer_blocks(w)) {
    forward_all += forward_flops(w, block);
    for (const BackwardStep& s : backward_steps(w, block)) {
      if (s.kind == BackwardStep::Kind::linear) {
        INFO(s.name);
        CHECK(s.linear.dgrad.m == kTokens);  // dgrad keeps the tokens as its rows
        CHECK(s.linear.wgrad.k == kTokens);  // wgrad reduces over them
        dgrad += gemm_flops(s.linear.dgrad);
        wgrad += gemm_flops(s.linear.wgrad);
      }
      if (s.kind == BackwardStep::Kind::flops) {
        core_backward += s.flops;
        core_forward += s.recompute_flops;
      }
    }
  }
  backward_gemm = dgrad + wgrad;
  const double forward_gemm = 2.0 * kTokens * kLayerParams;
  CHECK(dgrad == forward_gemm);
  CHECK(wgrad == forward_gemm);
  CHECK(backward_gemm == 2 * forward_gemm);
  // Core attention (causal, 8 heads x 128 per rank): QK^T and PV, 2 x s^2 x d_head each per head,
  // halved by the mask; its backward is FlashAttention-2's 2.5x (Dao 2023, Sec. 3.1.2).
  const double core = 4.0 * kTokens * kTokens * 8 * 128 / 2;
  CHECK(core_forward == core);
  CHECK(core_backward == 2.5 * core);
  CHECK(forward_all == forward_gemm + core);

  // The same 2x for every other layer kind with GEMMs.
  const auto check_kind = [](const Workload& lw) {
    INFO(workload_kind_name(lw.kind));
    double fwd = 0, bwd = 0, core = 0;
    for (const Block block : layer_blocks(lw)) {
      fwd += forward_flops(lw, block);
      for (const BackwardStep& s : backward_steps(lw, block)) {
        if (s.kind == BackwardStep::Kind::linear) bwd += gemm_flops(s.linear.dgrad) + gemm_flops(s.linear.wgrad);
        core += s.recompute_flops;
      }
    }
    CHECK(bwd == 2 * (fwd - core));
  };
  for (const Primitive p : {Primitive::all_reduce, Primitive::reduce_scatter, Primitive::all_gather, Primitive::all_to_all})
    check_kind(sim::test::gemm_workload(8, p, 4096, 2048, 8192));
  Workload mlp;
  mlp.kind = WorkloadKind::mlp_tpsp;
  mlp.tp = 8;
  mlp.shape = MlpTpSp{.tokens = kTokens, .d_model = kDModel, .d_ffn = 28672};
  check_kind(mlp);
  Workload att;
  att.kind = WorkloadKind::attention_tpsp;
  att.tp = 8;
  att.shape = AttentionTpSp{.batch = 1, .seq = kTokens, .d_model = kDModel, .heads = 64, .kv_heads = 8};
  check_kind(att);
}

TEST_CASE("no_overlap: a step is its forward run alone plus its backward run alone", "[training][closed_form]") {
  // no_overlap runs every op of a rank one after another, and the backward's first op waits for the
  // forward's last: on a node with no launch cost the backward starts exactly where the forward ends,
  // as it starts at 0 when run alone. Exact to the picosecond.
  const HardwareProfile hw = sim::test::ideal_profile(8);
  for (const Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
    INFO("recompute " << recompute_name(rc));
    const SchemeResult fwd = run_scheme("no_overlap", llama70b(2, Pass::forward), hw);
    const SchemeResult bwd = run_scheme("no_overlap", llama70b(2, Pass::backward, rc), hw);
    const SchemeResult step = run_scheme("no_overlap", llama70b(2, Pass::step, rc), hw);
    REQUIRE(step.step.present);
    CHECK(step.latency_ps == fwd.latency_ps + bwd.latency_ps);
    CHECK(step.compute_only_ps == fwd.compute_only_ps + bwd.compute_only_ps);
    CHECK(step.step.forward.latency_ps == fwd.latency_ps);
    CHECK(step.step.backward.latency_ps == bwd.latency_ps);
    CHECK(step.step.forward.compute_only_ps == fwd.compute_only_ps);
    CHECK(step.step.backward.compute_only_ps == bwd.compute_only_ps);
    // Nothing is hidden: every collective is exposed in full, in the step as alone.
    CHECK(step.exposed_comm_ps == fwd.exposed_comm_ps + bwd.exposed_comm_ps);
  }
  // The same for every other layer kind with a backward.
  std::vector<Workload> kinds;
  for (const Primitive p : {Primitive::all_reduce, Primitive::reduce_scatter, Primitive::all_gather, Primitive::all_to_all})
    kinds.push_back(sim::test::gemm_workload(8, p, 4096, 2048, 8192));
  Workload mlp;
  mlp.kind = WorkloadKind::mlp_tpsp;
  mlp.tp = 8;
  mlp.shape = MlpTpSp{.tokens = kTokens, .d_model = kDModel, .d_ffn = 28672};
  kinds.push_back(mlp);
  Workload att;
  att.kind = WorkloadKind::attention_tpsp;
  att.tp = 8;
  att.shape = AttentionTpSp{.batch = 1, .seq = kTokens, .d_model = kDModel, .heads = 64, .kv_heads = 8};
  kinds.push_back(att);
  Workload ulysses;
  ulysses.kind = WorkloadKind::attention_ulysses;
  ulysses.tp = 8;
  ulysses.shape = AttentionUlysses{.batch = 1, .seq = kTokens, .d_model = kDModel, .heads = 64};
  kinds.push_back(ulysses);
  for (Workload w : kinds) {
    INFO(workload_kind_name(w.kind));
    w.training.pass = Pass::forward;
    const SchemeResult fwd = run_scheme("no_overlap", w, hw);
    w.training.pass = Pass::backward;
    const SchemeResult bwd = run_scheme("no_overlap", w, hw);
    w.training.pass = Pass::step;
    const SchemeResult step = run_scheme("no_overlap", w, hw);
    CHECK(step.latency_ps == fwd.latency_ps + bwd.latency_ps);
    CHECK(step.compute_only_ps == fwd.compute_only_ps + bwd.compute_only_ps);
  }
}

TEST_CASE("no_overlap on H100: the step's forward part is the forward alone; the backward differs by launch cost only",
          "[training][closed_form]") {
  // On a real profile the forward part of a step is still exactly the forward alone (its ops and their
  // order do not change). The backward is not: run alone, it starts with the host idle, so its first op
  // waits for one host launch (host_us) where, inside the step, the host issued it while the forward ran
  // and it follows the forward's last kernel after the device-side gap (gap_us) only. So the step is
  // shorter than forward + backward alone by exactly host_us - gap_us. In the compute-only re-run the
  // backward's first op (dY's all-gather) takes no time, so the dgrad behind it waits for a second host
  // launch when the backward runs alone: 2 host_us - gap_us. (The profile's collectives cost the host one
  // launch: collective_host_us = 0.)
  const HardwareProfile& hw = h100();
  REQUIRE(hw.launch.collective_host_us == 0);
  const SchemeResult fwd = run_scheme("no_overlap", llama70b(2, Pass::forward), hw);
  const SchemeResult bwd = run_scheme("no_overlap", llama70b(2, Pass::backward), hw);
  const SchemeResult step = run_scheme("no_overlap", llama70b(2, Pass::step), hw);
  CHECK(step.step.forward.latency_ps == fwd.latency_ps);
  CHECK(step.step.forward.compute_only_ps == fwd.compute_only_ps);
  const Ps host = ps_from_us(hw.launch.host_us), gap = ps_from_us(hw.launch.gap_us);
  INFO("forward " << fwd.latency_ps << " ps, backward " << bwd.latency_ps << " ps, step " << step.latency_ps << " ps");
  CHECK(fwd.latency_ps + bwd.latency_ps - step.latency_ps == host - gap);
  CHECK(fwd.compute_only_ps + bwd.compute_only_ps - step.compute_only_ps == 2 * host - gap);
}

TEST_CASE("TP bytes of a step: forward + backward, per layer 4 + 6 activations; full recompute adds the forward's 4",
          "[training][bytes]") {
  // Forward of a TP + SP layer: all-gather and reduce-scatter around attention and around the MLP, 4 x S.
  // Backward (Korthikanti et al. Sec. 4.2.2): out_proj and FC2 all-gather dY (2 S); QKV and FC1
  // reduce-scatter dX and all-gather their input again for wgrad (4 S): 6 x S. Full recomputation runs
  // the forward again, collectives included; selective redoes core attention, which has none.
  const HardwareProfile& hw = h100();
  constexpr int layers = 2;
  for (const std::string scheme : {"no_overlap", "data_slicing"}) {
    INFO(scheme);
    const CommunicatorTotals fwd = totals(run_scheme(scheme, llama70b(layers, Pass::forward), hw), "tp");
    const CommunicatorTotals bwd = totals(run_scheme(scheme, llama70b(layers, Pass::backward), hw), "tp");
    const SchemeResult step = run_scheme(scheme, llama70b(layers, Pass::step), hw);
    const CommunicatorTotals both = totals(step, "tp");
    CHECK(fwd.bytes == 4 * kActivation * layers);
    CHECK(bwd.bytes == 6 * kActivation * layers);
    CHECK(both.bytes == fwd.bytes + bwd.bytes);
    CHECK(both.bytes_of("all_gather") == 6 * kActivation * layers);
    CHECK(both.bytes_of("reduce_scatter") == 4 * kActivation * layers);
    CHECK(totals(step, "dp").calls == 0);  // dp = 1: no data-parallel traffic
    const CommunicatorTotals selective = totals(run_scheme(scheme, llama70b(layers, Pass::step, Recompute::selective), hw), "tp");
    CHECK(selective.bytes == both.bytes);
    CHECK(selective.calls == both.calls);
    const CommunicatorTotals full = totals(run_scheme(scheme, llama70b(layers, Pass::step, Recompute::full), hw), "tp");
    CHECK(full.bytes == both.bytes + fwd.bytes);
    CHECK(full.calls == both.calls + fwd.calls);
  }
  // no_overlap issues each collective whole: 4 + 6 calls per layer.
  const CommunicatorTotals calls = totals(run_scheme("no_overlap", llama70b(layers, Pass::step), hw), "tp");
  CHECK(calls.calls == 10 * layers);
}

TEST_CASE("DP bytes: DDP all-reduces every gradient once, in buckets of bucket_mb", "[training][bytes][dp]") {
  // fp32 gradients (grad_dtype default): 4 bytes per parameter of the rank's shard, reduced once per step.
  const HardwareProfile& hw = h100_two_nodes();
  constexpr int layers = 2;
  const Bytes all_grads = kLayerParams * layers * 4;
  for (const auto& [bucket_mb, buckets] : std::vector<std::pair<double, int>>{
           // Smaller than any weight's gradient: every linear's gradient is a bucket of its own.
           {0.001, 4 * layers},
           // Exactly one layer's gradients (106,954,752 x 4 B = 408 MiB): one bucket per layer.
           {kLayerParams * 4 / kMiB, layers},
           // Larger than the model: one bucket, reduced after the last gradient.
           {1048576, 1}}) {
    INFO("bucket_mb " << bucket_mb);
    for (const auto* s : step_schemes(llama70b(layers, Pass::step))) {
      INFO(s->name);
      const SchemeResult r = run_scheme(s->name, llama70b(layers, Pass::step, Recompute::none,
                                                          data_parallel(2, Sharding::none, bucket_mb)), hw);
      const CommunicatorTotals dp = totals(r, "dp");
      CHECK(dp.bytes == all_grads);
      CHECK(dp.calls == buckets);
      CHECK(dp.calls_of("all_reduce") == buckets);
      for (const CollectiveFigure& c : r.collectives)
        if (c.communicator == "dp") CHECK(c.ranks == 2);
    }
  }
  // A bucket per linear: the first bucket reduced is the last layer's FC2 (the backward's first wgrad).
  const SchemeResult r = run_scheme("no_overlap", llama70b(layers, Pass::step, Recompute::none,
                                                           data_parallel(2, Sharding::none, 0.001)), hw);
  const auto first = std::find_if(r.collectives.begin(), r.collectives.end(),
                                  [](const CollectiveFigure& c) { return c.communicator == "dp"; });
  REQUIRE(first != r.collectives.end());
  CHECK(first->bytes == kFc2Params * 4);
}

TEST_CASE("DP bytes: ZeRO-3 gathers every layer's parameters twice and reduce-scatters its gradients once",
          "[training][bytes][dp]") {
  // FSDP (ZeRO stage 3, Rajbhandari et al. Sec. 7: 3 x parameters of traffic against DDP's 2 x): bf16
  // parameters all-gathered before each layer's forward and again before its backward, fp32 gradients
  // reduce-scattered after its backward. The prefetch depth moves the gathers earlier, never adds any.
  const HardwareProfile& hw = h100_two_nodes();
  constexpr int layers = 3;
  for (const int prefetch : {0, 1, 2}) {
    for (const auto* s : step_schemes(llama70b(layers, Pass::step))) {
      INFO(s->name << " prefetch " << prefetch);
      const SchemeResult r = run_scheme(
          s->name, llama70b(layers, Pass::step, Recompute::none, data_parallel(2, Sharding::zero3, 25, prefetch)), hw);
      const CommunicatorTotals dp = totals(r, "dp");
      CHECK(dp.calls_of("all_gather") == 2 * layers);
      CHECK(dp.bytes_of("all_gather") == 2 * layers * kLayerParams * 2);
      CHECK(dp.calls_of("reduce_scatter") == layers);
      CHECK(dp.bytes_of("reduce_scatter") == layers * kLayerParams * 4);
      CHECK(dp.calls_of("all_reduce") == 0);
      CHECK(dp.calls == 3 * layers);
    }
  }
  // ZeRO-1 / ZeRO-2 (the distributed optimizer): the parameters gathered once, before the forward, and
  // the gradients reduce-scattered in buckets: with one-layer buckets, a gather and a reduce-scatter per layer.
  for (const Sharding z : {Sharding::zero1, Sharding::zero2}) {
    INFO(sharding_name(z));
    const SchemeResult r = run_scheme(
        "no_overlap", llama70b(layers, Pass::step, Recompute::none, data_parallel(2, z, kLayerParams * 4 / kMiB)), hw);
    const CommunicatorTotals dp = totals(r, "dp");
    CHECK(dp.calls_of("all_gather") == layers);
    CHECK(dp.bytes_of("all_gather") == layers * kLayerParams * 2);
    CHECK(dp.calls_of("reduce_scatter") == layers);
    CHECK(dp.bytes_of("reduce_scatter") == layers * kLayerParams * 4);
  }
  // A forward pass with ZeRO-3 gathers the parameters once and reduces nothing.
  const CommunicatorTotals fwd = totals(
      run_scheme("no_overlap", llama70b(layers, Pass::forward, Recompute::none, data_parallel(2, Sharding::zero3)), hw), "dp");
  CHECK(fwd.calls == layers);
  CHECK(fwd.bytes == layers * kLayerParams * 2);
}

TEST_CASE("step figures: MFU, tokens per second, per-pass and per-communicator exposed time", "[training][metrics]") {
  const HardwareProfile& hw = h100_two_nodes();
  constexpr int layers = 2;
  const double core = 4.0 * kTokens * kTokens * 8 * 128 / 2;
  const double forward_flops = layers * (2.0 * kTokens * kLayerParams + core);
  for (const int dp : {1, 2}) {
    for (const Recompute rc : {Recompute::none, Recompute::full}) {
      const DataParallel par = dp > 1 ? data_parallel(dp, Sharding::zero3) : DataParallel{};
      for (const auto* s : step_schemes(llama70b(layers, Pass::step, rc, par))) {
        INFO(s->name << " dp " << dp << " recompute " << recompute_name(rc));
        const SchemeResult r = run_scheme(s->name, llama70b(layers, Pass::step, rc, par), hw);
        const StepFigures& f = r.step;
        REQUIRE(f.present);
        CHECK(f.pass == "step");
        // Model FLOPs count the forward once and the backward twice, never the recomputation (PaLM,
        // Appendix B), so recompute full leaves them as they are.
        CHECK(f.model_flops == Approx(3 * forward_flops).epsilon(1e-12));
        const double seconds = static_cast<double>(r.latency_ps) * 1e-12;
        CHECK(f.mfu == Approx(f.model_flops / (seconds * 989e12)).epsilon(1e-12));
        CHECK(f.mfu > 0);
        CHECK(f.mfu < 1);
        CHECK(f.tokens_per_s == Approx(kTokens * dp / seconds).epsilon(1e-12));
        // The passes split the step, and their exposed parts split its exposed time.
        CHECK(f.forward.latency_ps + f.backward.latency_ps == r.latency_ps);
        CHECK(f.forward.compute_only_ps + f.backward.compute_only_ps == r.compute_only_ps);
        CHECK(f.forward.exposed_comm_ps + f.backward.exposed_comm_ps == r.exposed_comm_ps);
        if (dp == 1) {
          // One communicator: TP's exposed time is the whole exposed time.
          CHECK(f.exposed_tp_ps == r.exposed_comm_ps);
          CHECK(f.exposed_dp_ps == 0);
        } else {
          // Each communicator's exposed time is what removing it alone saves: at most what removing both
          // saves, and at least 0.
          CHECK(f.exposed_tp_ps >= 0);
          CHECK(f.exposed_dp_ps >= 0);
          CHECK(f.exposed_tp_ps <= r.exposed_comm_ps);
          CHECK(f.exposed_dp_ps <= r.exposed_comm_ps);
          CHECK(f.exposed_dp_ps > 0);  // prefetch 1 still leaves the first layer's gather in front
        }
      }
    }
  }
}

TEST_CASE("no_overlap with ZeRO-3 and no prefetch: the DP gathers in front of every layer are exposed", "[training][dp]") {
  // prefetch 0: each layer gathers its parameters when it starts, and no_overlap's layer waits for them,
  // so the step is longer than with prefetch 1 and its DP exposed time is larger.
  const HardwareProfile& hw = h100_two_nodes();
  const SchemeResult none = run_scheme("no_overlap", llama70b(3, Pass::step, Recompute::none, data_parallel(2, Sharding::zero3, 25, 0)), hw);
  const SchemeResult ahead = run_scheme("no_overlap", llama70b(3, Pass::step, Recompute::none, data_parallel(2, Sharding::zero3, 25, 1)), hw);
  CHECK(none.latency_ps > ahead.latency_ps);
  CHECK(none.step.exposed_dp_ps > ahead.step.exposed_dp_ps);
}

TEST_CASE("training keys are refused through the loader and the CLI, exit 2", "[training][errors]") {
  ScenarioOptions o;
  o.hardware_dir = kHardwareDir;
  const std::string base =
      "hardware: h100-sxm-8x-nvswitch\n"  // 1
      "workload:\n"                       // 2
      "  kind: transformer\n"             // 3
      "  tp: 8\n"                         // 4
      "  model: llama3-70b\n"             // 5
      "  layers: 2\n"                     // 6
      "  batch: 1\n"                      // 7
      "  seq: 8192\n"                     // 8
      "  pass: step\n";                   // 9
  const auto error_of = [&](const std::string& text) -> InputError {
    try {
      (void)load_scenario_text(text, "test.yaml", o);
    } catch (const InputError& e) {
      return e;
    }
    FAIL("loaded: " << text);
    return InputError("", 0, "", "");
  };
  REQUIRE_NOTHROW(load_scenario_text(base, "test.yaml", o));

  // dp x tp larger than the profile's GPUs, with the numbers.
  const InputError too_many = error_of(base + "  parallel: {dp: 2}\n");
  CHECK(too_many.key_path() == "workload.parallel.dp");
  CHECK_THAT(std::string(too_many.what()), Catch::Contains("2 x 8 = 16 GPUs") && Catch::Contains("has 8"));

  // A bucket for ZeRO-3, which reduces per layer.
  o.sets = {"hardware=h100-2node-ib400"};
  const InputError bucket = error_of(base + "  parallel: {dp: 2, fsdp: zero3, bucket_mb: 50}\n");
  CHECK(bucket.key_path() == "workload.parallel.bucket_mb");
  CHECK(bucket.line() == 10);
  // A prefetch without ZeRO-3, a sharding with one replica: keys that would do nothing.
  CHECK(error_of(base + "  parallel: {dp: 2, prefetch: 2}\n").key_path() == "workload.parallel.prefetch");
  CHECK(error_of(base + "  parallel: {dp: 1, fsdp: zero3}\n").key_path() == "workload.parallel.fsdp");
  CHECK(error_of(base + "  parallel: {dp: 2, fsdp: zero4}\n").key_path() == "workload.parallel.fsdp");
  CHECK(error_of(base + "  parallel: {dp: 2, bucket_mb: 0}\n").key_path() == "workload.parallel.bucket_mb");
  CHECK(error_of(base + "  parallel: {dp: 2, dpp: 2}\n").key_path() == "workload.parallel.dpp");
  o.sets.clear();
  CHECK(error_of(replace_pass(base, "pass: steps")).key_path() == "workload.pass");
  CHECK(error_of(base + "  recompute: partial\n").key_path() == "workload.recompute");
  CHECK(error_of(replace_pass(base, "pass: forward") + "  recompute: full\n").key_path() == "workload.recompute");

  // A scheme with no backward form, named for a step: refused, never run as no_overlap.
  std::vector<std::string> without;
  for (const SchemeInfo& s : scheme_registry())
    if (s.backward.empty()) without.push_back(s.name);
  REQUIRE(!without.empty());
  for (const std::string& name : without) {
    INFO(name);
    const InputError e = error_of(base + "schemes: [" + name + "]\n");
    CHECK(e.key_path() == "schemes.0");
    CHECK_THAT(std::string(e.what()), Catch::Contains("has no backward form"));
  }
  // The same through the program, on the shipped step scenario.
  const std::string shipped = kSource + "/scenarios/llama3-70b-tp8-train-step.yaml";
  const CliResult refused = cli({"run", shipped, "--scheme", without.front()});
  CHECK(refused.rc == 2);
  CHECK_THAT(refused.err, Catch::Contains("'" + without.front() + "'"));
  const CliResult dp = cli({"run", shipped, "--set", "workload.parallel.dp=2"});
  CHECK(dp.rc == 2);
  CHECK_THAT(dp.err, Catch::Contains("workload.parallel.dp") && Catch::Contains("16 GPUs"));
  const CliResult zero3_bucket = cli({"run", kSource + "/scenarios/llama3-70b-tp8xdp2-fsdp-step.yaml", "--set",
                                      "workload.parallel.bucket_mb=25"});
  CHECK(zero3_bucket.rc == 2);
  CHECK_THAT(zero3_bucket.err, Catch::Contains("workload.parallel.bucket_mb"));
}

TEST_CASE("the shipped step scenarios: every scheme with a backward runs, and only those", "[training][shipped]") {
  ScenarioOptions o;
  o.hardware_dir = kHardwareDir;
  for (const std::string file : {"llama3-70b-tp8-train-step", "llama3-70b-tp8xdp2-fsdp-step"}) {
    INFO(file);
    const Scenario sc = load_scenario_file(kSource + "/scenarios/" + file + ".yaml", o);
    CHECK(sc.workload.training.pass == Pass::step);
    CHECK(layer_count(sc.workload) == 80);
    CHECK(sc.workload.tp * sc.workload.training.parallel.dp <= sc.hardware.fabric.num_gpus);
    std::vector<std::string> listed, expected;
    for (const SchemeSpec& s : sc.schemes) listed.push_back(s.name);
    for (const auto* s : step_schemes(sc.workload)) expected.push_back(s->name);
    CHECK(listed == expected);
    CHECK(std::find(listed.begin(), listed.end(), "no_overlap") != listed.end());
    CHECK(std::find(listed.begin(), listed.end(), "data_slicing") != listed.end());
  }
}
