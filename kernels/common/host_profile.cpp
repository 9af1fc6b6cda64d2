#include "kernels/common/host_profile.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>

namespace overlap::cuda::host_profile {
namespace {

constexpr std::size_t kCalls = static_cast<std::size_t>(Call::kCount);
constexpr std::array<const char*, kCalls> kNames = {"activate", "event_record", "stream_wait", "memcpy", "launch"};

// One runner thread issues every rank's work, so plain globals suffice.
struct Totals {
  std::array<std::chrono::steady_clock::duration, kCalls> time{};
  std::array<long, kCalls> calls{};
};
Totals totals;
bool window_open = false;

}  // namespace

bool enabled_in_env() {
  static const bool on = std::getenv("OVERLAP_HOST_PROFILE") != nullptr;
  return on;
}

bool enabled() { return window_open && enabled_in_env(); }

void set_window(bool open) { window_open = open; }

void add(Call c, std::chrono::steady_clock::duration d) {
  totals.time[static_cast<std::size_t>(c)] += d;
  ++totals.calls[static_cast<std::size_t>(c)];
}

std::string report_and_reset(int per) {
  std::string s;
  const double div = per > 0 ? per : 1;
  for (std::size_t i = 0; i < kCalls; ++i) {
    if (totals.calls[i] == 0) continue;
    char buf[128];
    const double us = std::chrono::duration<double, std::micro>(totals.time[i]).count() / div;
    std::snprintf(buf, sizeof buf, "%s%s %.1f us / %.0f calls", s.empty() ? "" : ", ", kNames[i], us, static_cast<double>(totals.calls[i]) / div);
    s += buf;
  }
  reset();
  return s;
}

void reset() { totals = Totals{}; }

}  // namespace overlap::cuda::host_profile
