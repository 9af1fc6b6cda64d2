// `overlap-sim collective`: the collective model as an nccl-tests table (tools/cmd_collective.hpp).
#include "tools/cmd_collective.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost_model/collective_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/nccl_tests_import.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/atomic_file.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tools/command_errors.hpp"
#include "tools/export_production.hpp"
#include "tools/input_paths.hpp"

namespace overlap::tools {
namespace {

struct DataType {
  const char* name;
  int bytes;
};
// nccl-tests' type names (-d).
constexpr DataType kTypes[] = {{"int8", 1},   {"uint8", 1},  {"int32", 4}, {"uint32", 4},   {"int64", 8},
                               {"uint64", 8}, {"half", 2},   {"float", 4}, {"double", 8},   {"bfloat16", 2},
                               {"f8e4m3", 1}, {"f8e5m2", 1}};

const DataType* find_type(const std::string& name) {
  for (const DataType& t : kTypes)
    if (name == t.name) return &t;
  return nullptr;
}

// nccl-tests prints a value in a fixed width with as many of two decimals as fit.
std::string fixed_width(double v, int width) {
  for (int decimals = 2; decimals >= 0; --decimals) {
    const std::string s = fmt::format("{:>{}.{}f}", v, width, decimals);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return fmt::format("{:>{}.{}e}", v, width, width >= 7 ? 1 : 0);
}

const char* program_name(CollectivePrimitive p) {
  switch (p) {
    case CollectivePrimitive::all_reduce: return "all_reduce_perf";
    case CollectivePrimitive::reduce_scatter: return "reduce_scatter_perf";
    case CollectivePrimitive::all_gather: return "all_gather_perf";
    case CollectivePrimitive::all_to_all: return "alltoall_perf";
    case CollectivePrimitive::broadcast: return "broadcast_perf";
    case CollectivePrimitive::reduce: return "reduce_perf";
  }
  return "?";
}

bool reduces(CollectivePrimitive p) {
  return p == CollectivePrimitive::all_reduce || p == CollectivePrimitive::reduce_scatter ||
         p == CollectivePrimitive::reduce;
}

bool rooted(CollectivePrimitive p) { return p == CollectivePrimitive::broadcast || p == CollectivePrimitive::reduce; }

// One row of the sweep: nccl-tests' size and element count for a requested size.
struct Row {
  long long bytes = 0;  // the "size" column (full array)
  long long count = 0;  // the "count" column
  CollectivePlan plan;
  double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;
};

// nccl-tests' byte counts: all-gather, reduce-scatter and all-to-all split the array into per-rank
// parts aligned to 16 bytes, and print the per-rank count.
Row sizes_of(CollectivePrimitive p, long long requested, int type_bytes, int n) {
  Row r;
  const long long count = requested / type_bytes;
  if (p == CollectivePrimitive::all_gather || p == CollectivePrimitive::reduce_scatter ||
      p == CollectivePrimitive::all_to_all) {
    const long long align = std::max(1, 16 / type_bytes);
    const long long per_rank = (count / n) / align * align;
    r.count = per_rank;
    r.bytes = per_rank * n * type_bytes;
  } else {
    r.count = count;
    r.bytes = count * type_bytes;
  }
  return r;
}

long long parse_size_option(const std::string& text, const char* option) {
  const auto v = parse_nccl_tests_size(text);
  if (!v) throw UsageError(fmt::format("{}: not a size (a number with an optional K, M or G suffix): '{}'", option, text));
  return *v;
}

std::string resolve_hardware(const std::string& name) {
  const bool path = std::filesystem::path(name).extension() == ".yaml" || name.find('/') != std::string::npos;
  return path ? resolve_input_path(name) : name;
}

}  // namespace

std::optional<long long> parse_nccl_tests_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::size_t i = 0;
  bool digits = false, dot = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !dot))) {
    if (text[i] == '.') dot = true;
    else digits = true;
    ++i;
  }
  if (!digits) return std::nullopt;
  const double number = std::strtod(text.substr(0, i).c_str(), nullptr);
  double unit = 1;
  if (i < text.size()) {
    switch (std::tolower(static_cast<unsigned char>(text[i]))) {
      case 'k': unit = 1024.0; break;
      case 'm': unit = 1024.0 * 1024; break;
      case 'g': unit = 1024.0 * 1024 * 1024; break;
      default: return std::nullopt;
    }
    ++i;
  }
  if (i != text.size()) return std::nullopt;
  const double bytes = number * unit;
  if (!std::isfinite(bytes) || bytes > 1e18) return std::nullopt;
  return static_cast<long long>(bytes);
}

