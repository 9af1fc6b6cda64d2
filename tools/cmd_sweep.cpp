#include "tools/cmd_sweep.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/atomic_file.hpp"
#include "cost_model/bounded_message.hpp"
#include "sim/engine.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "sim/sweep.hpp"
#include "sim/sweep_mpi.hpp"
#include "sim/sweep_parallel.hpp"
#include "tools/cmd_run.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"
#include "tools/mpi_command.hpp"

namespace overlap::tools {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

std::string duration_text(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const long long t = static_cast<long long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

// Points done, points/s and ETA on one line of stderr, redrawn at most four times a second.
class Progress {
 public:
  Progress(std::ostream& err, bool enabled, std::size_t total, std::string label)
      : err_(err), enabled_(enabled), total_(total), label_(std::move(label)), start_(Clock::now()) {}

  void point_done() {
    const std::size_t done = ++done_;
    if (!enabled_) return;
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    const auto now = Clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = s > 0 ? static_cast<double>(done) / s : 0.0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : -1;
    err_ << fmt::format("\r{}{}/{} points ({:.1f}%)  {:.1f} points/s  ETA {}\x1b[K", label_, done, total_,
                        total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0, rate,
                        duration_text(eta))
         << std::flush;
  }

  // The summary line: `computed` points by every process, `skipped` ones came from --resume.
  void finish(std::size_t computed, std::size_t skipped, int threads, int ranks) {
    if (!enabled_) return;
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    err_ << fmt::format("\rsweep: {} points in {:.1f} s: {:.1f} points/s on {} thread{}{}{}\x1b[K\n", computed, s,
                        s > 0 ? static_cast<double>(computed) / s : 0.0, threads, threads == 1 ? "" : "s",
                        ranks > 1 ? fmt::format(" x {} ranks", ranks) : std::string(),
                        skipped ? fmt::format(" ({} done before, skipped)", skipped) : std::string())
         << std::flush;
  }

 private:
  std::ostream& err_;
  bool enabled_;
  std::size_t total_;
  std::string label_;
  Clock::time_point start_, last_{};
  std::atomic<std::size_t> done_{0};
  std::mutex mutex_;
};

// Finished points appended as they finish (one line each, flushed), so a stopped sweep can --resume.
class Checkpoint {
 public:
  explicit Checkpoint(const std::string& path) : path_(path) {
    if (path_.empty()) return;
    file_.open(path_, std::ios::binary | std::ios::trunc);
    if (!file_) throw UsageError("cannot write the sweep's checkpoint file " + path_);
  }
  void append(const std::string& line) {
    if (path_.empty()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    file_ << line << std::flush;
  }
  void remove() {
    if (path_.empty()) return;
    file_.close();
    std::error_code ec;
    fs::remove(path_, ec);
  }

 private:
  std::string path_;
  std::ofstream file_;
  std::mutex mutex_;
};

// Checkpoint files of `output`: FILE.partial (one process) and FILE.partial.RANK (under mpirun).
std::vector<std::string> checkpoint_files(const std::string& output) {
  std::vector<std::string> out;
  const fs::path p(output);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = p.filename().string() + ".partial";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == prefix || name.rfind(prefix + ".", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What a rank sends rank 0: "R index len\n<rows>" per finished point, "E index len\n<message>" for
// an input error at a point, "X index len\n<message>" for an internal one.
void put_record(std::string& buf, char kind, std::size_t index, const std::string& text) {
  buf += fmt::format("{} {} {}\n", kind, index, text.size());
  buf += text;
}

struct Record {
  char kind = 'R';
  std::size_t index = 0;
  std::string text;
};

std::vector<Record> parse_records(const std::string& buf) {
  std::vector<Record> out;
  std::size_t pos = 0;
  while (pos < buf.size()) {
    const auto nl = buf.find('\n', pos);
    if (nl == std::string::npos) throw std::logic_error("sweep: a truncated result record");
    Record r;
    std::size_t len = 0;
    std::istringstream head(buf.substr(pos, nl - pos));
    head >> r.kind >> r.index >> len;
    r.text = buf.substr(nl + 1, len);
    pos = nl + 1 + len;
    out.push_back(std::move(r));
  }
  return out;
}

// The options that need nothing loaded, checked first. Returns the format; `output_in_place` is
// whether -o is written in place (- for stdout, a pipe, a device): such an output has no checkpoint
// beside it.
sim::SweepFormat check_sweep_options(const SweepOptions& o, bool& output_in_place) {
  sim::SweepFormat format = sim::SweepFormat::csv;
  if (o.format == "json") format = sim::SweepFormat::json;
  else if (o.format != "csv") throw UsageError("--format must be csv or json (got '" + o.format + "')");
  if (o.jobs < 0) throw UsageError(fmt::format("-j must be at least 1 (got {})", o.jobs));
  if (o.resume && o.output.empty()) throw UsageError("--resume needs --output FILE (the file whose points are skipped)");
  output_in_place = !o.output.empty() && resolve_output(o.output).in_place;
  if (o.resume && output_in_place)
    throw UsageError(fmt::format("--resume needs --output to be a file (got {}, which is written in place)", o.output));
  if (!o.plot.empty()) check_plotting_available("plot_sweep.py");
  return format;
}

// Runs `fn`; an input error in the value of a --sweep axis is reported at that flag.
template <typename Fn>
void blame_sweep_flags(const SweepOptions& o, const Fn& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    for (const std::string& f : o.sweeps) {
      const std::string key = f.substr(0, f.find('='));
      if (!key.empty() && std::string(e.what()).find(key) != std::string::npos)
        throw InputError("--sweep " + f, 0, e.key_path(), e.message());
    }
    throw;
  }
}

// The axes swept: the scenario's own (less --no-axis; none with --only-axes) merged with --sweep's.
std::vector<sim::SweepAxis> sweep_axes(const SweepOptions& o, const sim::Scenario& sc, const std::string& path) {
  if (o.only_axes && !o.no_axes.empty()) throw UsageError("--only-axes drops every scenario axis; --no-axis is then redundant");
  std::vector<sim::SweepAxis> own_axes = o.only_axes ? std::vector<sim::SweepAxis>{} : sim::drop_sweep_axes(sc.sweep, o.no_axes);
  std::vector<sim::SweepAxis> flags;
  std::map<std::string, std::string> flag_of_key;  // each key swept by one --sweep at most
  for (const std::string& f : o.sweeps) {
    sim::SweepAxis axis = sim::parse_sweep_flag(f);
    for (const std::string& key : axis.keys) {
      const auto [it, fresh] = flag_of_key.emplace(key, f);
      // A later --sweep of the same key would replace the earlier one silently (merge_sweep_axes).
      if (!fresh)
        throw UsageError(fmt::format("--sweep {}: the axis '{}' is already swept by --sweep {}; give its values once",
                                     bounded_message(f), key, bounded_message(it->second)));
    }
    // A profile path typed in a --sweep value is read where it was typed, as with --set.
    if (axis.keys.size() == 1 && axis.keys[0] == "hardware")
      for (auto& point : axis.values) point[0] = resolve_hardware_path(point[0], path);
    flags.push_back(std::move(axis));
  }
  return sim::merge_sweep_axes(own_axes, flags);
}

// The grid of `axes`. Keys and the grid's size are checked before the grid is expanded
// (sim/sweep.hpp); a grid with no point, a key swept twice, or more keys than --plot can draw is a
// usage error.
sim::SweepGrid checked_grid(const SweepOptions& o, const sim::Scenario& sc, const ScenarioLoad& load,
                            const std::vector<sim::SweepAxis>& axes) {
  blame_sweep_flags(o, [&] {
    with_flag_errors(load.flag_sets, [&] {
      sim::check_sweep_keys(sc, axes, load.options);
      return 0;
    });
  });
  sim::SweepGrid grid = sim::make_sweep_grid(axes, load.path);
  grid.step_columns = sim::sweep_runs_steps(sc, axes);
  if (grid.points.empty())
    throw UsageError(sc.sweep.empty() ? fmt::format("{} has no sweep: section; give the axes with --sweep KEY=V1,V2,...", load.path)
                                      : "every axis was dropped (--no-axis / --only-axes); give the axes with --sweep KEY=V1,V2,...");
  std::set<std::string> seen;
  for (const std::string& c : grid.columns)
    if (!seen.insert(c).second) throw UsageError("the key '" + c + "' is swept by two axes");
  if (!o.plot.empty() && grid.columns.size() > 2)
    throw UsageError(fmt::format("--plot draws one swept key (line chart) or two (heatmap); this sweep varies {}: {} "
                                 "(drop one with --no-axis KEY, or keep only your --sweep axes with --only-axes)",
                                 grid.columns.size(), sim::sweep_axes_text(axes)));
  return grid;
}

// What --resume found done: each point's rows by point key, the checkpoint files read, and (on every
// rank) the keys to skip.
struct Resumed {
  std::map<std::string, std::string> done;
  std::vector<std::string> files;
  std::set<std::string> skip;
};

// --resume: rank 0 reads what is done and tells the others which points to skip.
Resumed read_resumed(const SweepOptions& o, const sim::SweepWorld& world, const sim::SweepGrid& grid,
                     sim::SweepFormat format, const std::vector<sim::PreparedPoint>& prepared) {
  Resumed r;
  std::string done_keys;
  std::exception_ptr resume_error;
  if (world.rank() == 0 && o.resume) {
    try {
      r.done = sim::read_sweep_output(o.output, grid, format);
      for (const std::string& f : checkpoint_files(o.output)) {
        sim::read_sweep_checkpoint(f, format, r.done);
        r.files.push_back(f);
      }
      // A point counts as done only with all its rows (a file cut short by hand loses its last point).
      std::map<std::string, std::size_t> expected;
      for (std::size_t i = 0; i < grid.points.size(); ++i)
        expected[sim::sweep_point_key(grid.points[i].values)] = sim::sweep_expected_rows(prepared[i]);
      for (auto it = r.done.begin(); it != r.done.end();) {
        const auto e = expected.find(it->first);
        if (e == expected.end() || sim::sweep_row_count(format, it->second) != e->second) it = r.done.erase(it);
        else ++it;
      }
      done_keys = "OK\n";
      for (const auto& [k, v] : r.done) done_keys += k + "\n";
    } catch (...) {
      resume_error = std::current_exception();
      done_keys = "ERR\n";
    }
  }
  world.broadcast(done_keys);
  if (resume_error) std::rethrow_exception(resume_error);
  if (done_keys.rfind("ERR", 0) == 0) throw QuietExit(kExitUsage);
  if (o.resume) {
    std::istringstream keys(done_keys.substr(3));
    for (std::string k; std::getline(keys, k);)
      if (!k.empty()) r.skip.insert(k);
  }
  return r;
}

// The points this process evaluates and what it needs to: a row text per point, appended to the
// checkpoint as each finishes. Returns them as records for rank 0 (put_record); the first error
// stops the rest.
struct PointWork {
  const SweepOptions& o;
  const sim::Scenario& sc;
  const sim::SweepGrid& grid;
  const std::vector<sim::PreparedPoint>& prepared;
  const std::vector<std::string>& keys;  // sweep_point_key of every point
  sim::SweepFormat format;
  int jobs = 1;
};

std::string evaluate_points(const PointWork& w, const std::vector<std::size_t>& mine, Checkpoint& checkpoint,
                            Progress& progress) {
  std::vector<std::string> rows(mine.size());
  std::vector<char> kinds(mine.size(), 'R');
  std::atomic<bool> stop{false};
  sim::parallel_for(mine.size(), w.jobs, [&](std::size_t k) {
    if (stop) return;
    const std::size_t i = mine[k];
    try {
      rows[k] = sim::evaluate_sweep_point(w.sc, w.grid, i, w.prepared[i], w.format, w.o.verify_bytes);
    } catch (const InputError& e) {
      rows[k] = e.what();
      kinds[k] = 'E';
      stop = true;
      return;
    } catch (const std::bad_alloc&) {
      // The point needs more memory than the process may use: the user's to change, like bad input.
      rows[k] = fmt::format("at {}: out of memory (the process may use no more memory; a smaller point or fewer "
                            "threads (-j) needs less)", sim::sweep_point_key(w.grid.points[i].values));
      kinds[k] = 'E';
      stop = true;
      return;
    } catch (const sim::ResourceError& e) {
      // Hardware a scheme cannot run on at this point (run reports the same, exit 2).
      rows[k] = fmt::format("at {}: cannot simulate this: {}", sim::sweep_point_key(w.grid.points[i].values), e.what());
      kinds[k] = 'E';
      stop = true;
      return;
    } catch (const std::exception& e) {
      rows[k] = fmt::format("at {}: {}", sim::sweep_point_key(w.grid.points[i].values), e.what());
      kinds[k] = 'X';
      stop = true;
      return;
    }
    checkpoint.append(sim::sweep_checkpoint_line(w.format, w.keys[i], rows[k]));
    progress.point_done();
  });
  std::string buf;
  for (std::size_t k = 0; k < mine.size(); ++k)
    if (kinds[k] != 'R' || !rows[k].empty()) put_record(buf, kinds[k], mine[k], rows[k]);
  return buf;
}

// Rank 0: every point's rows, from the gathered records or from what --resume found done. The
// error at the lowest point, if any, is thrown (an input error as a usage error).
std::vector<std::string> point_texts(const std::vector<std::string>& gathered, const std::vector<std::string>& keys,
                                     const std::map<std::string, std::string>& done) {
  std::vector<std::string> texts(keys.size());
  std::vector<bool> have(keys.size(), false);
  const Record* first_error = nullptr;
  std::vector<Record> records;
  for (const std::string& g : gathered)
    for (Record& r : parse_records(g)) records.push_back(std::move(r));
  for (const Record& r : records) {
    if (r.kind == 'R') {
      texts[r.index] = r.text;
      have[r.index] = true;
    } else if (!first_error || r.index < first_error->index) {
      first_error = &r;
    }
  }
  if (first_error) {
    if (first_error->kind == 'E') throw UsageError(first_error->text);
    throw std::runtime_error("sweep: " + first_error->text);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (have[i]) continue;
    auto it = done.find(keys[i]);
    if (it == done.end()) throw std::logic_error("sweep: point " + std::to_string(i) + " has no result");
    texts[i] = it->second;
  }
  return texts;
}

// -o and --plot are staged and moved into place together (outputs appear all or none): a plot that
// fails leaves the output file as it was, and stdout gets the table only when everything succeeded.
// A failure says what was written: nothing, or (a commit that failed part way) which file; the
// checkpoint `checkpoint_path` stays for --resume.
void write_sweep_outputs(const SweepOptions& o, const sim::Scenario& sc, const std::string& text, std::ostream& out,
                         std::ostream& err, const std::string& checkpoint_path) {
  StagedOutputs staged;
  const std::string kept = checkpoint_path.empty() ? std::string()
                                                   : fmt::format("; the finished points stay in {} for --resume", checkpoint_path);
  auto note = [&](const std::exception& e) {
    std::string n = written_note(e);
    return n.substr(0, n.size() - 1) + kept + ")";
  };
  auto named = [&](const char* flag, const std::string& path, const auto& fn) {
    try {
      fn();
    } catch (const UsageError&) {
      throw;
    } catch (const std::runtime_error& e) {
      throw UsageError(fmt::format("{} {}: {} {}", flag, path, e.what(), note(e)));
    }
  };
  if (!o.output.empty()) named("-o", o.output, [&] { staged.stage(o.output, text); });
  if (!o.plot.empty()) {
    // The plotting script reads the results from a temporary of its own (the staged output is
    // not in place yet) and writes the image to the plot's staged temporary.
    const fs::path tmp = fs::temp_directory_path() / fmt::format("overlap-sim-sweep-{}.{}", ::getpid(), o.format);
    write_output(tmp.string(), text);
    std::string png;
    named("--plot", o.plot, [&] { png = staged.reserve(o.plot); });
    const std::string script = (fs::path(source_dir()) / "tools" / "plot_sweep.py").string();
    const int rc = run_process({python_program(), script, tmp.string(), "--output", png, "--title",
                                fmt::format("{} on {}", sc.name, sc.hardware_name)},
                               false);
    std::error_code ec;
    fs::remove(tmp, ec);
    if (rc != 0) throw UsageError(fmt::format("--plot: {} failed (exit status {}; nothing was written{})", script, rc, kept));
  }
  try {
    staged.commit();
  } catch (const std::runtime_error& e) {
    throw UsageError(fmt::format("{} {}", e.what(), note(e)));
  }
  if (o.output.empty()) out << text;
  for (const std::string* written : {&o.output, &o.plot})
    if (!written->empty()) err << "wrote " << *written << "\n";
}

// Runs the sweep on this process's share of the points. Errors that every rank meets alike (bad
// options, bad points) are thrown; everything after the ranks part ways goes through messages so no
// rank waits forever for another that failed.
void run_sweep(const SweepOptions& o, std::ostream& out, std::ostream& err, const sim::SweepWorld& world) {
  const bool root = world.rank() == 0;
  bool output_in_place = false;
  const sim::SweepFormat format = check_sweep_options(o, output_in_place);

  ScenarioLoad load = scenario_load(o.scenario, o.sets, o.flags);
  load.options.validate_sweep = true;
  load.options.check_sweep_values = false;  // every point is checked below, all bad ones reported together
  sim::Scenario sc = with_flag_errors(load.flag_sets, [&] { return sim::load_scenario_file(load.path, load.options); });
  // Every row names the scenario with what was overridden (sim/report.hpp scenario_label).
  sc.name = sim::scenario_label(sc.name, shown_overrides(o.sets, load.flag_sets));
  const std::vector<sim::SweepAxis> axes = sweep_axes(o, sc, load.path);
  const sim::SweepGrid grid = checked_grid(o, sc, load, axes);

  const int jobs = o.jobs > 0 ? o.jobs
                              : std::max(1, sim::default_jobs() / std::max(1, world.local_size()));
  sim::ScenarioOptions point_load = load.options;
  std::vector<sim::PreparedPoint> prepared;
  blame_sweep_flags(o, [&] {
    prepared = with_flag_errors(load.flag_sets, [&] { return sim::prepare_sweep(sc, grid, point_load, jobs); });
  });
  const Resumed resumed = read_resumed(o, world, grid, format, prepared);

  std::vector<std::string> keys(grid.points.size());
  std::vector<std::size_t> remaining;
  for (std::size_t i = 0; i < grid.points.size(); ++i) {
    keys[i] = sim::sweep_point_key(grid.points[i].values);
    if (!resumed.skip.count(keys[i])) remaining.push_back(i);
  }
  std::vector<std::size_t> mine;
  for (std::size_t k = static_cast<std::size_t>(world.rank()); k < remaining.size(); k += static_cast<std::size_t>(world.size()))
    mine.push_back(remaining[k]);

  const std::string checkpoint_path =
      o.output.empty() || output_in_place ? std::string()
                       : o.output + ".partial" + (world.distributed() ? fmt::format(".{}", world.rank()) : std::string());
  // --resume read -o FILE and its checkpoints back: they are this command's own outputs. Every input
  // is read by now (the points' profiles too): no output may replace one, checked before any point runs.
  forget_input_files("sweep output");
  forget_input_files("sweep checkpoint");
  check_outputs_not_inputs({{"-o", o.output}, {"--plot", o.plot}, {"-o's checkpoint", checkpoint_path}});
  // The checkpoint is appended to as points finish: a pipe or a device there would block or swallow it.
  if (!checkpoint_path.empty() && resolve_output(checkpoint_path).in_place)
    throw UsageError(fmt::format("-o {}: its checkpoint {} must be a regular file (it is a pipe or a device)", o.output,
                                 checkpoint_path));
  // A checkpoint this run started from is read above; a new one is written from scratch.
  Checkpoint checkpoint(checkpoint_path);
  // The resumed points go into the new checkpoint too, so a second interruption loses nothing.
  for (const auto& [k, v] : resumed.done) checkpoint.append(sim::sweep_checkpoint_line(format, k, v));
  const bool show = root && (o.progress || o.progress_if_tty);
  Progress progress(err, show, mine.size(),
                    world.distributed() ? fmt::format("sweep (rank 0 of {}): ", world.size()) : std::string("sweep: "));
  const PointWork work{o, sc, grid, prepared, keys, format, jobs};
  const std::vector<std::string> gathered = world.gather(evaluate_points(work, mine, checkpoint, progress));

  // Rank 0 assembles, writes, and tells the others whether it did.
  std::string status = "OK";
  std::exception_ptr failure;
  if (root) {
    try {
      const std::vector<std::string> texts = point_texts(gathered, keys, resumed.done);
      progress.finish(remaining.size(), grid.points.size() - remaining.size(), jobs, world.size());
      write_sweep_outputs(o, sc, sim::assemble_sweep_output(sc, grid, format, texts), out, err, checkpoint_path);
      for (const std::string& f : resumed.files) {
        std::error_code ec;
        fs::remove(f, ec);
      }
    } catch (...) {
      failure = std::current_exception();
      status = "ERR";
    }
  }
  world.broadcast(status);
  // The output is written, so the checkpoint has served (after a failure it stays for --resume).
  if (status == "OK") checkpoint.remove();
  if (failure) std::rethrow_exception(failure);
  if (status != "OK") throw QuietExit(kExitUsage);
}

}  // namespace

void cmd_sweep(const SweepOptions& options, std::ostream& out, std::ostream& err) {
  run_on_mpi_world("sweep", [&](sim::SweepWorld& world) { run_sweep(options, out, err, world); }, err);
}

Command add_sweep_command(CLI::App& app) {
  const auto options = std::make_shared<SweepOptions>();
  SweepOptions& sweep = *options;
  CLI::App* sweep_cmd = app.add_subcommand(
      "sweep", "Run a scenario over the cartesian product of its sweep: axes (and --sweep flags), every scheme");
  sweep_cmd->add_option("scenario", sweep.scenario, std::string("Scenario YAML; default ") + kDefaultScenario);
  sweep_cmd->add_option("--sweep,--axis", sweep.sweeps,
                        "An axis: key=v1,v2,... (repeatable; replaces the scenario's axis of that key). A value "
                        "A..BxF is A, A*F, ... up to B (A..B: x2); A..B+S is A, A+S, ... up to B")
      ->type_name("KEY=V1,V2,...")
      ->allow_extra_args(false);
  sweep_cmd->add_option("--no-axis", sweep.no_axes, "Drop the scenario's own axis over KEY (repeatable)")
      ->type_name("KEY")
      ->allow_extra_args(false);
  sweep_cmd->add_flag("--only-axes", sweep.only_axes, "Sweep only the --sweep axes, none of the scenario's own");
  add_scenario_flags(sweep_cmd, sweep.flags);
  sweep_cmd->add_option("--set", sweep.sets, "Override a scenario key: a.b.c=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  sweep_cmd->add_option("-j,--jobs", sweep.jobs, "Threads (default: every core, shared among mpirun ranks on a machine)")
      ->transform(decimal_integer())
      ->check(CLI::Range(1, kMaxJobs));
  sweep_cmd->add_option("--format", sweep.format, "csv or json (default csv)");
  sweep_cmd->add_option("--output,-o", sweep.output, "Write the rows to FILE (atomically at the end; FILE.partial "
                                                      "holds the points finished so far)");
  sweep_cmd->add_flag("--resume", sweep.resume, "Skip the points already in --output FILE (and its FILE.partial)");
  sweep_cmd->add_flag("--progress", sweep.progress, "Show the progress bar even when stderr is not a terminal");
  sweep_cmd->add_option("--plot", sweep.plot, "PNG: heatmap (two swept keys) or line chart (one) of speedup and "
                                              "exposed communication per scheme (python3 + matplotlib)");
  sweep_cmd->add_flag("--verify-bytes", sweep.verify_bytes,
                      "Check every scheme's byte accounting on a steps-fidelity rebuild (as run does; slower)");
  sweep_cmd->footer(examples({"overlap-sim sweep -o sweep.csv --plot sweep.png",
                              "overlap-sim sweep --only-axes --sweep workload.tokens=1024..32768x2 --plot tokens.png",
                              "overlap-sim sweep --no-axis hardware.fabric.links.nvlink.bandwidth_gbps --tp 4",
                              "overlap-sim sweep flashoverlap-a800-allreduce --format json -o fo.json",
                              "overlap-sim sweep --sweep workload.tokens=2048,4096,8192 --sweep hardware.comm.channels=16,24,32",
                              "overlap-sim sweep -o big.csv --resume --progress",
                              "mpirun -np 4 overlap-sim sweep -o sweep.csv   # rank 0 writes what one process would"}));
  return {sweep_cmd, [options, sweep_cmd](std::ostream& out, std::ostream& err) {
            // FILE.partial, the checkpoint beside -o FILE, is an output too.
            std::vector<std::pair<std::string, std::string>> checkpoint;
            if (!options->output.empty() && options->output != "-" && options->output.back() != '/')
              checkpoint.emplace_back("-o's checkpoint", options->output + ".partial");
            check_output_flags({{"-o", &options->output, sweep_cmd->get_option("--output")},
                                {"--plot", &options->plot, sweep_cmd->get_option("--plot")}},
                               checkpoint);
            // The progress bar goes to a terminal only (and with --progress anywhere).
            options->progress_if_tty = &err == &std::cerr && ::isatty(STDERR_FILENO);
            cmd_sweep(*options, out, err);
            return kExitOk;
          }};
}

}  // namespace overlap::tools
