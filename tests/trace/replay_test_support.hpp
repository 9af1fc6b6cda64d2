#pragma once
// What the replay's test files share: the fixtures' folder, `trace --replay --format json` run
// through the CLI, and a rank's row of its report.
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_run.hpp"

namespace overlap::test::replay {

inline const std::string kData = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/";

inline nlohmann::json replay_json(std::vector<std::string> args) {
  args.insert(args.begin(), "trace");
  args.insert(args.end(), {"--replay", "--format", "json"});
  const CliResult r = cli(args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

// The row of `rank` ("all" or a number) in the report's ranks.
inline nlohmann::json rank_row(const nlohmann::json& j, const nlohmann::json& rank) {
  for (const auto& row : j["ranks"])
    if (row["rank"] == rank) return row;
  FAIL("no row for rank " << rank.dump());
  return {};
}

}  // namespace overlap::test::replay
