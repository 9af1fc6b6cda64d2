#pragma once
// `overlap-sim sweep` (design.md "Questions it answers": a grid of shapes x schemes x hardware as
// CSV/JSON and heatmaps): the cartesian product of a scenario's `sweep:` axes and any `--sweep` flags,
// every point checked before any runs, every scheme of every point evaluated, one output row per
// (point, scheme) with the swept values as the first columns. The output depends only on the grid:
// points are evaluated in any order on any number of threads or processes and assembled by index.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/hardware_profile.hpp"
#include "sim/scenario.hpp"

namespace overlap::sim {

// `--sweep key=v1,v2,...`: one axis over one key; values are split at commas outside brackets,
// braces and quotes ("groups=[1,2],[2,2]" is two values). A value A..B (whole numbers) is a range:
// A..BxF multiplies by F from A while <= B (A..B alone: x2, the powers-of-two sweep), A..B+S adds S.
// Throws InputError (key "--sweep KEY") when there is no '=', no value, or a range that is empty,
// does not advance, or has more than kMaxRangeValues values.
SweepAxis parse_sweep_flag(const std::string& flag);
inline constexpr std::size_t kMaxRangeValues = 4096;
// One value as parse_sweep_flag expands it: the range's values, or the value itself.
std::vector<std::string> expand_sweep_range(const std::string& value, const std::string& key);

// The scenario's axes without those over `keys` (--no-axis). Throws InputError (key "--no-axis
// KEY") for a key no axis sweeps, naming the axes there are.
std::vector<SweepAxis> drop_sweep_axes(std::vector<SweepAxis> axes, const std::vector<std::string>& keys);
// "workload.tokens, hardware.fabric.links.nvlink.bandwidth_gbps": the keys of `axes`.
std::string sweep_axes_text(const std::vector<SweepAxis>& axes);

// The scenario's axes with the --sweep axes applied: a flag over the same key(s) as a scenario axis
// replaces that axis in place; the others are appended in flag order.
std::vector<SweepAxis> merge_sweep_axes(std::vector<SweepAxis> scenario_axes, const std::vector<SweepAxis>& flags);

struct SweepPoint {
  std::vector<std::string> values;  // one per column (YAML text, as written)
  std::vector<std::string> sets;    // "key=value", applied on top of the scenario's own --set
};

struct SweepGrid {
  std::vector<std::string> columns;  // the swept keys, axis by axis
  std::vector<SweepPoint> points;    // the cartesian product, the last axis varying fastest
  // The CSV carries a training step's columns (report.hpp csv_step_columns) after the report's:
  // sweep_runs_steps. A forward point's step fields are then empty.
  bool step_columns = false;
};

// Does the sweep run training steps: the scenario's workload is one (is_training_step), or an axis
// sweeps workload.pass, workload.parallel.* or workload.recompute (so every point of the grid has
// the same columns whichever values the axes take)?
bool sweep_runs_steps(const Scenario& scenario, const std::vector<SweepAxis>& axes);

// At most kMaxSweepPoints points: the grid's size (the product of the axes' lengths) is computed
// before anything is expanded and a larger one is an InputError naming the size and the limit (a
// 1000^3 grid would need gigabytes before the first point ran). 100,000 points take about ten
// minutes to load and hours to simulate on one machine; a larger study is several sweeps.
inline constexpr std::int64_t kMaxSweepPoints = 100'000;
// The product of the axes' lengths, saturated at kMaxSweepPoints + 1.
std::int64_t sweep_grid_size(const std::vector<SweepAxis>& axes);
// `file` names the scenario in the size refusal.
SweepGrid make_sweep_grid(const std::vector<SweepAxis>& axes, const std::string& file = "");

// Before the grid is expanded: every axis key must name a key of the scenario. Each axis's first
// value is applied alone (one load per axis, not per point); an error naming an unknown key is
// thrown as it is, before any point is loaded. (A value that is bad only in combination is left to
// prepare_sweep.)
void check_sweep_keys(const Scenario& scenario, const std::vector<SweepAxis>& axes, const ScenarioOptions& load);

// A point that loaded: what evaluating it needs. Points that do not vary the hardware share one
// profile object.
struct PreparedPoint {
  std::string hardware_name;
  std::shared_ptr<const HardwareProfile> hardware;
  Workload workload;
  std::vector<SchemeSpec> schemes;
  Fidelity fidelity = Fidelity::curve;
};

// Loads the scenario once per point (on `jobs` threads) with `load` (the scenario's own --set
// overrides and hardware directory) plus the point's assignments. If any point is invalid, throws one
// InputError listing every bad point (at most `max_listed`, then a count) with its assignments and
// the loader's message naming the key; nothing is evaluated then.
std::vector<PreparedPoint> prepare_sweep(const Scenario& scenario, const SweepGrid& grid,
                                         const ScenarioOptions& load, int jobs, std::size_t max_listed = 20);

enum class SweepFormat { csv, json };

// The identity of a point in outputs and checkpoints: its swept values as a JSON array.
std::string sweep_point_key(const std::vector<std::string>& values);

// One point's rows as they appear in the output: CSV lines (each ending in '\n') or a compact JSON
// array of row objects.
std::string evaluate_sweep_point(const Scenario& scenario, const SweepGrid& grid, std::size_t index,
                                 const PreparedPoint& point, SweepFormat format, bool verify_bytes);

// The whole output from every point's rows (grid order).
std::string assemble_sweep_output(const Scenario& scenario, const SweepGrid& grid, SweepFormat format,
                                  const std::vector<std::string>& point_rows);

// The CSV header: the swept keys, then report.hpp's csv_columns(grid.step_columns), then `best`. A swept key that is also a report
// column (`hardware`) is headed `swept:KEY`, so that no two columns share a name.
std::vector<std::string> sweep_csv_columns(const SweepGrid& grid);
// The last column (CSV) and a key of every row (JSON): the point's best schemes with ties named
// (report.hpp best_names: equal latency in integer picoseconds), the same on each of the point's rows;
// CSV joins them as the report's best: line does ("async_tp = te_userbuffers"), JSON lists them.
// Empty when no scheme of the point has a speedup.
inline constexpr const char* kSweepBestColumn = "best";

// Points already done: those in an output file of this sweep (same columns) and in its checkpoint
// lines, by sweep_point_key. A missing file gives nothing; a file of another sweep or format throws
// InputError naming it.
std::map<std::string, std::string> read_sweep_output(const std::string& path, const SweepGrid& grid,
                                                     SweepFormat format);
// Rows in one point's text (CSV lines or a JSON array), to tell a finished point from a cut one.
std::size_t sweep_row_count(SweepFormat format, const std::string& rows);
// Rows a point produces: its schemes that apply to its workload.
std::size_t sweep_expected_rows(const PreparedPoint& point);

// Checkpoint lines: one JSON object per finished point, {"format", "key", "rows"}, appended as points
// finish. Lines of another format, or a last line cut short by a crash, are skipped.
std::string sweep_checkpoint_line(SweepFormat format, const std::string& key, const std::string& rows);
void read_sweep_checkpoint(const std::string& path, SweepFormat format, std::map<std::string, std::string>& done);

}  // namespace overlap::sim