Command add_collective_command(CLI::App& app) {
  const auto options = std::make_shared<CollectiveOptions>();
  CollectiveOptions& o = *options;
  CLI::App* cmd = app.add_subcommand(
      "collective", "Print the collective model's times as an nccl-tests table (algorithm, protocol and channels per size)");
  cmd->add_option("primitive", o.primitive,
                  "all_reduce, reduce_scatter, all_gather, all_to_all, broadcast or reduce (or nccl-tests' program name)")
      ->required();
  cmd->add_option("--hardware", o.hardware, "Built-in profile name or a profile YAML path (default h100-sxm-8x-nvswitch)");
  cmd->add_option("--ranks,-g", o.ranks, "Ranks (GPUs) in the collective, at least 2 (default: all of the profile's)")
      ->transform(decimal_integer());
  cmd->add_option("-b,--minbytes", o.min_bytes, "Smallest size, nccl-tests syntax (8, 1K, 8M, 8G); default 8");
  cmd->add_option("-e,--maxbytes", o.max_bytes, "Largest size; default 8G");
  cmd->add_option("-f,--stepfactor", o.step_factor, "Multiply the size by this each row (default 2)");
  cmd->add_option("-i,--stepbytes", o.step_bytes, "Add this many bytes each row instead of -f");
  cmd->add_option("-d,--datatype", o.dtype, "Element type, nccl-tests' names (default float)");
  // nccl-tests spells this -o; here -o is --output, as in every other command.
  cmd->add_option("--op", o.op, "Reduction name printed in the redop column (nccl-tests' -o; default sum)");
  cmd->add_option("--algo", o.algorithm,
                  "NCCL_ALGO: auto, Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree or PAT (default: the profile's)");
  cmd->add_option("--proto", o.protocol, "NCCL_PROTO: auto, LL, LL128 or Simple (default: the profile's)");
  cmd->add_option("--set", o.sets, "Override a profile key: [hardware.]a.b=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--format", o.format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("-o,--output", o.output, "Write the table (or JSON) to FILE (atomically) instead of stdout");
  cmd->add_option("--export", o.export_spec,
                  "Also write FORMAT to FILE: nccl-tuner = NCCL's example tuner plugin CSV (NCCL_TUNER_CONFIG_FILE) "
                  "with the algorithm, protocol and channels chosen per size range")
      ->expected(2)
      ->allow_extra_args(true)
      ->type_name("FORMAT FILE");
  cmd->footer("\nExamples:\n"
              "  overlap-sim collective all_reduce                          # 8 B .. 8 GB on 8x H100, as all_reduce_perf -b 8 -e 8G -f 2\n"
              "  overlap-sim collective all_reduce_perf -b 1M -e 1G -g 4 --algo Ring\n"
              "  overlap-sim collective reduce_scatter --hardware a800-8x-nvlink --format json -o rs.json\n"
              "  overlap-sim collective all_reduce -b 1K -e 1G --export nccl-tuner nccl_tuner.conf\n");
  return {cmd, [options, cmd](std::ostream& out, std::ostream& err) {
            check_output_flags({{"-o", &options->output, cmd->get_option("--output")}});
            cmd_collective(*options, out, err);
            return kExitOk;
          }};
}

namespace {
void collective_report(const CollectiveOptions& o, std::ostream& out);
std::string nccl_tuner_export(const CollectiveOptions& o);
}  // namespace

void cmd_collective(const CollectiveOptions& o, std::ostream& out, std::ostream& err) {
  if (o.ranks && *o.ranks < 2)
    throw UsageError(fmt::format("--ranks/-g: must be at least 2 (got {}; leave it out for every GPU of the profile)", *o.ranks));
  std::string export_path;
  if (!o.export_spec.empty()) {
    if (o.export_spec.size() != 2 || o.export_spec[0] != "nccl-tuner")
      throw UsageError(fmt::format("--export: collective writes nccl-tuner FILE (NCCL's example tuner plugin CSV; got '{}')",
                                   o.export_spec.empty() ? std::string() : o.export_spec[0]));
    export_path = o.export_spec[1];
    try {
      check_distinct_outputs({{"-o", o.output}, {"--export", export_path}});
      resolve_output(export_path);  // a directory, a block device or a socket: refused before anything runs
    } catch (const OutputError& e) {
      throw UsageError(std::string("--export: ") + e.what());
    }
  }
  std::ostringstream text;
  collective_report(o, text);
  const std::string exported = export_path.empty() ? std::string() : nccl_tuner_export(o);
  check_outputs_not_inputs({{"-o", o.output}, {"--export", export_path}});  // the profile is read by now
  if (o.output.empty() && exported.empty()) {
    out << text.str();
    return;
  }
  // -o and --export land together or not at all.
  StagedOutputs staged;
  try {
    if (!o.output.empty()) staged.stage(o.output, text.str());
    if (!exported.empty()) staged.stage(export_path, exported);
    staged.commit();
  } catch (const std::runtime_error& e) {
    throw UsageError(fmt::format("{} {}", e.what(), written_note(e)));
  }
  if (o.output.empty()) out << text.str();
  else err << "wrote " << o.output << "\n";
  if (!exported.empty())
    err << "wrote " << export_path << " (load it with NCCL_TUNER_CONFIG_FILE=" << export_path
        << " and NCCL_TUNER_PLUGIN=<path to libnccl-tuner-example.so>; " << nccl_tuner_uncovered_note() << ")\n";
}

namespace {

// The command line's sweep, checked: what is run (primitive, data type, NCCL_ALGO / NCCL_PROTO) and
// the sizes (-b .. -e by -i bytes or by a factor -f).
struct Sweep {
  CollectivePrimitive prim{};
  const DataType* type = nullptr;
  CollectiveOverrides overrides;
  long long lo = 0, hi = 0;
  long long step_bytes = 0;  // -i; 0 = stepping by `factor`
  long long factor = 0;      // -f; 0 = stepping by `step_bytes`
};

Sweep parse_sweep(const CollectiveOptions& o) {
  Sweep w;
  auto prim = parse_collective_primitive(o.primitive);
  if (!prim) prim = primitive_from_nccl_tests_program(o.primitive);
  if (!prim) {
    throw UsageError("unknown collective '" + o.primitive +
                     "' (all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce)");
  }
  w.prim = *prim;
  w.type = find_type(o.dtype);
  if (!w.type) {
    std::string names;
    for (const DataType& t : kTypes) names += (names.empty() ? "" : ", ") + std::string(t.name);
    throw UsageError("-d: unknown data type '" + o.dtype + "' (" + names + ")");
  }
  if (o.format != "table" && o.format != "json") throw UsageError("--format: must be table or json");
  if (o.algorithm != "auto") {
    w.overrides.algorithm = parse_nccl_algorithm(o.algorithm);
    if (!w.overrides.algorithm)
      throw UsageError("--algo: unknown algorithm '" + o.algorithm +
                       "' (auto, Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT)");
  }
  if (o.protocol != "auto") {
    w.overrides.protocol = parse_nccl_protocol(o.protocol);
    if (!w.overrides.protocol)
      throw UsageError("--proto: unknown protocol '" + o.protocol + "' (auto, LL, LL128, Simple)");
  }
  w.lo = parse_size_option(o.min_bytes, "-b");
  w.hi = parse_size_option(o.max_bytes, "-e");
  if (w.lo > w.hi) throw UsageError(fmt::format("-b {} is larger than -e {}", o.min_bytes, o.max_bytes));
  if (!o.step_bytes.empty()) {
    w.step_bytes = parse_size_option(o.step_bytes, "-i");
    if (w.step_bytes <= 0) throw UsageError("-i: must be a positive size");
  } else {
    char* end = nullptr;
    w.factor = std::strtoll(o.step_factor.c_str(), &end, 10);
    if (o.step_factor.empty() || *end != '\0' || w.factor < 2)
      throw UsageError("-f: must be an integer of at least 2 (got '" + o.step_factor + "')");
  }
  return w;
}

// One planned row per size of the sweep, on `n` ranks over `link`.
std::vector<Row> plan_rows(const Sweep& w, const HardwareProfile& hw, int n, const std::string& link) {
  std::vector<Row> rows;
  for (long long s = w.lo;;) {
    Row r = sizes_of(w.prim, s, w.type->bytes, n);
    r.plan = plan_collective(hw, w.prim, r.bytes, n, link, w.overrides);
    r.time_us = us_from_ps(r.plan.time_ps);
    r.algbw_gbps = r.time_us > 0 ? static_cast<double>(r.bytes) / 1e3 / r.time_us : 0.0;
    r.busbw_gbps = busbw_from_algbw(w.prim, n, r.algbw_gbps);
    rows.push_back(r);
    if (rows.size() > 100000) throw UsageError("-b/-e/-i: more than 100000 sizes");
    // A zero-byte first row keeps its place (nccl-tests prints it); a factor sweep goes on from 1 byte.
    const long long next = w.step_bytes > 0 ? s + w.step_bytes : (s == 0 ? 1 : s * w.factor);
    if (next > w.hi || next <= s) break;
    s = next;
  }
  return rows;
}

// What both formats print of a planned sweep.
struct Report {
  const Sweep& sweep;
  const HardwareProfile& hw;
  int n = 0;
  std::string link;
  std::vector<Row> rows;
  std::string redop;  // the reduction (-o), "none" for a primitive that does not reduce
  int root = -1;      // 0 for a rooted primitive, else -1
  const char* program = "";

  double avg_busbw() const {
    double sum = 0;
    for (const Row& r : rows) sum += r.busbw_gbps;
    return rows.empty() ? 0.0 : sum / static_cast<double>(rows.size());
  }
};

const char* algo_of(const Row& r) { return r.bytes > 0 ? nccl_algorithm_name(r.plan.algorithm) : "-"; }
const char* proto_of(const Row& r) { return r.bytes > 0 ? nccl_protocol_name(r.plan.protocol) : "-"; }
const char* source_of(const Row& r) { return r.bytes <= 0 ? "-" : r.plan.from_curve ? "curve" : "model"; }

// nccl-tests' JSON output (-J), with the model's algorithm, protocol and channels per row.
void write_json(const Report& rep, std::ostream& out) {
  nlohmann::json devices = nlohmann::json::array();
  for (int r = 0; r < rep.n; ++r) devices.push_back({{"rank", r}, {"device", r}, {"device_info", rep.hw.gpu.name}});
  nlohmann::json results = nlohmann::json::array();
  for (const Row& r : rep.rows) {
    const nlohmann::json m = {{"time", r.time_us}, {"alg_bw", r.algbw_gbps}, {"bus_bw", r.busbw_gbps}, {"nwrong", nullptr}};
    results.push_back({{"size", r.bytes},
                       {"count", r.count},
                       {"type", rep.sweep.type->name},
                       {"redop", rep.redop},
                       {"root", rep.root},
                       {"out_of_place", m},
                       {"in_place", m},
                       {"algorithm", algo_of(r)},
                       {"protocol", proto_of(r)},
                       {"channels", r.bytes > 0 ? r.plan.channels : 0},
                       {"time_from", source_of(r)}});
  }
  const nlohmann::json report = {
      {"generator", "overlap-sim collective (NCCL model, not a measurement)"},
      {"collective", rep.program},
      {"config",
       {{"nthreads", 1},
        {"ngpus", rep.n},
        {"minimum_bytes", rep.sweep.lo},
        {"maximum_bytes", rep.sweep.hi},
        {"step_factor", rep.sweep.factor},
        {"step_bytes", rep.sweep.step_bytes},
        {"hardware", rep.hw.name},
        {"link_class", rep.link},
        {"devices", devices}}},
      {"results", results},
      {"avg_bus_bw", rep.avg_busbw()}};
  out << report.dump(2) << "\n";
}

// nccl-tests' header: the run's configuration, the devices and the column heads.
void write_table_header(const Report& rep, std::ostream& out) {
  const HardwareProfile& hw = rep.hw;
  const CollectiveOverrides& ov = rep.sweep.overrides;
  out << fmt::format("# overlap-sim collective: NCCL's tuning model (not a measurement) on {}{}\n", hw.name,
                     hw.description.empty() ? "" : " (" + hw.description + ")");
  out << fmt::format("# {} ranks over link class '{}'; algorithm {}, protocol {}\n", rep.n, rep.link,
                     ov.algorithm         ? nccl_algorithm_name(*ov.algorithm)
                     : hw.comm.algorithm ? nccl_algorithm_name(*hw.comm.algorithm)
                                         : "auto",
                     ov.protocol         ? nccl_protocol_name(*ov.protocol)
                     : hw.comm.protocol ? nccl_protocol_name(*hw.comm.protocol)
                                        : "auto");
  out << "# Collective test starting: " << rep.program << "\n";
  const long long step_bytes = rep.sweep.step_bytes;
  out << fmt::format("# nThread 1 nGpus {} minBytes {} maxBytes {} step: {} warmup iters: 0 iters: 0 agg iters: 1 "
                     "validation: 0 graph: 0\n",
                     rep.n, rep.sweep.lo, rep.sweep.hi,
                     step_bytes > 0 ? fmt::format("{}(bytes)", step_bytes) : fmt::format("{}(factor)", rep.sweep.factor));
  out << "#\n# Using devices\n";
  for (int r = 0; r < rep.n; ++r)
    out << fmt::format("#  Rank {:>2} Group  0 Pid      0 on overlap-sim device {:>2} [model] {}\n", r, r, hw.gpu.name);
  out << "#\n";
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place\n", "",
                     "", "", "", "");
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  "
                     "{:<13}  {:<6}  {:>8}  {}\n",
                     "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                     "busbw", "#wrong", "algo", "proto", "channels", "time_from");
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
                     "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

// nccl-tests' table: header, one line per size, the NVLS note where it applies, the average.
void write_table(const Report& rep, std::ostream& out) {
  write_table_header(rep, out);
  bool any_nvls = false;
  for (const Row& r : rep.rows) {
    any_nvls |= r.bytes > 0 && (r.plan.algorithm == NcclAlgorithm::NVLS || r.plan.algorithm == NcclAlgorithm::NVLSTree);
    const std::string group = fmt::format("  {}  {}  {}    N/A", fixed_width(r.time_us, 7), fixed_width(r.algbw_gbps, 6),
                                          fixed_width(r.busbw_gbps, 6));
    out << fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {:<13}  {:<6}  {:>8}  {}\n", r.bytes, r.count,
                       rep.sweep.type->name, rep.redop, rep.root, group, group, algo_of(r), proto_of(r),
                       r.bytes > 0 ? r.plan.channels : 0, source_of(r));
  }
  if (any_nvls) {
    out << "# NVLS rows: busbw is nccl-tests' algbw x 2(n-1)/n as for any all-reduce; with NVLink SHARP each GPU's\n"
           "# link carries algbw x (n+1)/n each way (NCCL maintainers, nccl-tests issue 212 / PR 239; facts.md).\n";
  }
  out << fmt::format("# Avg bus bandwidth    : {:g}\n", rep.avg_busbw());
  out << "#\n# Collective test concluded: " << rep.program << "\n";
}

void collective_report(const CollectiveOptions& o, std::ostream& out) {
  const Sweep sweep = parse_sweep(o);
  const HardwareProfile hw = load_profile(resolve_hardware(o.hardware), default_hardware_dir(), o.sets);
  const int n = o.ranks ? *o.ranks : hw.fabric.num_gpus;
  if (n < 2 || n > hw.fabric.num_gpus)
    throw UsageError(fmt::format("--ranks: must be between 2 and the profile's {} GPUs (got {})", hw.fabric.num_gpus, n));
  const std::string link = sim::collective_link_class(hw, n);
  const Report rep{sweep,
                   hw,
                   n,
                   link,
                   plan_rows(sweep, hw, n, link),
                   reduces(sweep.prim) ? o.op : "none",
                   rooted(sweep.prim) ? 0 : -1,
                   program_name(sweep.prim)};
  if (o.format == "json") write_json(rep, out);
  else write_table(rep, out);
}

// NCCL's example tuner CSV for the sweep: the model's choice per size, merged into size ranges.
std::string nccl_tuner_export(const CollectiveOptions& o) {
  const Sweep sweep = parse_sweep(o);
  if (nccl_tuner_collective(sweep.prim).empty())
    throw UsageError(fmt::format("--export nccl-tuner: NCCL's tuner plugin tunes broadcast, reduce, allgather, "
                                 "reducescatter and allreduce (plugins/tuner/example README), not {}",
                                 collective_primitive_name(sweep.prim)));
  const HardwareProfile hw = load_profile(resolve_hardware(o.hardware), default_hardware_dir(), o.sets);
  const int n = o.ranks ? *o.ranks : hw.fabric.num_gpus;
  const std::string link = sim::collective_link_class(hw, n);
  const int per_node = hw.fabric.gpus_per_node > 0 ? hw.fabric.gpus_per_node : hw.fabric.num_gpus;
  const int nodes = (n + per_node - 1) / per_node;
  // Every collective the plugin tunes, so no collective the job runs falls to the plugin's default;
  // a forced NCCL_ALGO / NCCL_PROTO (--algo, --proto) is a choice for the swept collective only.
  const bool forced = sweep.overrides.algorithm || sweep.overrides.protocol;
  std::vector<CollectivePrimitive> prims = {sweep.prim};
  if (!forced)
    for (CollectivePrimitive p : nccl_tuner_primitives())
      if (p != sweep.prim) prims.push_back(p);
  std::vector<NcclTunerRow> csv_rows;
  std::string names;
  for (CollectivePrimitive p : prims) {
    Sweep each = sweep;
    each.prim = p;
    std::vector<long long> sizes;
    std::vector<CollectivePlan> plans;
    for (const Row& r : plan_rows(each, hw, n, link)) {
      sizes.push_back(r.bytes);
      plans.push_back(r.plan);
    }
    for (NcclTunerRow& r : nccl_tuner_rows(p, sizes, plans, nodes, n)) csv_rows.push_back(std::move(r));
    names += (names.empty() ? "" : ", ") + nccl_tuner_collective(p);
  }
  const std::vector<std::string> header = {
      "NCCL example tuner plugin configuration (NVIDIA/nccl plugins/tuner/example; NCCL_TUNER_CONFIG_FILE)",
      fmt::format("written by overlap-sim collective from NCCL's tuning model on {}: {} over {} ranks, {} node{}, "
                  "sizes {} .. {} bytes (nccl-tests' size column), each size's choice up to the next swept size",
                  hw.name, names, n, nodes, nodes == 1 ? "" : "s", sweep.lo, sweep.hi),
      forced ? fmt::format("only {}: --algo / --proto force its choice; every other collective falls to the plugin's "
                           "default below",
                           nccl_tuner_collective(sweep.prim))
             : std::string("every collective the plugin tunes; all_to_all is not one of them (NCCL runs it as "
                           "send/recv, which the plugin does not tune)"),
      "a model's choice, not a measurement: compare against nccl-tests before keeping it"};
  return nccl_tuner_csv(csv_rows, header);
}

}  // namespace

}  // namespace overlap::tools
