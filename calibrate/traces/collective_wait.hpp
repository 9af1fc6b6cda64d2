#pragma once
// A collective kernel's time, split into waiting for its peers and the transfer.
//
// A collective kernel starts on each rank when that rank reaches it and cannot finish before the
// last rank of its group has arrived, so a rank that arrives early spends the difference waiting.
// HolisticTraceAnalysis' "collective wait" reading of multi-rank traces: the transfer begins when
// the last rank's kernel starts. With the kernels of one collective on every rank:
//   last    = max over the ranks of the kernel's start (clocks aligned, below)
//   wait    = min(last, end) - start    (0 for the last rank to arrive)
//   transfer = end - max(last, start)   (the kernel's duration minus its wait)
// so wait + transfer is the kernel's duration exactly. Only the transfer is what a collective model
// predicts; the wait belongs to whatever made the other ranks late.
//
// Which kernels are one collective: every rank of a communicator issues its collectives in the
// same order (NCCL requires it), so the i-th kernel of a kind on each rank is the i-th collective
// of that kind. A kind is (library, collective, bytes, and the process group when every
// collective of the traces names one); a kind whose count differs between ranks is not matched
// (the traces cover different windows) and keeps its whole time, with a note saying so. Peer
// copies are not matched (a send has no counterpart kernel on its peer).
//
// Clocks: ranks on different hosts record different clocks. A collective ends on every rank of
// its group at nearly the same time (the last step's data arrives everywhere together), so each
// rank's offset from the lowest rank is the median, over the collectives they share, of the
// difference of their kernels' ends (the lower median: an integer, exact); the split subtracts it.
// The processes of one file (an Nsight Systems export of the whole job) share its clock: no offset.
#include <string>
#include <vector>

#include "calibrate/traces/trace_analysis.hpp"

namespace overlap::traces {

struct CollectiveSplit {
  std::int64_t matched = 0;  // collectives split (each counted once, over its ranks)
  std::vector<std::string> notes;  // kinds not matched, and why
  // Each matched collective's members: (index into `ranks`, CommKernel::activity), for the replay.
  std::vector<std::vector<std::pair<std::size_t, std::int32_t>>> members;
};

// Fills each CommGroup's matched / wait_ns / transfer_ns / transfer_durations_ns and each rank's
// clock_offset_ns. Fewer than two ranks: nothing to match, nothing changes.
CollectiveSplit split_collective_waits(std::vector<RankReport>& ranks);

}  // namespace overlap::traces
