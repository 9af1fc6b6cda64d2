#pragma once
// The event core: events are plain data ordered by (time, sequence). The sequence number is the order
// in which events were scheduled, so simultaneous events run in a fixed order and every run is
// byte-identical. A binary heap over a vector: no allocation per event once it has grown.
#include <cstdint>
#include <vector>

#include "cost_model/units.hpp"

namespace overlap::sim {

enum class EventType : std::uint8_t {
  kernel_launched,  // core: an op's launch has passed (issued by the host, gap after its deps)
  cohort_end,       // GPU side: a cohort of CTAs (same kernel, same start) finished (stale if its version moved on)
  timer,            // core: a delay op ends
  net_timer,        // network side: a phase's latency or a collective's remaining time ends
  flow_latency_end, // network side: a transfer's latency has passed: it starts sharing link bandwidth
  flow_end,         // network side: a flow's last byte arrived (stale if its version moved on)
};

struct Event {
  Ps time_ps = 0;
  std::uint64_t seq = 0;
  std::int64_t b = 0;  // type-specific payload (version, timer kind)
  std::int32_t a = 0;  // type-specific id (op, cohort, transfer or flow)
  EventType type = EventType::timer;
};

class EventQueue {
 public:
  void reserve(std::size_t n) { heap_.reserve(n); }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }

  void push(Ps time_ps, EventType type, std::int32_t a, std::int64_t b) {
    heap_.push_back(Event{time_ps, next_seq_++, b, a, type});
    sift_up(heap_.size() - 1);
  }

  Event pop() {
    Event top = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
    return top;
  }

 private:
  static bool before(const Event& x, const Event& y) {
    return x.time_ps < y.time_ps || (x.time_ps == y.time_ps && x.seq < y.seq);
  }
  void sift_up(std::size_t i) {
    Event e = heap_[i];
    while (i > 0) {
      std::size_t parent = (i - 1) / 2;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void sift_down(std::size_t i) {
    const std::size_t n = heap_.size();
    Event e = heap_[i];
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], e)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace overlap::sim
