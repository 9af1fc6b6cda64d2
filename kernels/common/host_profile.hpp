#pragma once
// Where a host-bound run spends its enqueue time: host time per kind of CUDA call, summed while
// OVERLAP_HOST_PROFILE is set in the environment (off: one well-predicted branch per call). The
// runner prints it per run, per repetition, so the simulator's host model (launch.host_us,
// collective_host_us, sync_host_us) can be checked against where the time really goes.
#include <chrono>
#include <string>

namespace overlap::cuda::host_profile {

enum class Call { activate, event_record, stream_wait, memcpy, launch, kCount };

// True while OVERLAP_HOST_PROFILE is set and a Window is open (the enqueue being profiled).
bool enabled();
bool enabled_in_env();
void set_window(bool open);
void add(Call c, std::chrono::steady_clock::duration d);
// "activate 12.3 us / 40 calls, ..." divided by `per` (the repetitions), then cleared.
std::string report_and_reset(int per);
void reset();

// Times one call when profiling is on.
class Scope {
 public:
  explicit Scope(Call c) : c_(c), on_(enabled()) {
    if (on_) t0_ = std::chrono::steady_clock::now();
  }
  ~Scope() {
    if (on_) add(c_, std::chrono::steady_clock::now() - t0_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Call c_;
  bool on_;
  std::chrono::steady_clock::time_point t0_{};
};

// Calls are counted only inside a Window: a run's enqueue, not its set-up or joins.
struct Window {
  Window() { set_window(true); }
  ~Window() { set_window(false); }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
};

}  // namespace overlap::cuda::host_profile
