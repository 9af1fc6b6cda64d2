#pragma once
// The host bookkeeping of one-sided pulls through peer memory on a real node (on real
// nodes, NCCL and peer memory (CUDA IPC or the VMM API) for one-sided pulls). Plain C++, no CUDA,
// so it is tested on fixtures where no GPU is (tests/calibrate/test_peer_registry.cpp); the CUDA
// side is kernels/comm/peer_memory.cpp.
//
// Symmetric buffers, PyTorch SymmetricMemory's contract (async-tp-illustrated: every rank allocates
// the same buffers, and a rank reads a peer's copy of a buffer by the peer's address for it): every
// rank shares the same buffers in the same order, so this rank's buffer i and rank j's buffer i are
// the same tensor of the run. PeerRegistry maps an address inside this rank's buffer i to the same
// offset in rank j's buffer i, as this process has it mapped.
//
// Ready signals: rank src tells rank dst that the data of a transfer is ready by writing a sequence
// number into a 32-bit word of dst's signal pad (a stream memory operation, no SMs); dst's copy
// stream waits until the word reaches it, then pulls. One word per (sender, copy stream): writes to
// one word come from one stream, so they land in order and a wait for n never passes on a later
// transfer's n + 1 before n's data is ready. Both sides list every transfer between them (a sender
// lists what it sends, a receiver what it receives, the way ncclSend / ncclRecv pair), so both count
// the same sequence numbers without talking.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace overlap::cuda {

class PeerRegistry {
 public:
  PeerRegistry(int ranks, int self) : ranks_(ranks), self_(self) {
    if (ranks < 1 || self < 0 || self >= ranks) throw std::invalid_argument("PeerRegistry: rank " + std::to_string(self) + " of " + std::to_string(ranks));
  }

  // Buffer `index` of the run: `bytes` at `local` here; sizes[j] is rank j's size of it (every rank
  // must agree) and mapped[j] where rank j's copy is mapped in this process (mapped[self] == local).
  void add(std::uintptr_t local, std::size_t bytes, const std::vector<std::size_t>& sizes, const std::vector<std::uintptr_t>& mapped) {
    const std::string which = "shared buffer " + std::to_string(buffers_.size());
    if (sizes.size() != static_cast<std::size_t>(ranks_) || mapped.size() != sizes.size()) {
      throw std::invalid_argument(which + ": " + std::to_string(sizes.size()) + " sizes for " + std::to_string(ranks_) + " ranks");
    }
    if (bytes == 0 || local == 0) throw std::invalid_argument(which + ": empty");
    for (int j = 0; j < ranks_; ++j) {
      if (sizes[static_cast<std::size_t>(j)] != bytes) {
        throw std::runtime_error(which + ": rank " + std::to_string(j) + " shares " + std::to_string(sizes[static_cast<std::size_t>(j)]) +
                                 " bytes, rank " + std::to_string(self_) + " " + std::to_string(bytes) +
                                 " (every rank must share the same buffers in the same order)");
      }
    }
    if (mapped[static_cast<std::size_t>(self_)] != local) throw std::invalid_argument(which + ": this rank's mapping is not its own buffer");
    // Overlapping buffers would make a translation ambiguous.
    auto next = by_base_.lower_bound(local);
    if (next != by_base_.end() && next->first < local + bytes) throw std::invalid_argument(which + " overlaps another");
    if (next != by_base_.begin() && std::prev(next)->first + std::prev(next)->second.bytes > local) {
      throw std::invalid_argument(which + " overlaps another");
    }
    by_base_.emplace(local, Entry{bytes, mapped});
    buffers_.push_back(local);
  }

  // Where rank j's copy of [ptr, ptr + bytes) is, in this process; ptr must lie in a shared buffer.
  std::uintptr_t translate(int rank, std::uintptr_t ptr, std::size_t bytes) const {
    if (rank < 0 || rank >= ranks_) throw std::out_of_range("peer rank " + std::to_string(rank) + " of " + std::to_string(ranks_));
    auto it = by_base_.upper_bound(ptr);
    if (it == by_base_.begin()) throw std::out_of_range(unshared(ptr));
    --it;
    const std::uintptr_t off = ptr - it->first;
    if (off >= it->second.bytes) throw std::out_of_range(unshared(ptr));
    if (bytes > it->second.bytes - off) throw std::out_of_range("a pull of " + std::to_string(bytes) + " bytes runs past the end of its shared buffer");
    return it->second.mapped[static_cast<std::size_t>(rank)] + off;
  }

  std::size_t size() const { return buffers_.size(); }
  int ranks() const { return ranks_; }
  int self() const { return self_; }

 private:
  static std::string unshared(std::uintptr_t p) {
    return "address 0x" + hex(p) + " is not in a shared buffer (share every buffer a peer pulls from before the run)";
  }
  static std::string hex(std::uintptr_t v) {
    static const char* d = "0123456789abcdef";
    std::string s;
    do {
      s.insert(s.begin(), d[v & 15]);
      v >>= 4;
    } while (v);
    return s;
  }
  struct Entry {
    std::size_t bytes = 0;
    std::vector<std::uintptr_t> mapped;
  };
  int ranks_, self_;
  std::map<std::uintptr_t, Entry> by_base_;
  std::vector<std::uintptr_t> buffers_;
};

class PullSignals {
 public:
  PullSignals(int ranks, int streams) : ranks_(ranks), streams_(streams), sent_(words(), 0), expected_(words(), 0) {
    if (ranks < 1 || streams < 1) throw std::invalid_argument("PullSignals: ranks and streams must be positive");
  }
  // 32-bit words in each rank's pad: one per (sender, copy stream).
  std::size_t words() const { return static_cast<std::size_t>(ranks_) * static_cast<std::size_t>(streams_); }
  // The word of rank dst's pad that sender src writes for transfers on copy stream idx.
  std::size_t word(int src, int idx) const {
    if (src < 0 || src >= ranks_ || idx < 0 || idx >= streams_) throw std::out_of_range("signal word (" + std::to_string(src) + ", " + std::to_string(idx) + ")");
    return static_cast<std::size_t>(src) * static_cast<std::size_t>(streams_) + static_cast<std::size_t>(idx);
  }
  // The value the sender writes for its next transfer to `dst` on stream idx (1, 2, ...; wraps at
  // 2^32, which the cyclic >= wait of cuStreamWaitValue32 tolerates).
  std::uint32_t next_sent(int dst, int idx) { return ++sent_[word(dst, idx)]; }
  // The value the receiver waits for on its next transfer from `src` on stream idx.
  std::uint32_t next_expected(int src, int idx) { return ++expected_[word(src, idx)]; }

 private:
  int ranks_, streams_;
  std::vector<std::uint32_t> sent_;      // by (receiver, stream)
  std::vector<std::uint32_t> expected_;  // by (sender, stream)
};

}  // namespace overlap::cuda
