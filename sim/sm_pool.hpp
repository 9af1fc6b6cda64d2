#pragma once
// The SMs of one GPU: which are free, which kernel owns each, how many of its CTAs each hosts, and the
// kernels waiting for SMs in dispatch order (stream priority, then launch order). A kernel owns an SM
// while any of its CTAs run there; CTAs of different kernels do not share an SM.
#include <bit>
#include <cstdint>
#include <vector>

#include "sim/task_graph.hpp"

namespace overlap::sim {

class SmPool {
 public:
  explicit SmPool(int sm_count = 0)
      : owner_(static_cast<std::size_t>(sm_count), kNoOp),
        resident_(static_cast<std::size_t>(sm_count), 0),
        free_bits_((static_cast<std::size_t>(sm_count) + 63) / 64, 0),
        free_count_(sm_count) {
    for (int s = 0; s < sm_count; ++s) free_bits_[static_cast<std::size_t>(s) / 64] |= std::uint64_t{1} << (s % 64);
  }

  int sm_count() const { return static_cast<int>(owner_.size()); }
  int free_count() const { return free_count_; }

  // Takes the lowest-numbered free SM for `op` (deterministic). Requires free_count() > 0.
  int take(OpId op) {
    for (std::size_t w = 0;; ++w) {
      if (free_bits_[w] == 0) continue;
      const int bit = std::countr_zero(free_bits_[w]);
      free_bits_[w] &= free_bits_[w] - 1;
      const int sm = static_cast<int>(w * 64) + bit;
      owner_[static_cast<std::size_t>(sm)] = op;
      --free_count_;
      return sm;
    }
  }
  // take() `count` times, in one pass over the free bits: the same SMs in the same (ascending)
  // order, each passed to sm_fn. Requires free_count() >= count.
  template <class Fn>
  void take_lowest(int count, OpId op, Fn&& sm_fn) {
    free_count_ -= count;
    for (std::size_t w = 0; count > 0; ++w) {
      std::uint64_t bits = free_bits_[w];
      while (bits != 0 && count > 0) {
        const int sm = static_cast<int>(w * 64) + std::countr_zero(bits);
        bits &= bits - 1;
        owner_[static_cast<std::size_t>(sm)] = op;
        --count;
        sm_fn(sm);
      }
      free_bits_[w] = bits;
    }
  }
  void release(int sm) {
    owner_[static_cast<std::size_t>(sm)] = kNoOp;
    resident_[static_cast<std::size_t>(sm)] = 0;
    free_bits_[static_cast<std::size_t>(sm) / 64] |= std::uint64_t{1} << (sm % 64);
    ++free_count_;
  }
  OpId owner(int sm) const { return owner_[static_cast<std::size_t>(sm)]; }
  int& resident(int sm) { return resident_[static_cast<std::size_t>(sm)]; }

  // Kernels waiting for SMs, highest priority first, then in launch order.
  struct Waiting {
    int priority;
    std::uint64_t launch_seq;
    OpId op;
  };
  std::vector<Waiting>& waiting() { return waiting_; }
  void enqueue(Waiting w) {
    auto it = waiting_.begin();
    while (it != waiting_.end() &&
           (it->priority > w.priority || (it->priority == w.priority && it->launch_seq < w.launch_seq)))
      ++it;
    waiting_.insert(it, w);
  }
  void dequeue(OpId op) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
      if (it->op == op) {
        waiting_.erase(it);
        return;
      }
  }

 private:
  std::vector<OpId> owner_;
  std::vector<int> resident_;
  std::vector<std::uint64_t> free_bits_;
  int free_count_;
  std::vector<Waiting> waiting_;
};

}  // namespace overlap::sim
