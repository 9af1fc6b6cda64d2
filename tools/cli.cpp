#include "tools/cli.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/engine.hpp"
#include "tools/cmd_collective.hpp"
#include "tools/cmd_papers.hpp"
#include "tools/cmd_profile.hpp"
#include "tools/cmd_run.hpp"
#include "tools/cmd_schemes.hpp"

#ifndef OVERLAP_SOURCE_DIR
#define OVERLAP_SOURCE_DIR "."
#endif

namespace overlap::tools {

namespace fs = std::filesystem;

std::string source_dir() {
  const char* home = std::getenv("OVERLAP_HOME");
  return home && *home ? std::string(home) : std::string(OVERLAP_SOURCE_DIR);
}

std::string hardware_dir() { return default_hardware_dir(); }

std::string resolve_input_path(const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || fs::exists(path)) return path;
  const fs::path root(source_dir());
  if (fs::exists(root / path)) return (root / path).string();
  const bool bare = path.find('/') == std::string::npos && fs::path(path).extension() != ".yaml";
  if (bare) {
    for (const char* sub : {"scenarios", "scenarios/papers"}) {
      const fs::path candidate = root / sub / (path + ".yaml");
      if (fs::exists(candidate)) return candidate.string();
    }
  }
  return path;
}

namespace {

constexpr const char* kDescription =
    "overlap-sim: simulates how communication overlaps computation in tensor-parallel LLM layers.\n"
    "Exit status: 0 ok, 2 usage or input error, 1 internal error.";

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{kDescription, "overlap-sim"};
  app.require_subcommand(1);

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "Evaluate a scenario's schemes and report latency, exposed "
                                                "communication, overlap efficiency, speedup and bound");
  run_cmd->add_option("scenario", run.scenario,
                      std::string("Scenario YAML (a path, or a name under scenarios/ or scenarios/papers/); "
                                  "default ") + kDefaultScenario);
  run_cmd->add_option("--set", run.sets, "Override a scenario key: a.b.c=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  run_cmd->add_option("--format", run.format, "Output format")->check(CLI::IsMember({"table", "json", "csv"}));
  run_cmd->add_option("--output,-o", run.output, "Write the report to FILE (atomically) instead of stdout");
  run_cmd->add_option("--trace", run.trace, "Write the Chrome trace (Perfetto) of one scheme's run to FILE");
  run_cmd->add_option("--scheme", run.scheme, "Run only this scheme (the one traced / plotted)");
  run_cmd->add_option("--plot", run.plot, "Write a PNG timeline of one scheme's run (needs python3 + matplotlib)");
  run_cmd->add_option("--graphviz", run.graphviz, "Write the task graph (Graphviz dot) of one scheme to FILE");
  run_cmd->add_option("--fidelity", run.fidelity, "Collective fidelity (overrides the scenario's)")
      ->check(CLI::IsMember({"curve", "steps"}));

  std::string schemes_format = "table";
  CLI::App* schemes_cmd = app.add_subcommand("schemes", "List the schemes with their parameters and sources");
  schemes_cmd->add_option("--format", schemes_format, "Output format")->check(CLI::IsMember({"table", "json"}));

  std::string profile_name;
  std::string profile_format = "table";
  std::vector<std::string> profile_sets;
  CLI::App* profile_cmd = app.add_subcommand("profile", "Hardware profiles");
  profile_cmd->require_subcommand(1);
  CLI::App* show_cmd = profile_cmd->add_subcommand("show", "Print a resolved hardware profile");
  show_cmd->add_option("name", profile_name, "Built-in profile name or a profile YAML path")->required();
  show_cmd->add_option("--format", profile_format, "Output format")->check(CLI::IsMember({"json", "yaml", "table"}));
  show_cmd->add_option("--set", profile_sets, "Override a profile key: a.b=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);

  CollectiveOptions collective;
  CLI::App* collective_cmd = add_collective_command(app, collective);

  // `validate --papers`: the sources' published figures against our predictions (tools/papers.hpp).
  // (`validate DIR`, measured results, is added beside it by tools/cmd_validate.)
  PapersOptions papers;
  CLI::App* validate_cmd = app.add_subcommand("validate", "Check predictions against published or measured results");
  validate_cmd->add_flag("--papers", papers.papers,
                         "Compare with every published figure of the sources (CommFuse, FlashOverlap, async TP, DTP)");
  validate_cmd->add_option("--format", papers.format, "Output format")->check(CLI::IsMember({"table", "json"}));
  validate_cmd->add_flag("--strict", papers.strict, "Exit 1 when a row is off (default: exit 0, it is a report)");
  validate_cmd->add_option("--source", papers.sources, "Only this source's rows: commfuse, flashoverlap, async_tp, dtp")
      ->allow_extra_args(false);
  validate_cmd->add_option("--output,-o", papers.output, "Write the report to FILE (atomically) instead of stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "overlap-sim: " << e.what() << "\nRun 'overlap-sim --help' (or 'overlap-sim SUBCOMMAND --help') for usage.\n";
    return kExitUsage;
  }

  try {
    if (run_cmd->parsed()) {
      cmd_run(run, out);
      return kExitOk;
    }
    if (schemes_cmd->parsed()) {
      cmd_schemes(schemes_format, out);
      return kExitOk;
    }
    if (validate_cmd->parsed()) return cmd_validate_papers(papers, out);
    if (collective_cmd->parsed()) {
      cmd_collective(collective, out);
      return kExitOk;
    }
    if (show_cmd->parsed()) {
      const std::string path = fs::path(profile_name).extension() == ".yaml" || profile_name.find('/') != std::string::npos
                                   ? resolve_input_path(profile_name)
                                   : profile_name;
      return cmd_profile_show(path, profile_format, profile_sets, out);
    }
    err << "overlap-sim: no command given\n";
    return kExitUsage;
  } catch (const InputError& e) {
    err << "overlap-sim: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const UsageError& e) {
    err << "overlap-sim: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const sim::ResourceError& e) {
    err << "overlap-sim: error: cannot simulate this: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "overlap-sim: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace overlap::tools
