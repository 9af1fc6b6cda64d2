#pragma once
// What GemmRun and DecodeRun share: one root stream on the primary context that every rank's
// streams fork from and join back to, so one pair of events on it times a whole run across ranks,
// and the agreement of a check's worst error across the processes of a real node.
#include <functional>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "kernels/comm/node.hpp"

namespace overlap::cuda {

// Makes this process's device's primary context (not a green-context partition) current.
void make_primary_current();

// The root stream's last work happens before every rank's next work (after a barrier across the node).
void fork_ranks_from(Node& node, cudaStream_t root, cudaEvent_t root_event);
// Every rank's work so far happens before the root stream's next work.
void join_ranks_to(Node& node, cudaStream_t root);

// The worst relative error over every process of a real node (NaN, an unusable result, wins);
// `worst` itself on a virtual node.
double worst_over_processes(Node& node, ncclComm_t ref_comm, cudaStream_t root, double worst);

// Times `enqueue` (one run's work on every rank) `reps` times after `warmup` runs, each bracketed
// by a fork from and a join to `root`; the host enqueue time per repetition goes to host_enqueue_us.
std::vector<double> time_run_us(Node& node, cudaStream_t root, cudaEvent_t root_event, int warmup, int reps,
                                std::vector<double>& host_enqueue_us, const std::function<void()>& enqueue);

}  // namespace overlap::cuda
