// What-ifs on a replay (calibrate/traces/replay_what_if.hpp).
#include "calibrate/traces/replay_what_if.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace overlap::traces {

namespace {

constexpr KernelKind kKinds[] = {KernelKind::unknown,       KernelKind::gemm,          KernelKind::grouped_gemm,
                                 KernelKind::attention,     KernelKind::memory_bound,  KernelKind::communication,
                                 KernelKind::compute,       KernelKind::copy};

std::string kind_list() {
  std::string out;
  for (KernelKind k : kKinds) out += fmt::format("{}kind.{}.speed", out.empty() ? "" : ", ", kind_name(k));
  return out + ", comm.speed";
}

}  // namespace

WhatIf parse_what_if(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) throw std::invalid_argument(fmt::format("'{}' is not KEY=VALUE (keys: {})", text, kind_list()));
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  WhatIf w;
  w.text = text;
  bool known = false;
  if (key == "comm.speed") {
    w.comm = known = true;
  } else if (key.rfind("kind.", 0) == 0 && key.size() > 11 && key.compare(key.size() - 6, 6, ".speed") == 0) {
    const std::string kind = key.substr(5, key.size() - 11);
    for (KernelKind k : kKinds)
      if (kind == kind_name(k)) {
        w.kind = k;
        known = true;
      }
  }
  if (!known) throw std::invalid_argument(fmt::format("unknown key '{}' (keys: {})", key, kind_list()));
  char* end = nullptr;
  errno = 0;
  const double f = value.empty() ? NAN : std::strtod(value.c_str(), &end);
  if (value.empty() || errno != 0 || *end != '\0' || !std::isfinite(f) || f <= 0)
    throw std::invalid_argument(fmt::format("{}: '{}' is not a finite number > 0", key, value));
  if (f < 1e-3 || f > 1e3)
    throw std::invalid_argument(fmt::format("{}: {} is outside 0.001..1000 (a speed-up or slow-down of at most 1000x)", key, value));
  w.speed = f;
  return w;
}

std::vector<std::int64_t> what_if_durations(const ReplayGraph& g, const std::vector<const RankTrace*>& ranks,
                                            const std::vector<WhatIf>& what_ifs) {
  std::vector<std::int64_t> out(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ReplayNode& n = g.nodes[i];
    const GpuActivity& a = ranks[static_cast<std::size_t>(n.rank)]->activities[static_cast<std::size_t>(n.activity)];
    double speed = 1.0;
    for (const WhatIf& w : what_ifs)
      if (w.comm ? a.cls == ActivityClass::communication : a.kind == w.kind) speed *= w.speed;
    out[i] = speed == 1.0 ? n.duration_ns : static_cast<std::int64_t>(std::llround(static_cast<double>(n.duration_ns) / speed));
  }
  return out;
}

}  // namespace overlap::traces
