#pragma once
// The machine the engine runs a graph on: each rank's GPU (SMs, copy engines, the rates that slow its
// tiles) and the fabric its bytes cross (fabric.hpp), with the host's launch costs. Built from a
// hardware profile by make_node (node_builder.hpp). The fabric is the network side's (network_api.hpp):
// schemes price a transfer through transfer_price.hpp and never include this header.
#include <vector>

#include "cost_model/units.hpp"
#include "sim/fabric.hpp"

namespace overlap::sim {

struct GpuConfig {
  int sm_count = 0;
  int copy_engines = 0;
  // The physical GPU this rank runs on (-1: its own). Virtual ranks of one physical GPU (green-context
  // partitions) share its copy engines, its HBM and the interference of its communication kernels.
  int physical = -1;
  // A GEMM tile takes (1 + comm_interference * comm SMs / SMs) times longer while communication
  // kernels hold that many of the physical GPU's SMs (GpuSpec::gemm_comm_interference).
  double comm_interference = 0;
  // GpuSpec::gemm_full_rate_sms (0 = not modelled): with more SMs of the physical GPU running tiles
  // of compute kernels than this, each tile slows (gemm_saturation_factor, Op::reference_sms).
  double full_rate_sms = 0;
  // GpuSpec::hbm_latency_us: a memory kernel's fixed time before its bytes stream (no HBM used).
  Ps hbm_latency_ps = 0;
  // GpuSpec::hbm_sm_gbps in bytes per ps: a memory kernel streams at most its SMs (Op::channels, else
  // sm_count) times this. 0 = no cap.
  double hbm_sm_bytes_per_ps = 0;
};

struct NodeConfig {
  std::vector<GpuConfig> gpus;  // one per rank
  Fabric fabric;
  // Launch model (LaunchSpec): each rank's host thread issues its kernels and copies ahead, in
  // program (op id) order, launch_host_ps apiece; a kernel starts no earlier than its issue and no
  // earlier than launch_gap_ps after its dependencies are met.
  Ps launch_gap_ps = 0;
  Ps launch_host_ps = 0;
  // One host thread per physical GPU instead of per rank (LaunchSpec::shared_host): virtual ranks
  // then issue, in op id order, from one timeline. Op::host_ps adds to an op's issue cost.
  bool shared_host = false;
  // Host time of each dependency on an op of another stream (an event record + wait), charged to
  // the dependent op's issue (LaunchSpec::sync_host_us); not to collective members, whose
  // host_ps covers their own.
  Ps sync_host_ps = 0;
};

}  // namespace overlap::sim
