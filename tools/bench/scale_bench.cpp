// Scale benchmark (design.md "Scale"): every scheme of the default scenario (the Llama-3-70B MLP
// block, 8192 tokens) at TP = 8 .. 256 on the 64-node rail-optimised H100 cluster profile. Each TP
// runs in a child process, so the peak RSS printed is that run's own. Prints one table row per TP:
// wall time, engine events, events per second, peak RSS.
//
//   overlap-scale-bench [--min-tp 8] [--max-tp 256] [--repeat 3]   (the median wall time of the repeats)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cost_model/profile_loader.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

struct Row {
  double wall_s = 0;
  unsigned long long events = 0;
};

Row run_once(int tp) {
  const std::string root = OVERLAP_SOURCE_DIR;
  // The default scenario's workload (scenarios/llama3-70b-tp8-mlp.yaml) at this TP degree.
  const Scenario sc = load_scenario_file(root + "/scenarios/llama3-70b-tp8-mlp.yaml");
  Workload w = sc.workload;
  w.tp = tp;
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", root + "/scenarios/hardware");
  std::vector<SchemeRequest> requests;
  for (const SchemeInfo& s : scheme_registry())
    if (!s.applies || s.applies(w)) requests.push_back({s.name, nlohmann::json::object()});
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<SchemeResult> results = evaluate_all(requests, w, hw, sc.fidelity);
  const auto t1 = std::chrono::steady_clock::now();
  Row r;
  r.wall_s = std::chrono::duration<double>(t1 - t0).count();
  for (const SchemeResult& x : results) r.events += x.events;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int min_tp = 8, max_tp = 256, repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--max-tp") == 0) max_tp = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--min-tp") == 0) min_tp = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: overlap-scale-bench [--min-tp N] [--max-tp N] [--repeat N]\n");
      return 2;
    }
  }
  std::printf("every scheme of llama3-70b-tp8-mlp on h100-64node-ib400-rail (median of %d runs each)\n", repeat);
  std::printf("%6s %10s %14s %14s %14s\n", "TP", "wall (s)", "events (main)", "events/s", "peak RSS (MB)");
  for (int tp = min_tp; tp <= max_tp; tp *= 2) {
    std::vector<double> walls;
    unsigned long long events = 0;
    long peak_kb = 0;
    for (int k = 0; k < repeat; ++k) {
      int fds[2];
      if (pipe(fds) != 0) return 1;
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        const Row r = run_once(tp);
        const std::string out = std::to_string(r.wall_s) + " " + std::to_string(r.events);
        if (write(fds[1], out.c_str(), out.size()) < 0) _exit(1);
        _exit(0);
      }
      close(fds[1]);
      char buf[128] = {0};
      const ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
      close(fds[0]);
      int status = 0;
      struct rusage usage {};
      wait4(pid, &status, 0, &usage);
      if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "TP %d failed\n", tp);
        return 1;
      }
      double wall = 0;
      std::sscanf(buf, "%lf %llu", &wall, &events);
      walls.push_back(wall);
      peak_kb = std::max(peak_kb, usage.ru_maxrss);
    }
    std::sort(walls.begin(), walls.end());
    const double wall = walls[walls.size() / 2];
    std::printf("%6d %10.3f %14llu %14.0f %14.1f\n", tp, wall, events, static_cast<double>(events) / wall,
                static_cast<double>(peak_kb) / 1024.0);
    std::fflush(stdout);
  }
  return 0;
}
