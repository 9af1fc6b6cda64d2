// What-ifs on a replay (calibrate/traces/replay_what_if.hpp).
#include "calibrate/traces/replay_what_if.hpp"

#include <algorithm>
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
  return out + ", comm.speed, comm.sms, link.<class>.gbps, swap.all_gather";
}

// A number in [lo, hi], or std::invalid_argument naming `key`.
double number_in(const std::string& key, const std::string& value, double lo, double hi, const char* what) {
  char* end = nullptr;
  errno = 0;
  const double f = value.empty() ? NAN : std::strtod(value.c_str(), &end);
  if (value.empty() || errno != 0 || *end != '\0' || !std::isfinite(f) || f <= 0)
    throw std::invalid_argument(fmt::format("{}: '{}' is not a finite number > 0", key, value));
  if (f < lo || f > hi) throw std::invalid_argument(fmt::format("{}: {} is outside {}..{} ({})", key, value, lo, hi, what));
  return f;
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
  } else if (key == "swap.all_gather") {
    // A scheme's name (checked against the simulator's schemes where the profile is known).
    const bool name = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (!name) throw std::invalid_argument(fmt::format("{}: '{}' is not a scheme's name (async_tp, ...)", key, value));
    w.swap_all_gather = value;
    return w;
  } else if (key == "comm.sms") {
    // A whole number of SMs; the profile's SM count bounds it (checked where the profile is known).
    const double n = number_in(key, value, 1, 1e5, "SMs");
    if (n != std::floor(n)) throw std::invalid_argument(fmt::format("{}: '{}' is not a whole number of SMs", key, value));
    w.comm_sms = static_cast<int>(n);
    return w;
  } else if (key.rfind("link.", 0) == 0 && key.size() > 10 && key.compare(key.size() - 5, 5, ".gbps") == 0) {
    w.link = key.substr(5, key.size() - 10);
    if (w.link == "nic") w.link = "network";
    if (w.link.find('.') != std::string::npos) throw std::invalid_argument(fmt::format("unknown key '{}' (keys: {})", key, kind_list()));
    w.gbps = number_in(key, value, 1e-3, 1e6, "GB/s");
    return w;
  } else if (key.rfind("kind.", 0) == 0 && key.size() > 11 && key.compare(key.size() - 6, 6, ".speed") == 0) {
    const std::string kind = key.substr(5, key.size() - 11);
    for (KernelKind k : kKinds)
      if (kind == kind_name(k)) {
        w.kind = k;
        known = true;
      }
  }
  if (!known) throw std::invalid_argument(fmt::format("unknown key '{}' (keys: {})", key, kind_list()));
  w.speed = number_in(key, value, 1e-3, 1e3, "a speed-up or slow-down of at most 1000x");
  return w;
}

std::vector<std::int64_t> what_if_durations(const ReplayGraph& g, const std::vector<const RankTrace*>& ranks,
                                            const std::vector<WhatIf>& what_ifs) {
  std::vector<std::int64_t> base;
  base.reserve(g.nodes.size());
  for (const ReplayNode& n : g.nodes) base.push_back(n.duration_ns);
  return what_if_durations(g, ranks, what_ifs, base, nullptr);
}

std::vector<std::int64_t> what_if_durations(const ReplayGraph& g, const std::vector<const RankTrace*>& ranks,
                                            const std::vector<WhatIf>& what_ifs, const std::vector<std::int64_t>& base,
                                            const LinkContext* links, std::int64_t* unscaled_comm) {
  std::vector<std::int64_t> out(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ReplayNode& n = g.nodes[i];
    const GpuActivity& a = ranks[static_cast<std::size_t>(n.rank)]->activities[static_cast<std::size_t>(n.activity)];
    double speed = 1.0;
    bool unscaled = false;
    for (const WhatIf& w : what_ifs) {
      if (w.comm_sms > 0 || !w.swap_all_gather.empty()) continue;  // sm_share_durations', swap_all_gathers'
      if (!w.link.empty()) {
        if (a.cls != ActivityClass::communication) continue;
        if (!links) throw std::logic_error("what_if_durations: a link what-if without a LinkContext");
        const std::string& on = links->node_link[i];
        if (on.empty()) unscaled = true;
        else if (on == w.link) speed *= w.gbps / links->profile_gbps.at(on);
        continue;
      }
      if (w.comm ? a.cls == ActivityClass::communication : a.kind == w.kind) speed *= w.speed;
    }
    if (unscaled && unscaled_comm) ++*unscaled_comm;
    out[i] = speed == 1.0 ? base[i] : static_cast<std::int64_t>(std::llround(static_cast<double>(base[i]) / speed));
  }
  return out;
}

}  // namespace overlap::traces
