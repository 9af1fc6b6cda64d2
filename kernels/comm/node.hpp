#pragma once
// The ranks a scheme runs on (two kinds of host):
//  - VirtualNode: T ranks on ONE GPU, each confined to its own SM partition by a green context;
//    rank-to-rank transfers are copy-engine copies inside the GPU (link "d2d") or staged through
//    pinned host memory (link "host", a PCIe-class path: D2H then H2D on the same copy stream).
//    One host thread issues every rank's work; cross-rank order is CUDA events.
//  - NcclNode: this process's rank of a real node (mpirun, one process per GPU), NCCL collectives;
//    point-to-point steps by grouped ncclSend/ncclRecv (transport nccl) or, where every rank is on
//    one host, by one-sided copy-engine pulls from peer memory (transport copy_engine: CUDA IPC,
//    kernels/comm/peer_memory.hpp; async TP's mechanism).
// Schemes are written once against this interface: they enqueue each local rank's work on its
// streams and call the transfer primitives with per-rank pointers.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/buffers.hpp"
#include "kernels/common/green_context.hpp"

namespace overlap::cuda {

struct RankStreams {
  cudaStream_t compute[2] = {nullptr, nullptr};  // GEMMs; two for the alternating-stream schemes
  cudaStream_t comm = nullptr;                   // high priority: waits, reductions, collectives
  cudaStream_t copy[2] = {nullptr, nullptr};     // copy-engine pulls (alternating)
  std::array<cudaStream_t, 5> all() const { return {compute[0], compute[1], comm, copy[0], copy[1]}; }
};

// One point-to-point transfer: `bytes` from rank src's `src_ptr` into rank dst's `dst_ptr`; the data
// is ready once rank src's stream `src_ready` reaches this point. Pointers and streams are as this
// process has them: the sender's side is needed where src is local (nullptr elsewhere), dst_ptr
// where dst is local, and src_ptr on the receiver's side only for copy-engine pulls (a virtual
// rank's own pointer, or on a real node the peer mapping GemmRun::on_rank gives).
struct Transfer {
  int src = -1, dst = -1;
  const void* src_ptr = nullptr;
  void* dst_ptr = nullptr;
  std::size_t bytes = 0;
  cudaStream_t src_ready = nullptr;
};

class Node {
 public:
  virtual ~Node() = default;
  virtual int ranks() const = 0;
  virtual bool is_virtual() const = 0;
  virtual std::vector<int> local_ranks() const = 0;  // ranks this process drives
  virtual int rank_sms() const = 0;                  // SMs of one rank
  virtual void activate(int rank) = 0;               // make the rank's context current
  // Real nodes: every process reaches this point in `stream` before what follows (a tiny NCCL
  // all-reduce); virtual nodes: nothing (one host thread issues every rank).
  virtual void barrier(cudaStream_t stream) = 0;
  RankStreams& streams(int rank) { return streams_.at(static_cast<std::size_t>(rank)); }

  // Makes `waiter` wait for everything enqueued so far on `signaller`, a stream of rank
  // `signaller_rank` (any rank on virtual nodes; this process's on real nodes).
  virtual void order(cudaStream_t waiter, int signaller_rank, cudaStream_t signaller) = 0;
  // Every stream of every local rank waits for `start` (an event recorded on a root stream); and
  // `root` waits for everything enqueued so far on every stream of every local rank. A timed run
  // sits between the two.
  void fork_from(cudaEvent_t start);
  void join_to(cudaStream_t root);

  // How transfer() moves data: copy_engine (the receiver's copy engine pulls; no SMs) or nccl
  // (ncclSend / ncclRecv kernels). use_transport throws std::invalid_argument, saying why, where the
  // node has no such transport (virtual ranks: copy_engine only; real nodes: copy_engine only with
  // every rank on one host).
  enum class Transport { copy_engine, nccl };
  virtual void use_transport(Transport t) = 0;
  virtual Transport transport() const = 0;
  // Real nodes pulling by copy engine: every rank shares the buffers peers pull from (a collective;
  // the same buffers in the same order on every rank) for as long as the returned token lives,
  // which must end before the buffers are freed. Virtual ranks and NCCL exchanges: nothing to share.
  virtual std::shared_ptr<void> share(const std::vector<std::pair<const void*, std::size_t>>& buffers);
  // Rank `rank`'s copy of the shared region [local, local + bytes) of this process's rank, as this
  // process addresses it; nullptr where the node maps no peer (virtual ranks: every rank's pointer is
  // already here; NCCL: the sender names its own buffer).
  virtual const void* peer(int rank, const void* local, std::size_t bytes) const;

  // A step of point-to-point transfers (each rank sends and receives at most a few). The list holds
  // every transfer of the step whose sender or receiver is a local rank, once (on a real node both
  // the sender's and the receiver's process list it, the way ncclSend / ncclRecv pair). After the
  // call, the data has landed in stream order of `done_on(dst)`: consumers on rank dst make their
  // stream wait on it with order(). Transfers of one call are independent of one another.
  virtual void transfer(const std::vector<Transfer>& xfers, int copy_stream_index) = 0;
  virtual cudaStream_t done_on(int dst, int copy_stream_index) = 0;

  // Collectives over per-rank buffers of `elems` bf16 (full array size S = elems * 2 bytes, as
  // nccl-tests): in[r] ready on `ready(r)`; the result lands in stream order of streams(r).comm.
  // all_reduce: out[r] = sum; reduce_scatter: out[r] = chunk r of the sum (elems / T);
  // all_gather: in[r] is rank r's chunk (elems / T), out[r] the whole.
  enum class Collective { all_reduce, reduce_scatter, all_gather };
  virtual void collective(Collective kind, const std::vector<const __nv_bfloat16*>& in,
                          const std::vector<__nv_bfloat16*>& out, std::size_t elems,
                          const std::vector<cudaStream_t>& ready) = 0;

 protected:
  // Streams of the node's own (real nodes: the signal streams of copy-engine pulls) that a timed
  // run also forks from and joins.
  virtual std::vector<cudaStream_t> node_streams() const { return {}; }
  std::vector<RankStreams> streams_;
};

// T virtual ranks of `sms_each` SMs (a multiple of the device's minimum partition).
std::unique_ptr<Node> make_virtual_node(int device, int ranks, int sms_each, const std::string& link,
                                        std::size_t max_transfer_bytes);
// This process's rank of a real node; `comm` already initialised. A collective: every rank also
// tries to map its peers' memory (transport copy_engine), and every rank reaches the same verdict.
std::unique_ptr<Node> make_nccl_node(ncclComm_t comm, int rank, int ranks, int sm_count);

// The largest partition every one of `ranks` ranks gets: floor(sm_count / ranks / granularity) x granularity.
int virtual_rank_sms(int sm_count, int ranks, int granularity);

}  // namespace overlap::cuda
