// FlashOverlap wave-group tuning (sim/tune_wave_groups.hpp): the published predictor and search
// (flashoverlap-paper Sec. 4.2, Alg. 1; infinigence/FlashOverlap tune/search.py and tune/bandwidth.py
// as facts.md describes them), the exact optimum under it, and the engine-backed search.
#include "sim/tune_wave_groups.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cost_model/collective_model.hpp"
#include "cost_model/enum_names.hpp"
#include "cost_model/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/wave_groups.hpp"
#include "sim/sweep_parallel.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

constexpr std::array kSearchNames{std::pair{WaveGroupSearch::flashoverlap, "flashoverlap"},
                                  std::pair{WaveGroupSearch::optimal, "optimal"},
                                  std::pair{WaveGroupSearch::exhaustive, "exhaustive"},
                                  std::pair{WaveGroupSearch::simulate, "simulate"}};
static_assert(rows_in_enum_order(kSearchNames));

}  // namespace

std::optional<WaveGroupSearch> parse_wave_group_search(const std::string& s) { return parse_name(kSearchNames, s); }
const char* wave_group_search_name(WaveGroupSearch s) { return name_of(kSearchNames, s); }

namespace {

// The published bandwidth curve (tune/bandwidth.py): NCCL alone at int(2^(20 + i/4)) // 1024 * 1024
// elements, i = 0..35 (facts.md: "sizes 2^(20 + i/4) fp16 elements, i = 0..35 ... linear
// interpolation; communication assumed not slowed by the GEMM"). Here "NCCL alone" is the
// collective model at curve fidelity, what the engine gives one collective on an idle node.
class SampledCurve {
 public:
  SampledCurve(const HardwareProfile& hw, Primitive primitive, int ranks, DType dtype) {
    const std::string link = collective_link_class(hw, ranks);
    for (int i = 0; i < 36; ++i) {
      const auto elements = static_cast<std::int64_t>(std::pow(2.0, 20.0 + 0.25 * i)) / 1024 * 1024;
      const Bytes bytes = elements * dtype_bytes(dtype);
      // What NCCL would run for this size (its tuning model), as the engine does for the scheme.
      const Ps t = plan_collective(hw, to_collective_primitive(primitive), bytes, ranks, link).time_ps;
      bytes_.push_back(static_cast<double>(bytes));
      // Bandwidth in bytes per ps; the published script stores busbw, a constant multiple of this
      // (2(n-1)/n for all-reduce), which the interpolation and the latency formula cancel out.
      bw_.push_back(t > 0 ? static_cast<double>(bytes) / static_cast<double>(t) : 0.0);
    }
  }
  // numpy.interp: linear between samples, the end values beyond them.
  Ps operator()(Bytes bytes) const {
    if (bytes <= 0) return 0;
    const double x = static_cast<double>(bytes);
    double bw = bw_.front();
    if (x >= bytes_.back()) {
      bw = bw_.back();
    } else if (x > bytes_.front()) {
      const auto hi = static_cast<std::size_t>(std::upper_bound(bytes_.begin(), bytes_.end(), x) - bytes_.begin());
      const std::size_t lo = hi - 1;
      const double f = (x - bytes_[lo]) / (bytes_[hi] - bytes_[lo]);
      bw = bw_[lo] + f * (bw_[hi] - bw_[lo]);
    }
    if (!(bw > 0)) return 0;
    return static_cast<Ps>(std::ceil(x / bw));
  }

