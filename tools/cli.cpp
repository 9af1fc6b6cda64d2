// The `overlap-sim` dispatcher (tools/cli.hpp): the program's options, the commands in the order
// --help lists them, the one that was named run, and what it throws reported.
#include "tools/cli.hpp"

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cost_model/atomic_file.hpp"
#include "cost_model/bounded_message.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/engine.hpp"
#include "sim/sweep_mpi.hpp"
#include "tools/cmd_collective.hpp"
#include "tools/cmd_plan.hpp"
#include "tools/cmd_profile.hpp"
#include "tools/cmd_run.hpp"
#include "tools/cmd_schemes.hpp"
#include "tools/cmd_sweep.hpp"
#include "tools/cmd_trace.hpp"
#include "tools/cmd_tune.hpp"
#include "tools/cmd_validate.hpp"
#include "tools/command.hpp"

namespace overlap::tools {

namespace {

#ifndef OVERLAP_VERSION
#define OVERLAP_VERSION "0.0.0"
#endif

constexpr const char* kDescription =
    "overlap-sim: simulates how communication overlaps computation in tensor-parallel LLM layers.\n"
    "Exit status: 0 ok, 2 usage or input error, 1 internal error.";

const std::vector<std::string> kCommands = {"run", "tune", "sweep", "plan", "collective", "validate", "schemes", "profile", "trace"};

std::string version_text() {
  return fmt::format("overlap-sim {} (MPI sweeps: {})", OVERLAP_VERSION,
                     sim::built_with_mpi() ? "yes" : "no, built without MPI");
}

// A first word that is no command (and no option) is named as such, before CLI11 reports it as an
// unexpected argument.
std::optional<std::string> unknown_command(int argc, const char* const* argv) {
  if (argc < 2) return std::nullopt;
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') return std::nullopt;
  for (const auto& c : kCommands)
    if (first == c) {
      if (first == "profile" && argc >= 3) {
        const std::string sub = argv[2];
        if (!sub.empty() && sub[0] != '-' && sub != "show" && sub != "list" && sub != "fit")
          return fmt::format("unknown command 'profile {}' (profile commands: list, show, fit)", sub);
      }
      return std::nullopt;
    }
  std::string list;
  for (const auto& c : kCommands) list += (list.empty() ? "" : ", ") + c;
  return fmt::format("unknown command '{}' (commands: {})", first, list);
}

// always_capture_default shows a repeatable option's empty list as "=[]": say nothing instead.
void drop_empty_list_defaults(CLI::App* app) {
  for (CLI::Option* o : app->get_options())
    if (o->get_default_str() == "[]") o->default_str("");
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) drop_empty_list_defaults(sub);
}

template <typename T>
bool is_a(const std::exception& e) {
  return dynamic_cast<const T*>(&e) != nullptr;
}

// The command line as a message quotes it: "run big.yaml --tp 64" (each word bounded).
std::string command_text(int argc, const char* const* argv) {
  std::string text;
  for (int i = 1; i < argc; ++i) text += (i > 1 ? " " : "") + std::string(argv[i]);
  return bounded_message(text);
}

// Running out of memory, said with what the program was running and what the user can change.
void report_out_of_memory(const std::bad_alloc& e, const std::string& command, std::ostream& err) {
  std::string size;
  if (const auto* oom = dynamic_cast<const OutOfMemory*>(&e))
    size = fmt::format(" (an allocation of {} bytes failed)", oom->bytes());
  err << fmt::format("overlap-sim: error: out of memory while running 'overlap-sim {}'{}: the process may use no more "
                     "memory (ulimit -v, a container's limit, or the machine's); a smaller workload (fewer layers, "
                     "tokens, ranks or sweep points) or fewer threads (-j) needs less\n",
                     command, size);
}

// The exit status of an error a command threw, with its message on `err` (bounded:
// cost_model/bounded_message.hpp). The user's input (a bad file, flag or output path, the OS error in
// an OutputError's message; hardware the model cannot simulate; work that needs more memory than the
// process may use) is exit 2; anything else is an internal error, exit 1.
int report_error(const std::exception& e, const std::string& command, std::ostream& err) {
  if (const auto* oom = dynamic_cast<const std::bad_alloc*>(&e)) {
    try {
      report_out_of_memory(*oom, command, err);
    } catch (const std::bad_alloc&) {
      err << "overlap-sim: error: out of memory\n";  // no memory left even for the message
    }
    return kExitUsage;
  }
  if (is_a<InputError>(e) || is_a<UsageError>(e) || is_a<OutputError>(e)) {
    err << "overlap-sim: error: " << bounded_message(e.what()) << "\n";
    return kExitUsage;
  }
  if (is_a<sim::ResourceError>(e) || is_a<RangeError>(e)) {
    err << "overlap-sim: error: cannot simulate this: " << bounded_message(e.what()) << "\n";
    return kExitUsage;
  }
  err << "overlap-sim: internal error: " << bounded_message(e.what()) << "\n";
  return kExitInternal;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  if (const auto unknown = unknown_command(argc, argv)) {
    err << "overlap-sim: " << bounded_message(*unknown) << "\nRun 'overlap-sim --help' for usage.\n";
    return kExitUsage;
  }
  CLI::App app{kDescription, "overlap-sim"};
  app.require_subcommand(1);
  // Every option's --help line shows its default (subcommands inherit this).
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", version_text());
  app.footer(examples({"overlap-sim run                              # the default scenario: Llama-3-70B MLP, TP=8, 8x H100",
                       "overlap-sim tune --hardware a800-8x-nvlink --gemm 8192x8192x4096 --dtype fp16 --primitive all_reduce --ranks 4",
                       "overlap-sim sweep -o sweep.csv --plot sweep.png",
                       "overlap-sim schemes",
                       "overlap-sim profile list"}));
  // The commands in the order --help lists them; each registers its own flags (tools/command.hpp).
  const std::vector<Command> commands = {add_run_command(app),        add_tune_command(app),    add_sweep_command(app),
                                         add_plan_command(app),       add_schemes_command(app), add_profile_command(app),
                                         add_collective_command(app), add_trace_command(app),   add_validate_command(app)};
  drop_empty_list_defaults(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "overlap-sim: " << bounded_message(e.what())
        << "\nRun 'overlap-sim --help' (or 'overlap-sim SUBCOMMAND --help') for usage.\n";
    return kExitUsage;
  }
  const std::string command = command_text(argc, argv);  // before the work: no memory may be left after it
  try {
    // The files this command reads: no output of it may replace one (cost_model/atomic_file.hpp).
    InputFileLog inputs;
    for (const Command& c : commands)
      if (c.app->parsed()) return c.run(out, err);
    err << "overlap-sim: no command given\n";
    return kExitUsage;
  } catch (const QuietExit& e) {
    return e.code();
  } catch (const std::exception& e) {
    return report_error(e, command, err);
  }
}

}  // namespace overlap::tools
