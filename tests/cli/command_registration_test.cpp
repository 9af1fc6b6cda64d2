// Each command defines its flags in one place (tools/command.hpp): its add_*_command function registers
// them, owns their values and returns the Command that runs it. So a command registered alone on an
// app of its own must parse and run a line exactly as the whole program does: nothing of it may live
// in the dispatcher (tools/cli.cpp).
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/cmd_collective.hpp"
#include "tools/cmd_profile.hpp"
#include "tools/cmd_schemes.hpp"
#include "tools/cmd_tune.hpp"
#include "tools/command.hpp"

namespace {

using overlap::test::CliResult;

// ARGS parsed by an app holding only the command `add` registers, then run as the dispatcher runs it.
template <typename Add>
CliResult run_alone(Add add, const std::vector<std::string>& args) {
  CLI::App app{"one command", "overlap-sim"};
  app.option_defaults()->always_capture_default();
  const overlap::tools::Command command = add(app);
  std::vector<const char*> argv = {"overlap-sim"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  REQUIRE(command.app->parsed());
  std::ostringstream out, err;
  CliResult r;
  r.rc = command.run(out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// The exit status and both streams, byte for byte.
void same_as_program(const CliResult& alone, const CliResult& whole) {
  INFO("the program's stderr: " << whole.err << "\nalone: " << alone.err);
  CHECK_FALSE(whole.out.empty());
  CHECK(std::tie(alone.rc, alone.out, alone.err) == std::tie(whole.rc, whole.out, whole.err));
}

}  // namespace

TEST_CASE("a command registered alone runs a line as the program does", "[cli][command]") {
  using namespace overlap::tools;
  const std::vector<std::string> collective = {"collective", "all_reduce", "-b", "1M", "-e", "4M", "-g", "4"};
  same_as_program(run_alone(add_collective_command, collective), overlap::test::cli(collective));
  const std::vector<std::string> schemes = {"schemes", "--format", "json"};
  same_as_program(run_alone(add_schemes_command, schemes), overlap::test::cli(schemes));
  // `profile` holds three subcommands; its one Command runs whichever was named.
  const std::vector<std::string> show = {"profile", "show", "a800-8x-nvlink", "--format", "yaml"};
  same_as_program(run_alone(add_profile_command, show), overlap::test::cli(show));
  const std::vector<std::string> list = {"profile", "list", "--format", "json"};
  same_as_program(run_alone(add_profile_command, list), overlap::test::cli(list));
}

TEST_CASE("a command's own checks travel with it: an empty -o is refused without the dispatcher",
          "[cli][command]") {
  using namespace overlap::tools;
  CHECK_THROWS_WITH(run_alone(add_collective_command, {"collective", "all_reduce", "-o", ""}),
                    Catch::Contains("-o '': an empty path names no file"));
  CHECK_THROWS_WITH(run_alone(add_tune_command, {"tune", "--gemm", "8192x8192x4096", "--algo", "-1"}),
                    Catch::Contains("--algo must be 0 or more"));
}

TEST_CASE("the older spelling --export-flashoverlap of --export flashoverlap says so in one line and works",
          "[cli][command][export]") {
  overlap::test::TempFile older("fo-older.json"), one("fo-one.json");
  const std::vector<std::string> base = {"tune",    "--hardware", "a800-8x-nvlink", "--gemm",  "8192x8192x4096",
                                         "--dtype", "fp16",       "--primitive",    "all_reduce", "--ranks",
                                         "4",       "--search",   "flashoverlap"};
  std::vector<std::string> with_older = base, with_one = base;
  with_older.insert(with_older.end(), {"--export-flashoverlap", older.path});
  with_one.insert(with_one.end(), {"--export", "flashoverlap", one.path});
  const CliResult o = overlap::test::cli(with_older);
  const CliResult n = overlap::test::cli(with_one);
  INFO(o.err);
  REQUIRE(o.rc == 0);
  REQUIRE(n.rc == 0);
  // The notice: one line, first on stderr, naming the form to use; the new form prints none.
  const std::string notice =
      "note: --export-flashoverlap FILE is the older form of --export flashoverlap FILE (one --export flag for every "
      "export)\n";
  CHECK(o.err.rfind(notice, 0) == 0);
  CHECK(o.err.find("older form", notice.size()) == std::string::npos);
  CHECK(n.err.find("older form") == std::string::npos);
  // Both write the same configuration (the tables differ only in the search's wall time).
  CHECK(overlap::test::read_text(older.path) == overlap::test::read_text(one.path));
  // --help lists the alias as the older form.
  const CliResult help = overlap::test::cli({"tune", "--help"});
  CHECK_THAT(help.out,
             Catch::Contains("--export-flashoverlap") && Catch::Contains("The older form of --export flashoverlap"));
}
