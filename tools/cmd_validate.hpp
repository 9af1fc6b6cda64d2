#pragma once
// `overlap-sim validate DIR [--format table|json] [--record]`: the simulator's predictions held
// against a calibration results directory (calibrate/validate/validate.hpp computes the report).
// The table opens with the verdict, then every group's rows as measured vs predicted with the error;
// --format json prints the report's JSON; --record writes DIR/validation.json with the figures the
// CI test (tests/calibrate) holds later runs to.
#include <ostream>
#include <string>

#include "calibrate/validate/validate.hpp"
#include "tools/command.hpp"

namespace overlap::tools {

using calibrate::accuracy_target_pct;
using calibrate::kOffFactor;
using calibrate::kOffFloorPct;
using calibrate::kValidationMarginPct;
using calibrate::PartitionCheck;
using calibrate::recorded_figures;
using calibrate::validate_dir;
using calibrate::ValidationGroup;
using calibrate::ValidationReport;
using calibrate::ValidationRow;

void print_validation_table(const ValidationReport& report, std::ostream& out);

// The command: prints the report; with `record`, writes DIR/validation.json atomically.
void cmd_validate(const std::string& dir, const std::string& format, bool record, std::ostream& out, std::ostream& err);

// Registers `validate` and its flags on `app` (tools/command.hpp): DIR runs cmd_validate, --papers
// runs cmd_validate_papers (tools/cmd_papers.hpp); a flag of one form given to the other is refused.
Command add_validate_command(CLI::App& app);

}  // namespace overlap::tools
