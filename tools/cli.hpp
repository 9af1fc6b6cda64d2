#pragma once
// The `overlap-sim` command line (CLI11): the dispatcher over the subcommands `run`, `tune`, `sweep`,
// `plan`, `schemes`, `profile list|show|fit`, `collective`, `trace` and `validate`. Each command
// defines its own flags (tools/command.hpp, tools/cmd_*.hpp); this parses the line, runs the command
// that was named and turns what it throws into a message and an exit status
// (tools/command_errors.hpp). It sits above every command: no command includes it.
// run_cli() is the whole program minus the process: tests call it in-process with string streams.
#include <ostream>

#include "tools/command_errors.hpp"

namespace overlap::tools {

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace overlap::tools
