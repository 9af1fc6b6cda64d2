#pragma once
// Peer memory of a real node's ranks through CUDA IPC: one-sided pulls by copy engine, the way
// PyTorch's async TP moves shards (async-tp-illustrated: copy-engine pulls from symmetric memory,
// no SMs taken). The bookkeeping (which address of rank j a pointer means, which sequence number a
// signal carries) is kernels/comm/peer_registry.hpp; this file holds the CUDA calls.
//
// Why CUDA IPC and not the VMM API (cuMemCreate + cuMemExportToShareableHandle): IPC handles are 64
// plain bytes, so they travel through the NCCL communicator the node already has (an all-gather);
// VMM's POSIX file descriptors need a Unix socket between the processes. Both reach only GPUs of one
// host, so peer memory exists only when every rank is on this host (checked: hostnames are
// exchanged the same way).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/comm/peer_registry.hpp"
#include "kernels/common/buffers.hpp"

namespace overlap::cuda {

class PeerMemory {
 public:
  // Collective over `comm` (every rank calls it). Throws, naming the reason, where peer memory cannot
  // be had: ranks on more than one host, or a peer GPU this one cannot reach.
  PeerMemory(ncclComm_t comm, int rank, int ranks, cudaStream_t stream, int copy_streams);
  ~PeerMemory();
  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;

  // Collective: shares these device buffers (each inside one cudaMalloc allocation), every rank the
  // same buffers in the same order.
  void share(const std::vector<std::pair<const void*, std::size_t>>& buffers);
  // Collective: forgets the shared buffers; on return no rank maps another's, so each may free its
  // own (freeing an exported allocation while a peer still maps it is undefined behaviour).
  void unshare();
  // Rank j's copy of [local, local + bytes) as this process addresses it.
  const void* peer(int rank, const void* local, std::size_t bytes) const;
  // Sender side: once `stream` reaches this point, tell `dst` the next transfer on copy stream idx
  // is ready (a 32-bit write into dst's signal pad; the write is fenced after the stream's earlier
  // writes).
  void signal_ready(cudaStream_t stream, int dst, int idx);
  // Receiver side: `stream` waits until `src` has signalled its next transfer on copy stream idx.
  void wait_ready(cudaStream_t stream, int src, int idx);

 private:
  // All-gathers `bytes` of `mine` from every rank (rank-major) through the communicator.
  std::vector<unsigned char> all_gather(const void* mine, std::size_t bytes);
  // Opens rank j's IPC handle (once per allocation) and returns its base here.
  std::uintptr_t open(int rank, const cudaIpcMemHandle_t& h);
  void close_all();
  // Every rank learns whether every rank succeeded; throws on all of them if one did not (`error`:
  // this rank's reason, empty when it succeeded).
  void agree(const std::string& error);

  ncclComm_t comm_;
  int rank_, ranks_;
  cudaStream_t stream_;
  PeerRegistry registry_;
  PullSignals signals_;
  DeviceBuffer<std::uint32_t> pad_;       // this rank's signal pad (zeroed)
  std::vector<std::uintptr_t> pads_;      // every rank's pad, mapped here
  std::map<std::pair<int, std::string>, std::uintptr_t> opened_;  // (rank, handle bytes) -> base here
};

}  // namespace overlap::cuda