 private:
  std::vector<double> bytes_, bw_;
};

void require_flashoverlap_workload(const Workload& w) {
  if (w.kind != WorkloadKind::gemm_collective)
    throw InputError("", 0, "workload.kind", fmt::format("wave-group tuning needs a gemm_collective workload (got {})", workload_kind_name(w.kind)));
  const GemmCollective g = gemm_collective_shape(w);
  if (g.primitive == Primitive::all_gather)
    throw InputError("", 0, "workload.primitive",
                     "wave-group tuning needs the collective after the GEMM (all_reduce, reduce_scatter, all_to_all)");
  if (w.tp < 2) throw InputError("", 0, "workload.tp", "wave-group tuning needs at least 2 ranks");
}

GemmShape shape_of(const GemmCollective& g) { return GemmShape{g.m, g.n, g.k, g.dtype}; }

// Engine runs of one operator: the FlashOverlap scheme with explicit groups, and the baseline.
class EngineEvaluator {
 public:
  EngineEvaluator(const Workload& w, const HardwareProfile& hw, Fidelity f, bool sm_margin)
      : w_(w), hw_(hw), fidelity_(f), sm_margin_(sm_margin), node_(make_node(hw, std::max(1, w.tp))) {}

  Ps flashoverlap_ps(const std::vector<int>& groups) {
    nlohmann::json params = {{"groups", groups}};
    if (sm_margin_) params["sm_margin"] = true;
    return run_scheme("flashoverlap", params);
  }
  Ps no_overlap_ps() { return run_scheme("no_overlap", nlohmann::json::object()); }

 private:
  Ps run_scheme(const std::string& name, const nlohmann::json& params) {
    const SchemeInfo* s = find_scheme(name);
    if (!s) throw std::logic_error("scheme '" + name + "' is not registered");
    const BuildContext ctx{w_, hw_, params, fidelity_};
    const BuiltScheme built = s->build(ctx);
    return run(built.graph, node_).makespan_ps;
  }

