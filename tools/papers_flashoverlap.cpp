// FlashOverlap's published results (flashoverlap-paper; line numbers of
// /work/shared/seeds/flashoverlap-paper.txt) against the flashoverlap-*.yaml paper scenarios on the
// built-in RTX 4090 and A800 profiles. Operator level: the GEMM and its collective, without the
// RMSNorm after it ("the total latency of the computation and the communication", Sec. 6.2), over the
// GEMM sizes of Table 3 (line 319) and the GPU counts of A.5.1 (line 541: 2, 4 and 8).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"
#include "cost_model/collective_primitive.hpp"
#include "sim/schemes/flashoverlap.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tools/papers.hpp"

namespace overlap::tools::papers {

namespace {

constexpr const char* kSource = "flashoverlap-paper";
const nlohmann::json kAuto = {{"groups", "auto"}};
const nlohmann::json kAutoMargin = {{"groups", "auto"}, {"sm_margin", true}};
const nlohmann::json kSlicing = {{"chunks", 4}};

// One GEMM size grid of Table 3 (per GPU) for one scenario, at the GPU counts it runs.
struct Grid {
  const char* scenario;
  const char* what;  // "AllReduce on 4090", ...
  bool sm_margin;    // FlashOverlap params.sm_margin (kRtx4090Margin)
  std::vector<int> tps;
  std::vector<std::int64_t> ms;
  std::vector<std::int64_t> ks;
};

// Table 3 (line 319): AllReduce / ReduceScatter on 4090: M x N 16..64 Mi, K 8..16 Ki (N = 8192);
// All-to-All on 4090: M x N 4..68 Mi, K 8..16 Ki (N = 4096).
const std::vector<Grid>& rtx4090_grids() {
  static const std::vector<Grid> g = {
      {"flashoverlap-rtx4090-allreduce", "AllReduce on 4090", true, {2, 4}, {2048, 4096, 8192}, {8192, 12288, 16384}},
      {"flashoverlap-rtx4090-allreduce-tp8", "AllReduce on 4090", true, {8}, {2048, 4096, 8192}, {8192, 12288, 16384}},
      {"flashoverlap-rtx4090-reducescatter", "ReduceScatter on 4090", true, {2, 4}, {2048, 4096, 8192}, {8192, 12288, 16384}},
      {"flashoverlap-rtx4090-reducescatter-tp8", "ReduceScatter on 4090", true, {8}, {2048, 4096, 8192}, {8192, 12288, 16384}},
      {"flashoverlap-rtx4090-alltoall", "All-to-All on 4090", true, {4}, {1024, 4096, 16384}, {8192, 16384}},
  };
  return g;
}

// Table 3: AllReduce / ReduceScatter on A800: M x N 64..256 Mi, K 2..8 Ki (N = 8192); All-to-All on
// A800: M x N 16..400 Mi, K 4..8 Ki (N = 4096).
const std::vector<Grid>& a800_grids() {
  static const std::vector<Grid> g = {
      {"flashoverlap-a800-allreduce", "AllReduce on A800", false, {2, 4, 8}, {8192, 16384, 32768}, {2048, 4096, 8192}},
      {"flashoverlap-a800-reducescatter", "ReduceScatter on A800", false, {2, 4, 8}, {8192, 16384, 32768}, {2048, 4096, 8192}},
      {"flashoverlap-a800-alltoall", "All-to-All on A800", false, {4}, {4096, 16384, 102400}, {4096, 8192}},
  };
  return g;
}

struct Point {
  std::string scenario;
  std::vector<std::string> sets;
  std::string label;
  bool sm_margin = false;
};

// FlashOverlap's parameters for a point: its groups, and sm_margin on the RTX 4090. There NCCL runs
// on 2 SMs (rtx4090 profiles: comm.channels 2), what the published code assumes (facts.md: waves
// counted on SMs - 2), and on the GPU the high-priority NCCL kernel gets them as soon as its group's
// wait ends, because a wave's tiles end over about 5 % of a wave (Sec. 3.2.3, line 167). The engine
// ends a wave's tiles at one instant, so without the margin a collective would wait a whole wave for
// SMs; keeping those 2 SMs free is the nearest the engine comes. On the A800 NCCL takes 16 channels,
// more than the published code assumes, and no margin is kept (the GEMM is not capped).
nlohmann::json fo(const Point& p, const nlohmann::json& groups) {
  nlohmann::json j = {{"groups", groups}};
  if (p.sm_margin) j["sm_margin"] = true;
  return j;
}

std::vector<Point> points(const std::vector<Grid>& grids) {
  std::vector<Point> out;
  for (const Grid& g : grids)
    for (int tp : g.tps)
      for (std::int64_t m : g.ms)
        for (std::int64_t k : g.ks)
          out.push_back({g.scenario,
                         {fmt::format("workload.tp={}", tp), fmt::format("workload.m={}", m),
                          fmt::format("workload.k={}", k), "workload.rmsnorm_after=false"},
                         fmt::format("{} TP {} M {} K {}", g.what, tp, m, k), g.sm_margin});
  return out;
}

std::vector<Point> points_of(const Grid& g, int tp) {
  Grid one = g;
  one.tps = {tp};
  return points({one});
}

double ratio(Ps a, Ps b) { return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

RowSpec spec(std::string location, std::string figure, std::string config, double published, std::string text) {
  RowSpec s;
  s.source = kSource;
  s.location = std::move(location);
  s.figure = std::move(figure);
  s.config = std::move(config);
  s.published = published;
  s.published_text = std::move(text);
  return s;
}

struct Stats {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  std::vector<double> all;
  void add(double v) {
    min = std::min(min, v);
    max = std::max(max, v);
    all.push_back(v);
  }
  double median() const {
    if (all.empty()) return 0;
    std::vector<double> v = all;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  double mean() const { return all.empty() ? 0 : std::accumulate(all.begin(), all.end(), 0.0) / static_cast<double>(all.size()); }
};

// The best engine latency among the partitions a user could try: the predictive search, the exact
// optimum of the predictor, and equal groups of 1..4 waves (the paper's "exhaustive search" runs every
// partition on the GPU; 2^(T-1) engine runs per size are more than a report should take).
Ps best_latency(ScenarioRunner& runner, const Point& p) {
  Ps best = std::numeric_limits<Ps>::max();
  for (const nlohmann::json& g : {nlohmann::json("auto"), nlohmann::json("optimal"), nlohmann::json(1), nlohmann::json(2),
                                  nlohmann::json(3), nlohmann::json(4)})
    best = std::min(best, runner.result(p.scenario, p.sets, "flashoverlap", fo(p, g)).latency_ps);
  return best;
}

// Alg. 1's prediction for `groups` (wave counts) on the point's workload and profile.
Ps predicted_ps(ScenarioRunner& runner, const Point& p, const std::vector<int>& groups) {
  const sim::Scenario& sc = runner.scenario(p.scenario, p.sets);
  const nlohmann::json params = fo(p, "auto");
  const sim::BuildContext ctx{sc.workload, sc.hardware, params, sc.fidelity};
  return predict_wave_groups_ps(sim::flashoverlap_problem(ctx), groups);
}

// The partition a FlashOverlap run used, read back from its parameters: the scheme reports it in its
// reason ("groups [2, 2, 4] waves ..."), which is the one place it is printed.
std::vector<int> groups_of(const sim::SchemeResult& r) {
  std::vector<int> out;
  const auto open = r.reason.find('[');
  const auto close = r.reason.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return out;
  const std::string list = r.reason.substr(open + 1, close - open - 1);
  std::size_t pos = 0;
  while (pos < list.size()) {
    std::size_t used = 0;
    out.push_back(std::stoi(list.substr(pos), &used));
    pos += used;
    while (pos < list.size() && (list[pos] == ',' || list[pos] == ' ')) ++pos;
  }
  return out;
}

}  // namespace

std::vector<PaperRow> flashoverlap_rows(ScenarioRunner& runner) {
  std::vector<PaperRow> rows;

  // Speedups over no overlap and over the decomposition baseline, share of the theoretical speedup.
  struct GpuStats {
    Stats speedup, vs_slicing, share;
  };
  auto run_grid = [&](const std::vector<Grid>& grids) {
    GpuStats s;
    for (const Point& p : points(grids)) {
      const auto& base = runner.result(p.scenario, p.sets, "no_overlap");
      const auto& r = runner.result(p.scenario, p.sets, "flashoverlap", fo(p, "auto"));
      const auto& ds = runner.result(p.scenario, p.sets, "data_slicing", kSlicing);
      s.speedup.add(ratio(base.latency_ps, r.latency_ps));
      s.vs_slicing.add(ratio(ds.latency_ps, r.latency_ps));
      s.share.add(ratio(r.bound_ps, r.latency_ps));
    }
    return s;
  };
  const GpuStats g4090 = run_grid(rtx4090_grids());
  const GpuStats a800 = run_grid(a800_grids());
  const std::string cfg4090 = "Table 3 sizes on RTX 4090, AR/RS at TP 2/4/8, A2A at 4 (flashoverlap-rtx4090-*), groups auto";
  const std::string cfga800 = "Table 3 sizes on A800, AR/RS at TP 2/4/8, A2A at 4 (flashoverlap-a800-*), groups auto";
  rows.push_back(judge(spec("Sec. 6.2 line 364; A.5.1 line 541", "highest speedup over no overlap, RTX 4090", cfg4090, 1.65,
                            "up to 1.65x"),
                       g4090.speedup.max));
  {
    RowSpec lo = spec("Sec. 6.2, line 364", "lowest speedup over no overlap, RTX 4090", cfg4090, 1.02, "1.02-1.65x");
    lo.cause =
        "smallest All-to-All GEMM (1024 x 4096): our tile heuristic makes 128 tiles of 256x128, one wave on 128 SMs "
        "but two on the SMs - 2 the published code counts, so no group can overlap and the 2-SM margin doubles the "
        "GEMM; CUTLASS's profiler picks tiles per shape (Sec. 5)";
    lo.cause_is_ours = true;
    rows.push_back(judge(lo, g4090.speedup.min));
    RowSpec hi = spec("A.5.1, line 541", "highest speedup over no overlap, A800", cfga800, 1.30, "up to 1.30x on A800");
    hi.cause =
        "not found: at K = 2048 our A800 GEMM (80 % of 312 TFLOP/s) and NCCL ring (busbw 158 GB/s) are balanced, "
        "so the bound allows 1.85x and our FlashOverlap reaches 80 % of it; the paper's reaches about 70 %";
    hi.cause_is_ours = true;
    rows.push_back(judge(hi, a800.speedup.max));
  }
  {
    const std::string cfg = cfg4090 + "; decomposition = data_slicing chunks 4";
    rows.push_back(judge(spec("Sec. 6.2, line 364", "lowest speedup over the decomposition baseline, RTX 4090", cfg, 0.98,
                              "0.98-1.46x over the decomposition-based method"),
                         g4090.vs_slicing.min));
    RowSpec hi = spec("Sec. 6.2, line 364", "highest speedup over the decomposition baseline, RTX 4090", cfg, 1.46,
                      "0.98-1.46x over the decomposition-based method");
    hi.cause = "the paper's VanillaDecomposition (cuBLAS + NCCL, Sec. 6.1.3) does not state its chunk count; ours cuts 4";
    rows.push_back(judge(hi, g4090.vs_slicing.max));
  }

  // Sec. 6.4 / Fig. 13: share of the theoretical speedup, RTX 4090 GEMM+RS at TP 2 and A800 GEMM+AR
  // at TP 4 (line 372). Share = speedup / theoretical speedup = bound latency / latency.
  {
    Stats share;
    for (const Point& p : points_of(rtx4090_grids()[2], 2)) {
      const auto& r = runner.result(p.scenario, p.sets, "flashoverlap", fo(p, "auto"));
      share.add(ratio(r.bound_ps, r.latency_ps));
    }
    for (const Point& p : points_of(a800_grids()[0], 4)) {
      const auto& r = runner.result(p.scenario, p.sets, "flashoverlap", fo(p, "auto"));
      share.add(ratio(r.bound_ps, r.latency_ps));
    }
    const std::string cfg = "Fig. 13 settings: RTX 4090 GEMM+RS TP 2 and A800 GEMM+AR TP 4, Table 3 sizes";
    RowSpec lo = spec("Sec. 6, line 338", "lowest share of the theoretical speedup", cfg, 69, "69%-98% of the theoretical");
    RowSpec hi = spec("Sec. 6, line 338", "highest share of the theoretical speedup", cfg, 98, "69%-98% of the theoretical");
    lo.unit = hi.unit = "%";
    lo.cause =
        "not found: our lowest share is on the A800 at the smallest M x N (as the paper's, Sec. 6.4), but higher; "
        "see the A800 speedup row";
    lo.cause_is_ours = true;
    rows.push_back(judge(lo, 100 * share.min));
    rows.push_back(judge(hi, 100 * share.max));
    RowSpec most = spec("Sec. 6.4, line 379", "median share of the theoretical speedup", cfg, 80,
                        "over 80% of the theoretical speedup in most cases");
    most.unit = "%";
    most.compare = Compare::at_least;
    most.ratio = false;
    rows.push_back(judge(most, 100 * share.median()));
  }

  // Sec. 4.1.1 (line 225): one-wave groups on four RTX 4090s with AllReduce.
  {
    const Grid& ar = rtx4090_grids()[0];
    Stats loss;
    int baseline_best = 0, n = 0;
    for (const Point& p : points_of(ar, 4)) {
      const Ps best = best_latency(runner, p);
      const Ps one = runner.result(p.scenario, p.sets, "flashoverlap", fo(p, 1)).latency_ps;
      loss.add(100.0 * (ratio(one, best) - 1.0));
      baseline_best += one == best;
      ++n;
    }
    const std::string cfg = "flashoverlap-rtx4090-allreduce, TP 4, Table 3 sizes; best of auto, optimal, Egs 1-4";
    RowSpec s = spec("Sec. 4.1.1, line 225", "average loss of one-wave groups against the best partition", cfg, 17.34,
                     "an average of 17.34% performance degradation");
    s.unit = "%";
    s.cause =
        "each one-wave group pays NCCL's latency (set from Sec. 3.2.2) and a 4 us launch; the paper also names "
        "'the overhead of frequent API calls' (line 225), which we do not model, and its best is an exhaustive search";
    s.cause_is_ours = true;
    rows.push_back(judge(s, loss.mean()));
    RowSpec f = spec("Sec. 4.1.1, line 225", "sizes whose best partition is one wave per group", cfg, 4,
                     "only 4% point to the baseline partition");
    f.unit = "%";
    f.compare = Compare::at_most;
    f.ratio = false;
    rows.push_back(judge(f, 100.0 * baseline_best / std::max(1, n)));
  }

  // Sec. 4.1.2 (line 229): M=4096, N=8192, K=7168 on an RTX 4090.
  {
    const char* sc = "flashoverlap-rtx4090-sec412-shape";
    const sim::Scenario& s412 = runner.scenario(sc);
    const auto& g = std::get<sim::GemmCollective>(s412.workload.shape);
    const GemmPlan plan = plan_gemm(s412.hardware, GemmShape{g.m, g.n, g.k, g.dtype});
    RowSpec w = spec("Sec. 4.1.2, line 229", "waves of the GEMM (4096 x 8192 x 7168) on 128 SMs", std::string(sc) +
                         fmt::format(": {} tiles of {}x{}", plan.tiles, plan.tile_m, plan.tile_n),
                     8, "yields 8 waves (T=8)");
    w.unit = "waves";
    w.ratio = false;
    w.tolerance_pct = 0;
    rows.push_back(judge(w, static_cast<double>(plan.waves(s412.hardware.gpu.sm_count))));
    RowSpec t = spec("Sec. 4.1.2, line 229", "latency of the overlapped operator (AR on four 4090s)",
                     std::string(sc) + ", groups auto", 5, "approximately 5 ms");
    t.unit = "ms";
    t.ratio = false;
    t.tolerance_pct = 20;  // "approximately"
    rows.push_back(judge(t, static_cast<double>(runner.result(sc, {}, "flashoverlap", kAutoMargin).latency_ps) / 1e9));
  }

  // Sec. 3.2.2 (line 163): a 192 KB AllReduce on four RTX 4090s uses 13 % of the bandwidth. The
  // bandwidth curve as the published code samples it (facts.md: 2^(20 + i/4) fp16 elements, i = 0..35);
  // utilisation = algbw at 192 KB / the curve's highest algbw.
  {
    const sim::Scenario& sc = runner.scenario("flashoverlap-rtx4090-allreduce");
    const HardwareProfile& hw = sc.hardware;
    const int n = 4;
    const std::string link = sim::collective_link_class(hw, n);
    auto algbw = [&](Bytes bytes) {
      const CollectivePlan p = plan_collective(hw, CollectivePrimitive::all_reduce, bytes, n, link);
      return static_cast<double>(bytes) * 1000.0 / static_cast<double>(p.time_ps);
    };
    double peak = 0;
    for (int i = 0; i <= 35; ++i) peak = std::max(peak, algbw(static_cast<Bytes>(std::llround(2.0 * std::pow(2.0, 20 + i / 4.0)))));
    RowSpec s = spec("Sec. 3.2.2, line 163", "bandwidth utilisation of a one-tile (192 KB) AllReduce, four 4090s",
                     "rtx4090-4x-pcie collective model; peak over the published code's size grid (2-860 MB)", 13,
                     "only 13% of the bandwidth utilization");
    s.unit = "%";
    rows.push_back(judge(s, 100.0 * algbw(192 * 1024) / peak));
  }

  // Sec. 6.5 (line 398): the predictor's error and the searched partitions against the best ones.
  auto predictor_rows = [&](const std::vector<Grid>& grids, const char* gpu, double published, int tp_max) {
    Stats err, searched;
    for (const Grid& g : grids) {
      if (std::string(g.what).find("All-to-All") != std::string::npos) continue;
      for (int tp : g.tps) {
        if (tp > tp_max) continue;
        for (const Point& p : points_of(g, tp)) {
          const auto& searched_run = runner.result(p.scenario, p.sets, "flashoverlap", fo(p, "auto"));
          for (const nlohmann::json& groups : {nlohmann::json("auto"), nlohmann::json(1), nlohmann::json(2)}) {
            const auto& r = runner.result(p.scenario, p.sets, "flashoverlap", fo(p, groups));
            const Ps pred = predicted_ps(runner, p, groups_of(r));
            err.add(100.0 * std::abs(static_cast<double>(pred - r.latency_ps)) / static_cast<double>(r.latency_ps));
          }
          searched.add(ratio(best_latency(runner, p), searched_run.latency_ps));
        }
      }
    }
    const std::string cfg = fmt::format("AR and RS on {}, TP 2 and 4, Table 3 sizes; partitions auto, Egs 1, Egs 2", gpu);
    // A.4.2 (line 529) states the claim the figure supports: "the average error ratio of the predictor
    // remaining below 5%" (Sec. 6.5 measures 3.41 % on 4090 and 3.44 % on A800 against hardware).
    RowSpec e = spec("Sec. 6.5 line 398; A.4.2 line 529", fmt::format("predictor's mean error against the engine, {}", gpu),
                     cfg, 5, fmt::format("{}% ('remaining below 5%')", published));
    e.unit = "%";
    e.ratio = false;
    e.compare = Compare::at_most;
    e.tolerance_pct = 0;
    if (std::string(gpu) == "A800") {
      e.cause =
          "on the A800 NCCL holds 16 channels (profile comm.channels, a placeholder) where the published predictor "
          "assumes 2 SMs, so each group's collective waits for tiles to free SMs and the GEMM runs on fewer";
      e.cause_is_ours = true;
    }
    rows.push_back(judge(e, err.mean()));
    RowSpec s = spec("Sec. 6.5, line 398", fmt::format("searched partition's share of the best one, {}", gpu), cfg, 99,
                     "> 99% performance of the optimal ones");
    s.unit = "%";
    s.compare = Compare::at_least;
    s.ratio = false;
    s.tolerance_pct = 0;
    s.cause = std::string(gpu) == "A800"
                  ? "the predictor misjudges our A800 runs (the row above), so its choice can be far from the best"
                  : "our best is the best of six partitions, not the paper's exhaustive search; where the predictor "
                    "and the engine disagree most (smallest GEMMs) its choice is a few % off";
    s.cause_is_ours = true;
    rows.push_back(judge(s, 100.0 * searched.min));
  };
  predictor_rows(rtx4090_grids(), "RTX 4090", 3.41, 4);
  predictor_rows(a800_grids(), "A800", 3.44, 4);

  // Sec. 6.5 ablation (line 383): equal group sizes; GEMM+AR on two 4090s prefers 1 wave per group,
  // GEMM+RS on four A800s larger groups.
  auto best_equal = [&](const char* scenario, std::vector<std::string> sets, bool margin) {
    int best_n = 0;
    Ps best = std::numeric_limits<Ps>::max();
    const Point p{scenario, sets, "", margin};
    for (int n = 1; n <= 4; ++n) {
      const Ps l = runner.result(scenario, sets, "flashoverlap", fo(p, n)).latency_ps;
      if (l < best) best = l, best_n = n;
    }
    return best_n;
  };
  {
    RowSpec s = spec("Sec. 6.5, line 383", "best equal group size (Egs=n), GEMM+AR on two 4090s",
                     "flashoverlap-rtx4090-allreduce-tp2 (4096 x 8192 x 8192), Egs 1-4", 1,
                     "RTX 4090 GPUs achieve better performance with a group size of 1");
    s.unit = "waves";
    s.ratio = false;
    s.tolerance_pct = 0;
    rows.push_back(judge(s, best_equal("flashoverlap-rtx4090-allreduce-tp2", {"workload.rmsnorm_after=false"}, true)));
    RowSpec a = spec("Sec. 6.5, line 383", "best equal group size (Egs=n), GEMM+RS on four A800s",
                     "flashoverlap-a800-reducescatter (8192 x 8192 x 4096), TP 4, Egs 1-4", 2,
                     "For A800 GPUs, larger group sizes are preferred");
    a.unit = "waves";
    a.ratio = false;
    a.compare = Compare::at_least;
    a.tolerance_pct = 0;
    rows.push_back(judge(a, best_equal("flashoverlap-a800-reducescatter", {"workload.rmsnorm_after=false"}, false)));
  }

  // Sec. 6.3 (line 368): end-to-end speedup of the Table 4 tasks, 1.05-1.13x. Each task's GEMM + X
  // operators are simulated; the end-to-end figure follows from the operators' share of the step that
  // the paper measured itself (Sec. 2.3: GEMM+AR 31.6-42.2 % of serving, GEMM+RS about 30 % of
  // training, GEMM+A2A over 40 % of Mixtral training): e2e = 1 / ((1 - f) + f / s).
  {
    auto op_speedup = [&](const char* scenario, const std::vector<std::int64_t>& ks) {
      Ps base = 0, fo_ps = 0;  // the task's operators one after another
      for (std::int64_t k : ks) {
        const std::vector<std::string> sets = {fmt::format("workload.k={}", k), "workload.rmsnorm_after=false"};
        base += runner.result(scenario, sets, "no_overlap").latency_ps;
        fo_ps += runner.result(scenario, sets, "flashoverlap", kAuto).latency_ps;
      }
      return ratio(base, fo_ps);
    };
    auto e2e = [](double f, double s) { return 1.0 / ((1.0 - f) + f / s); };
    const double inference = op_speedup("flashoverlap-a800-llama3-70b-inference", {1024, 3584});
    const double training = op_speedup("flashoverlap-a800-llama3-70b-training", {1024, 3584});
    const double moe = op_speedup("flashoverlap-a800-mixtral-8x7b-training", {7168});
    Stats e;
    e.add(e2e(0.316, inference));
    e.add(e2e(0.422, inference));
    e.add(e2e(0.30, training));
    e.add(e2e(0.40, moe));
    const std::string cfg = fmt::format(
        "Table 4 operators on A800 (operator speedups: Llama-3-70B inference {:.3f}x, training {:.3f}x, Mixtral {:.3f}x) "
        "with the paper's own time shares (Sec. 2.3)",
        inference, training, moe);
    rows.push_back(judge(spec("Sec. 6.3, line 368", "lowest end-to-end speedup of the Table 4 tasks", cfg, 1.05,
                              "1.05-1.13x speedup for different tasks"),
                         e.min));
    rows.push_back(judge(spec("Sec. 6.3, line 368", "highest end-to-end speedup of the Table 4 tasks", cfg, 1.13,
                              "1.05-1.13x speedup for different tasks"),
                         e.max));
  }
  return rows;
}

}  // namespace overlap::tools::papers
