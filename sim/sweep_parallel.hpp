#pragma once
// The parallel loop `sweep` and `tune` share: fn(i) for i in [0, n) on `jobs` threads, each index
// exactly once, results written by index so the output never depends on the thread count or timing.
// The simulator keeps no shared mutable state (every evaluation builds its own graph, node and
// engine; the registries are immutable after their thread-safe static initialisation), so points
// can run side by side. An exception from fn is rethrown after every thread stopped: the one of the
// lowest index, so the error reported does not depend on timing either.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace overlap::sim {

// Threads to use by default: every core (std::thread::hardware_concurrency, at least 1).
inline int default_jobs() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

inline void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn) {
  const std::size_t threads = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, jobs)));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::exception_ptr> errors(n);
  auto worker = [&] {
    for (std::size_t i = next++; i < n && !failed; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace overlap::sim
