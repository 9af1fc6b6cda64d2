#pragma once
// Shared by fuzz_trace_json and fuzz_trace_sqlite: a trace file read the way `overlap-sim trace`
// reads it (calibrate/traces/trace_model.hpp read_traces, then analyze and the collective split),
// plain and with --strict. Refusals (InputError) are fine; any other exception aborts. The figures
// of what was read must hold the invariants of calibrate/traces/trace_analysis.hpp: every time
// non-negative, unoverlapped communication at most the communication, each group's mean within its
// minimum and maximum. A figure that breaks one is arithmetic gone wrong on hostile times: abort.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "calibrate/traces/collective_wait.hpp"
#include "calibrate/traces/trace_analysis.hpp"
#include "fuzz_input.hpp"

namespace overlap::fuzz {

[[noreturn]] inline void broken(const char* what) {
  std::fprintf(stderr, "fuzz: trace figures break an invariant: %s\n", what);
  std::abort();
}

inline void check_figures(const traces::OverlapFigures& f) {
  if (f.compute_ns < 0 || f.comm_ns < 0 || f.exposed_ns < 0 || f.memory_ns < 0 || f.span_ns < 0 || f.kernels < 0)
    broken("a negative figure");
  if (f.exposed_ns > f.comm_ns) broken("unoverlapped communication above the communication");
}

inline void read_and_check(const std::string& path) {
  for (const bool strict : {false, true}) {
    expect_refusal_or_success([&] {
      std::vector<traces::RankReport> ranks;
      for (traces::RankTrace& t : traces::read_traces(path, "ProfilerStep#", {}, strict)) {
        if (strict && !t.skipped.empty()) broken("--strict read a trace with skipped events");
        for (const auto& [why, n] : t.skipped)
          if (n <= 0) broken("a skipped-event count below one");
        ranks.push_back(traces::analyze(t));
      }
      traces::OverlapFigures all;
      for (const traces::RankReport& r : ranks) {
        check_figures(r.figures);
        for (const auto& s : r.steps) check_figures(s.figures);
        for (const auto& k : r.kernels)
          if (k.count <= 0 || k.min_ns < 0 || k.min_ns > k.max_ns || k.total_ns / k.count < k.min_ns ||
              k.total_ns / k.count > k.max_ns)
            broken("a kernel group's mean outside its min..max");
        all += r.figures;
      }
      check_figures(all);
      const traces::CollectiveSplit split = traces::split_collective_waits(ranks);
      for (const traces::RankReport& r : ranks)
        for (const auto& g : r.comms)
          if (g.wait_ns < 0 || g.transfer_ns < 0 || g.matched > g.count) broken("a collective's wait or transfer");
      (void)split;
    });
  }
}

}  // namespace overlap::fuzz
