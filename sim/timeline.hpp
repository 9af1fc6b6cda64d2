#pragma once
// Timeline: what a run produced. Every op's ready/start/end and the resources it held; optionally
// every CTA (tile) on its SM; every transfer with the links it crossed. Metrics, traces and the
// byte-conservation checks read this and nothing else.
#include <cstdint>
#include <string>
#include <vector>

// GCC 12 reports a -Wstringop-overread false positive inside small_vector's move at -O2 (a memmove it
// proves cannot happen for an inline buffer); the pragma covers the header's code only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#include <boost/container/small_vector.hpp>
#pragma GCC diagnostic pop

#include "cost_model/units.hpp"
#include "sim/task_graph.hpp"

namespace overlap::sim {

// The fabric links one transfer loads: its route and the HBM it reads and writes, a handful (an
// NVSwitch leg: 2 route links + 3-5 HBM entries). Kept inline: the engine makes one list for every
// leg of every collective and copy, and a heap list each was its most frequent allocation.
using LinkList = boost::container::small_vector<int, 8>;

struct OpRecord {
  OpId op = kNoOp;
  Ps ready_ps = -1;  // dependencies and stream order satisfied (before launch overhead)
  Ps start_ps = -1;  // first resource acquired / first CTA started
  Ps end_ps = -1;
  int sms_held = 0;          // most SMs the op held at once
  std::vector<int> sms;      // gang kernels (comm/memory): the SMs they held
  int copy_engine = -1;      // copy: engine index on its rank's GPU
};

struct CtaRecord {  // only when EngineOptions::record_ctas
  OpId op = kNoOp;
  std::int32_t sm = -1;
  std::int64_t tile = -1;  // tile index in dispatch order
  Ps start_ps = 0, end_ps = 0;
};

struct TransferRecord {
  OpId op = kNoOp;
  int src_gpu = -1, dst_gpu = -1;  // kSwitchPeer (-2) for a leg to or from the NVSwitch
  Bytes bytes = 0;
  Ps start_ps = 0, end_ps = 0;  // start = posted on both sides; end = last byte arrived
  LinkList links;               // fabric link ids it loaded: its route, and the HBM it read and wrote
                                // (a link repeats when crossed more than once)
  OpId receiver = kNoOp;        // a phase transfer's receiving op (`op` is the sender); else kNoOp
};

struct Timeline {
  int num_ranks = 0;
  std::vector<OpRecord> ops;  // indexed by OpId
  std::vector<CtaRecord> ctas;
  std::vector<TransferRecord> transfers;
  Ps makespan_ps = 0;
  std::vector<Ps> rank_end_ps;        // last op end per rank
  std::vector<Ps> sm_busy_ps;         // per rank: sum over SMs of time held (CTAs and gangs)
  std::vector<Ps> copy_engine_busy_ps;  // per rank
  std::vector<double> link_bytes;     // per fabric link: bytes that crossed it
  std::uint64_t events = 0;           // events the engine processed
};

// Bytes sent from src to dst over the whole run (copies and comm-kernel phases).
struct PairBytes {
  int src = -1, dst = -1;
  Bytes bytes = 0;
};
std::vector<PairBytes> bytes_by_pair(const Timeline& tl);

}  // namespace overlap::sim
