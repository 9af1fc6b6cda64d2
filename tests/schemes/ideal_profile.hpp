#pragma once
// The idealised node the scheme tests compute exact answers on: 132 SMs; a 128x128 tile over
// K = 1024 takes exactly 1 us; alpha-beta links with no latency; HBM so fast that memory kernels take
// (almost) nothing; no launch overhead, no GEMM/comm interference, no NCCL latency (NCCL pinned to
// a zero-latency Simple ring); every transport at the link's full rate with no latency of its own.
#include "cost_model/hardware_profile.hpp"
#include "sim/workload.hpp"

namespace overlap::sim::test {

inline HardwareProfile ideal_profile(int gpus, double link_gbps = 500, int channels = 8) {
  HardwareProfile h;
  h.name = "ideal";
  h.gpu.sm_count = 132;
  h.gpu.peak_tflops["bf16"] = 1000;
  h.gpu.gemm_efficiency = 1;
  h.gpu.gemm_tile_us = 1.0;
  h.gpu.gemm_comm_interference = 0;
  h.gpu.hbm_bandwidth_gbps = 1e9;
  h.gpu.hbm_efficiency = 1;
  h.launch.host_us = 0;
  h.launch.gap_us = 0;
  h.gpu.copy_engines = 2;
  h.fabric.topology = "nvswitch";
  h.fabric.num_gpus = gpus;
  h.fabric.links["nvlink"] = LinkClass{"nvlink", link_gbps, 0};
  expand_topology(h.fabric);
  h.comm.channels = channels;
  h.comm.p2p_channels = channels;
  // NCCL pinned to a zero-latency Simple ring at line rate: a collective of S bytes over n ranks takes
  // exactly S x busbw_factor / link bandwidth (all-to-all: its send/recv with Simple, same constants).
  h.comm.algorithm = NcclAlgorithm::Ring;
  h.comm.protocol = NcclProtocol::Simple;
  h.comm.tuner.at(NcclAlgorithm::Ring, NcclProtocol::Simple) = NcclLatency{0, {0, 0, 0}};
  h.comm.bandwidth_efficiency = 1;
  for (Transport t : kAllTransports) h.transports.of(t) = TransportSpec{0, 1, 0};
  return h;
}

// One GEMM (per-rank m x n x k, bf16) with a collective after it, or an all-gather before it.
inline Workload gemm_workload(int tp, Primitive p, std::int64_t m, std::int64_t n, std::int64_t k) {
  Workload w;
  w.kind = WorkloadKind::gemm_collective;
  w.tp = tp;
  w.shape = GemmCollective{m, n, k, DType::bf16, p, false};
  return w;
}

}  // namespace overlap::sim::test