  const Workload& w_;
  const HardwareProfile& hw_;
  Fidelity fidelity_;
  bool sm_margin_;
  NodeConfig node_;
};

// Partitions one step from `g`: a boundary moved by one wave either way, two neighbours merged, one
// group split in halves. In that order, each list left to right.
std::vector<std::vector<int>> neighbours(const std::vector<int>& g) {
  std::vector<std::vector<int>> out;
  for (std::size_t i = 0; i + 1 < g.size(); ++i) {
    if (g[i] > 1) {
      auto n = g;
      --n[i];
      ++n[i + 1];
      out.push_back(std::move(n));
    }
    if (g[i + 1] > 1) {
      auto n = g;
      ++n[i];
      --n[i + 1];
      out.push_back(std::move(n));
    }
  }
  for (std::size_t i = 0; i + 1 < g.size(); ++i) {
    auto n = g;
    n[i] += n[i + 1];
    n.erase(n.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    out.push_back(std::move(n));
  }
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (g[i] < 2) continue;
    auto n = g;
    n[i] = g[i] / 2;
    n.insert(n.begin() + static_cast<std::ptrdiff_t>(i) + 1, g[i] - g[i] / 2);
    out.push_back(std::move(n));
  }
  return out;
}

// The engine-backed search: seeds (the published search's best partitions, the predictor's exact
// optimum, the one-group and one-wave-per-group extremes), then rounds of the neighbours of the
// engine's best, best-predicted first, until a round improves nothing or the budget is spent. Each
// batch runs on `jobs` threads; the result is the same for any thread count (no time limit, ties
// keep the earlier evaluation).
void simulate_search(const WaveGroupProblem& prob, const Workload& w, const HardwareProfile& hw, Fidelity f,
                     int budget, int jobs, bool sm_margin, std::vector<WaveGroupTrial>& trials) {
  const int t = prob.waves();
  std::set<std::vector<int>> seen;
  auto evaluate = [&](std::vector<std::pair<std::vector<int>, std::string>> batch) {
    std::vector<WaveGroupTrial> fresh;
    for (auto& [g, origin] : batch) {
      if (static_cast<int>(trials.size() + fresh.size()) >= budget) break;
      if (!seen.insert(g).second) continue;
      WaveGroupTrial c;
      c.groups_waves = std::move(g);
      c.predicted_ps = predict_wave_groups_ps(prob, c.groups_waves);
      c.origin = std::move(origin);
      fresh.push_back(std::move(c));
    }
    parallel_for(fresh.size(), jobs, [&](std::size_t i) {
      EngineEvaluator engine(w, hw, f, sm_margin);  // one node per run: nothing shared between threads
      fresh[i].simulated_ps = engine.flashoverlap_ps(fresh[i].groups_waves);
    });
    for (auto& c : fresh) trials.push_back(std::move(c));
  };
  const WaveGroupSearchResult fo = flashoverlap_search(prob, 4);
  std::vector<std::pair<std::vector<int>, std::string>> seeds = {{fo.groups, "flashoverlap search"},
                                                                 {optimal_wave_groups(prob).groups, "optimal (predictor)"}};
  for (std::size_t i = 1; i < fo.top.size(); ++i) seeds.emplace_back(fo.top[i].groups, fmt::format("flashoverlap search #{}", i + 1));
  if (fo.unit_waves > 1) seeds.emplace_back(optimal_wave_groups(prob, fo.unit_waves).groups, "optimal at the search unit");
  seeds.emplace_back(std::vector<int>{t}, "one group (no overlap inside)");
  seeds.emplace_back(equal_wave_groups(t, 1), "one wave per group");
  seeds.emplace_back(equal_wave_groups(t, 2), "two waves per group");
  evaluate(std::move(seeds));

  auto best_index = [&] {
    std::size_t b = 0;
    for (std::size_t i = 1; i < trials.size(); ++i)
      if (trials[i].simulated_ps < trials[b].simulated_ps) b = i;
    return b;
  };
  while (static_cast<int>(trials.size()) < budget) {
    const std::size_t b = best_index();
    std::vector<std::pair<Ps, std::vector<int>>> next;
    for (auto& n : neighbours(trials[b].groups_waves))
      if (!seen.count(n)) next.emplace_back(predict_wave_groups_ps(prob, n), std::move(n));
    if (next.empty()) break;
    std::stable_sort(next.begin(), next.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
    std::vector<std::pair<std::vector<int>, std::string>> batch;
    for (auto& [p, g] : next) batch.emplace_back(std::move(g), fmt::format("neighbour of #{}", b + 1));
    evaluate(std::move(batch));
    if (best_index() == b) break;  // a local optimum of the engine
  }
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

WaveGroupProblem published_wave_group_problem(const HardwareProfile& hw, const GemmCollective& g, int ranks) {
  const GemmShape shape = shape_of(g);
  const GemmPlan plan = plan_gemm(hw, shape);
  const int sms = hw.gpu.sm_count;
  // facts.md: "waves = ceil(tiles / (SMs - 2)): NCCL assumed to take 2 SMs".
  const int wave_sms = std::max(1, sms - 2);
  WaveGroupProblem p;
  p.tiles = plan.tiles;
  p.tiles_per_wave = static_cast<std::int64_t>(wave_sms) * plan.ctas_per_sm;
  // predict_lat: gemm_dur / old_wave_num * new_wave_num, the all-SM duration rescaled to the waves
  // on SMs - 2; the one-group partition keeps the all-SM duration.
  const Ps alone = gemm_time_ps(hw, shape);
  const std::int64_t old_waves = std::max<std::int64_t>(1, plan.waves(sms));
  const std::int64_t new_waves = std::max<std::int64_t>(1, plan.waves(wave_sms));
  p.gemm_ps = static_cast<Ps>(static_cast<__int128>(alone) * new_waves / old_waves);
  p.single_group_gemm_ps = alone;
  // predict_lat's data size: M*N // tile_num elements per tile.
  p.bytes_per_tile = plan.tiles > 0 ? (g.m * g.n / plan.tiles) * dtype_bytes(g.dtype) : 0;
  p.comm_ps = SampledCurve(hw, g.primitive, ranks, g.dtype);
  return p;
}

Ps simulate_wave_groups_ps(const Workload& w, const HardwareProfile& hw, Fidelity fidelity,
                           const std::vector<int>& groups, bool sm_margin) {
  require_flashoverlap_workload(w);
  EngineEvaluator engine(w, hw, fidelity, sm_margin);
  return engine.flashoverlap_ps(groups);
}

WaveGroupTuneResult tune_wave_groups(const Workload& w, const HardwareProfile& hw, Fidelity fidelity,
                                     const WaveGroupTuneOptions& options) {
  validate_workload(w);
  require_flashoverlap_workload(w);
  const GemmCollective g = gemm_collective_shape(w);
  const WaveGroupProblem prob = published_wave_group_problem(hw, g, w.tp);

  WaveGroupTuneResult r;
  r.search = options.search;
  r.sm_margin = options.sm_margin;
  r.plan = plan_gemm(hw, shape_of(g));
  r.waves = prob.waves();
  r.tiles_per_wave = prob.tiles_per_wave;
  r.unit_waves = (r.waves + 9) / 10;
  r.gemm_alone_ps = gemm_time_ps(hw, shape_of(g));
  if (r.waves <= 0) throw InputError("", 0, "workload", "the GEMM has no tiles");

  EngineEvaluator engine(w, hw, fidelity, options.sm_margin);
  const auto start = std::chrono::steady_clock::now();
  if (options.search == WaveGroupSearch::simulate) {
    simulate_search(prob, w, hw, fidelity, std::max(2, options.simulate_budget), std::max(1, options.jobs),
                    options.sm_margin, r.candidates);
    r.search_ms = ms_since(start);
    r.engine_runs = static_cast<int>(r.candidates.size());
    std::size_t b = 0;
    for (std::size_t i = 1; i < r.candidates.size(); ++i)
      if (r.candidates[i].simulated_ps < r.candidates[b].simulated_ps) b = i;
    r.groups_waves = r.candidates[b].groups_waves;
    r.predicted_ps = r.candidates[b].predicted_ps;
    r.simulated_ps = r.candidates[b].simulated_ps;
  } else {
    WaveGroupSearchResult s;
    const int top = std::max(1, options.top);
    switch (options.search) {
      case WaveGroupSearch::flashoverlap: s = flashoverlap_search(prob, top); break;
      case WaveGroupSearch::exhaustive: s = exhaustive_wave_groups(prob, top); break;
      default: s = optimal_wave_groups(prob); break;
    }
    r.search_ms = ms_since(start);
    r.groups_waves = s.groups;
    r.predicted_ps = s.predicted_ps;
    // The chosen partition is checked in the engine (not part of the search time).
    r.simulated_ps = engine.flashoverlap_ps(s.groups);
    if (s.top.empty()) s.top.push_back(WaveGroupCandidate{s.groups, s.predicted_ps});
    for (std::size_t i = 0; i < s.top.size(); ++i) {
      WaveGroupTrial c;
      c.groups_waves = s.top[i].groups;
      c.predicted_ps = s.top[i].predicted_ps;
      c.simulated_ps = c.groups_waves == r.groups_waves ? r.simulated_ps : -1;
      c.origin = fmt::format("{} search #{}", wave_group_search_name(options.search), i + 1);
      r.candidates.push_back(std::move(c));
    }
  }
  for (const TileRange& t : wave_group_tiles(r.groups_waves, r.plan.tiles, r.tiles_per_wave))
    r.groups_tiles.push_back(t.count);
  r.no_overlap_ps = engine.no_overlap_ps();
  r.speedup_vs_no_overlap =
      r.simulated_ps > 0 ? static_cast<double>(r.no_overlap_ps) / static_cast<double>(r.simulated_ps) : 0.0;
  return r;
}

namespace {

// Microseconds from exact picoseconds: the double nearest the true value.

}  // namespace

nlohmann::json to_json(const WaveGroupTuneResult& r) {
  nlohmann::json j;
  j["search"] = wave_group_search_name(r.search);
  j["sm_margin"] = r.sm_margin;
  j["groups_waves"] = r.groups_waves;
  j["groups_tiles"] = r.groups_tiles;
  j["predicted_us"] = us_from_ps(r.predicted_ps);
  j["simulated_us"] = us_from_ps(r.simulated_ps);
  j["no_overlap_us"] = us_from_ps(r.no_overlap_ps);
  j["speedup_vs_no_overlap"] = r.speedup_vs_no_overlap;
  j["search_ms"] = r.search_ms;
  nlohmann::json cands = nlohmann::json::array();
  for (const WaveGroupTrial& c : r.candidates) {
    nlohmann::json cj;
    cj["groups_waves"] = c.groups_waves;
    cj["predicted_us"] = us_from_ps(c.predicted_ps);
    cj["simulated_us"] = c.simulated_ps >= 0 ? nlohmann::json(us_from_ps(c.simulated_ps)) : nlohmann::json(nullptr);
    cj["simulated_minus_predicted_us"] =
        c.simulated_ps >= 0 ? nlohmann::json(us_from_ps(c.simulated_ps - c.predicted_ps)) : nlohmann::json(nullptr);
    cj["origin"] = c.origin;
    cands.push_back(std::move(cj));
  }
  j["candidates"] = cands;
  j["engine_runs"] = r.engine_runs;
  j["waves"] = r.waves;
  j["tiles"] = r.plan.tiles;
  j["tiles_per_wave"] = r.tiles_per_wave;
  j["tile_m"] = r.plan.tile_m;
  j["tile_n"] = r.plan.tile_n;
  j["search_unit_waves"] = r.unit_waves;
  j["gemm_alone_us"] = us_from_ps(r.gemm_alone_ps);
  return j;
}

std::string format_tune_table(const WaveGroupTuneResult& r, const Workload& w, const std::string& hardware_name,
                              int top) {
  const GemmCollective g = gemm_collective_shape(w);
  std::string out;
  out += fmt::format("tune: GEMM {}x{}x{} {} + {} over {} GPUs on {} (search: {}{})\n", g.m, g.n, g.k,
                     dtype_name(g.dtype), primitive_name(g.primitive), w.tp, hardware_name,
                     wave_group_search_name(r.search), r.sm_margin ? ", engine runs with sm_margin" : "");
  out += fmt::format("GEMM: {}x{} tiles, {} tiles, {} per wave (SMs - 2), T = {} waves; {:.2f} us alone\n",
                     r.plan.tile_m, r.plan.tile_n, r.plan.tiles, r.tiles_per_wave, r.waves, us_from_ps(r.gemm_alone_ps));
  out += fmt::format("groups (waves): {}\n", r.groups_waves);
  out += fmt::format("groups (tiles): {}\n", r.groups_tiles);
  out += fmt::format("predicted {:.2f} us   simulated {:.2f} us   no overlap {:.2f} us   speedup {:.3f}x\n",
                     us_from_ps(r.predicted_ps), us_from_ps(r.simulated_ps), us_from_ps(r.no_overlap_ps), r.speedup_vs_no_overlap);
  out += fmt::format("search: {:.1f} ms{}\n\n", r.search_ms,
                     r.engine_runs > 0 ? fmt::format(" ({} engine runs)", r.engine_runs) : std::string());
  // Long partitions are shortened so the table stays readable; the JSON has them whole.
  auto groups_text = [](const std::vector<int>& v) {
    std::string s = fmt::format("{}", v);
    return s.size() > 40 ? s.substr(0, 36) + " ...]" : s;
  };
  // The best `top` candidates: by the engine when the search simulated them, else in the
  // predictor's order; # is the order they were evaluated in.
  std::vector<std::size_t> shown(r.candidates.size());
  for (std::size_t i = 0; i < shown.size(); ++i) shown[i] = i;
  if (r.search == WaveGroupSearch::simulate)
    std::stable_sort(shown.begin(), shown.end(), [&](std::size_t a, std::size_t b) {
      return r.candidates[a].simulated_ps < r.candidates[b].simulated_ps;
    });
  if (top > 0 && shown.size() > static_cast<std::size_t>(top)) shown.resize(static_cast<std::size_t>(top));
  std::size_t gw = std::string("groups (waves)").size();
  for (std::size_t i : shown) gw = std::max(gw, groups_text(r.candidates[i].groups_waves).size());
  out += fmt::format("{} of {} candidates{}:\n", shown.size(), r.candidates.size(),
                     r.search == WaveGroupSearch::simulate ? ", fastest in the engine first" : "");
  out += fmt::format("  #  {:<{}}  predicted (us)  simulated (us)  engine - predictor (us)  origin\n",
                     "groups (waves)", gw);
  for (std::size_t i : shown) {
    const WaveGroupTrial& c = r.candidates[i];
    const bool chosen = c.groups_waves == r.groups_waves;
    out += fmt::format("{}{:>2}  {:<{}}  {:>14.2f}  {:>14}  {:>23}  {}\n", chosen ? "*" : " ", i + 1,
                       groups_text(c.groups_waves), gw, us_from_ps(c.predicted_ps),
                       c.simulated_ps >= 0 ? fmt::format("{:.2f}", us_from_ps(c.simulated_ps)) : std::string("-"),
                       c.simulated_ps >= 0 ? fmt::format("{:+.2f}", us_from_ps(c.simulated_ps - c.predicted_ps)) : std::string("-"),
                       c.origin);
  }
  return out;
}

std::vector<std::int64_t> swizzled_tile_order(std::int64_t grid_m, std::int64_t grid_n, int swizzle) {
  if (grid_m <= 0 || grid_n <= 0) return {};
  int log_tile = 0;
  if (swizzle >= 8 && grid_n >= 6) log_tile = 3;
  else if (swizzle >= 4 && grid_n >= 3) log_tile = 2;
  else if (swizzle >= 2 && grid_n >= 2) log_tile = 1;
  const std::int64_t tile = std::int64_t{1} << log_tile;
  const std::int64_t grid_x = grid_m * tile;
  const std::int64_t grid_y = (grid_n + tile - 1) / tile;
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(grid_m * grid_n));
  for (std::int64_t y = 0; y < grid_y; ++y) {
    for (std::int64_t x = 0; x < grid_x; ++x) {
      const std::int64_t ti = x >> log_tile;
      const std::int64_t tj = (y << log_tile) + (x & (tile - 1));
      if (ti < grid_m && tj < grid_n) order.push_back(ti * grid_n + tj);
    }
  }
  return order;
}

nlohmann::ordered_json flashoverlap_config(const WaveGroupTuneResult& r, const GemmCollective& g, int swizzle,
                                           std::optional<int> algo) {
  const std::int64_t grid_m = (g.m + r.plan.tile_m - 1) / r.plan.tile_m;
  const std::int64_t grid_n = (g.n + r.plan.tile_n - 1) / r.plan.tile_n;
  nlohmann::ordered_json j;
  j["BM"] = r.plan.tile_m;
  j["BN"] = r.plan.tile_n;
  j["dur"] = static_cast<double>(r.gemm_alone_ps) / 1e9;  // ms, as the published profiler writes it
  if (algo) j["Algo"] = *algo;
  // The tile order: the tiles of each group are the next cSeg[i] entries. The engine dispatches tiles
  // in launch order, so the order of the kernel's swizzle is the order the groups were cut in.
  j["hint"] = swizzled_tile_order(grid_m, grid_n, swizzle);
  j["cSeg"] = r.groups_tiles;
  j["rLDN"] = 1;
  nlohmann::ordered_json meta;
  meta["search"] = wave_group_search_name(r.search);
  meta["groups_waves"] = r.groups_waves;
  meta["predicted_us"] = us_from_ps(r.predicted_ps);
  meta["simulated_us"] = us_from_ps(r.simulated_ps);
  meta["swizzle"] = swizzle;
  meta["note"] = algo ? "written by overlap-sim tune --export flashoverlap"
                      : "written by overlap-sim tune --export flashoverlap; Algo left out: give --algo with the index "
                        "of the BMxBN kernel in FlashOverlap's AlgoDict (its tune/profile_config.py picks it)";
  j["overlap_sim"] = meta;
  return j;
}

}  // namespace overlap::sim
