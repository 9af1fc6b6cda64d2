#pragma once
// Timeline: what a run produced. Every op's ready/start/end and the resources it held; optionally
// every CTA (tile) on its SM; every transfer with the links it crossed. Metrics, traces and the
// byte-conservation checks read this and nothing else.
#include <cstdint>
#include <string>
#include <vector>

#include "cost_model/units.hpp"
#include "sim/task_graph.hpp"

namespace overlap::sim {

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
  std::vector<int> links;       // fabric link ids it loaded: its route, and the HBM it read and wrote
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
