#pragma once
// `overlap-sim collective PRIMITIVE [--hardware H] [--ranks N] [-b 8] [-e 8G] [-f 2 | -i BYTES]
//  [-d float] [--algo NAME] [--proto NAME] [--set k=v]... [--format table|json]`
//
// The collective model's times (cost_model/collective_model.hpp: NCCL's algorithm, protocol and
// channels chosen per size) printed as nccl-tests prints a run: same header, same columns (size,
// count, type, redop, root, then time / algbw / busbw out-of-place and in-place, which the model does
// not tell apart), sizes swept and parsed as nccl-tests does (-b/-e with K/M/G suffixes, -f factor or
// -i increment), busbw with nccl-tests' factors. Extra trailing columns: the algorithm, protocol and
// channels of each row and where its time came from (model, or a calibrated curve). The text output
// reads back through cost_model/nccl_tests_import (it is an nccl-tests table), so a user can diff it
// against a real run or import it as a curve.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/command.hpp"

namespace overlap::tools {

struct CollectiveOptions {
  std::string primitive;
  std::string hardware = "h100-sxm-8x-nvswitch";
  std::optional<int> ranks;        // -g; absent: every GPU of the profile
  std::string min_bytes = "8";     // nccl-tests -b
  std::string max_bytes = "8G";    // nccl-tests -e
  std::string step_factor = "2";   // nccl-tests -f
  std::string step_bytes;          // nccl-tests -i (instead of -f)
  std::string dtype = "float";     // nccl-tests -d
  std::string op = "sum";          // nccl-tests' -o/--op (printed only); here --op: -o is --output everywhere
  std::string algorithm = "auto";  // NCCL_ALGO-like, NCCL's names
  std::string protocol = "auto";   // NCCL_PROTO-like
  std::vector<std::string> sets;   // profile overrides: [hardware.]a.b=value
  std::string format = "table";
  std::string output;              // -o: write the table / JSON to FILE (atomically) instead of stdout
  // --export nccl-tuner FILE: NCCL's example tuner plugin CSV (NCCL_TUNER_CONFIG_FILE) from the
  // per-size choice (tools/export_production.hpp). Empty = none.
  std::vector<std::string> export_spec;
};

// Registers `collective` and its flags on `app` (tools/command.hpp).
Command add_collective_command(CLI::App& app);

// Prints the table (or JSON), or writes it to --output (confirmed on `err`). Bad options throw
// UsageError, bad profiles / impossible forced choices InputError (exit 2 either way, tools/cli.cpp).
void cmd_collective(const CollectiveOptions& options, std::ostream& out, std::ostream& err);

// nccl-tests' size syntax: a number with an optional K, M or G suffix (binary: 1K = 1024), case
// insensitive; fractions allowed ("1.5K"), truncated to whole bytes. nullopt when malformed.
std::optional<long long> parse_nccl_tests_size(const std::string& text);

}  // namespace overlap::tools
