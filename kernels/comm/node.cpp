#include "kernels/comm/node.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "kernels/comm/bootstrap.hpp"
#include "kernels/comm/peer_memory.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/host_profile.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::cuda {
namespace {

int greatest_priority() {
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return greatest;
}

class VirtualNode final : public Node {
 public:
  VirtualNode(int device, int ranks, int sms_each, std::string link, std::size_t max_bytes)
      : device_(device), link_(std::move(link)), parts_(device, ranks, sms_each) {
    if (link_ != "d2d" && link_ != "host") throw std::invalid_argument("virtual link must be d2d or host");
    const int high = greatest_priority();
    for (int r = 0; r < ranks; ++r) {
      SmPartition& p = parts_[r];
      p.make_current();
      RankStreams s;
      s.compute[0] = p.make_stream(0);
      s.compute[1] = p.make_stream(0);
      s.comm = p.make_stream(high);
      s.copy[0] = p.make_stream(0);
      s.copy[1] = p.make_stream(0);
      streams_.push_back(s);
      // One event per rank, re-recorded by every order() (a ring of 64 per rank cost the host the
      // same on an H100, 2026-11-23).
      cudaEvent_t e;
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events_.push_back(e);
      if (link_ == "host") {
        staging_.emplace_back(max_bytes);
        staging_.emplace_back(max_bytes);
      }
    }
    SmPartitions::make_primary_current(device_);
    stage_.resize(static_cast<std::size_t>(ranks));
  }
  ~VirtualNode() override {
    for (auto e : events_) cudaEventDestroy(e);
  }

  int ranks() const override { return parts_.size(); }
  bool is_virtual() const override { return true; }
  std::vector<int> local_ranks() const override {
    std::vector<int> r;
    for (int i = 0; i < ranks(); ++i) r.push_back(i);
    return r;
  }
  int rank_sms() const override { return const_cast<SmPartitions&>(parts_)[0].sms(); }
  void activate(int rank) override { parts_[rank].make_current(); }
  void barrier(cudaStream_t) override {}
  void use_transport(Transport t) override {
    if (t != Transport::copy_engine) throw std::invalid_argument("virtual ranks exchange by copy engine only (transport copy_engine)");
  }
  Transport transport() const override { return Transport::copy_engine; }

  void order(cudaStream_t waiter, int signaller_rank, cudaStream_t signaller) override {
    if (waiter == signaller) return;
    activate(signaller_rank);
    cudaEvent_t e = events_[static_cast<std::size_t>(signaller_rank)];
    {
      host_profile::Scope t(host_profile::Call::event_record);
      CUDA_CHECK(cudaEventRecord(e, signaller));
    }
    host_profile::Scope t(host_profile::Call::stream_wait);
    CUDA_CHECK(cudaStreamWaitEvent(waiter, e, 0));
  }

  void pull(int dst, void* dst_ptr, int src, const void* src_ptr, std::size_t bytes, cudaStream_t src_ready, int idx) {
    cudaStream_t s = streams(dst).copy[idx];
    order(s, src, src_ready);
    activate(dst);
    host_profile::Scope t(host_profile::Call::memcpy);
    if (link_ == "d2d") {
      CUDA_CHECK(cudaMemcpyAsync(dst_ptr, src_ptr, bytes, cudaMemcpyDeviceToDevice, s));
    } else {
      // PCIe-class link: through this rank's pinned staging buffer for this copy stream.
      PinnedBuffer& st = staging_[static_cast<std::size_t>(2 * dst + idx)];
      if (bytes > st.bytes()) throw std::runtime_error("virtual node: transfer larger than the staging buffer");
      CUDA_CHECK(cudaMemcpyAsync(st.get(), src_ptr, bytes, cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaMemcpyAsync(dst_ptr, st.get(), bytes, cudaMemcpyHostToDevice, s));
    }
  }

  void transfer(const std::vector<Transfer>& xfers, int idx) override {
    for (const auto& x : xfers) pull(x.dst, x.dst_ptr, x.src, x.src_ptr, x.bytes, x.src_ready, idx & 1);
  }
  cudaStream_t done_on(int dst, int idx) override { return streams(dst).copy[idx & 1]; }

  void collective(Collective kind, const std::vector<const __nv_bfloat16*>& in, const std::vector<__nv_bfloat16*>& out,
                  std::size_t elems, const std::vector<cudaStream_t>& ready) override {
    const int T = ranks();
    if (elems % static_cast<std::size_t>(T) != 0) throw std::invalid_argument("virtual collective: elements not divisible by ranks");
    const std::size_t chunk = elems / T;
    const std::size_t cb = chunk * sizeof(__nv_bfloat16);
    if (kind == Collective::all_gather) {
      // Direct all-gather: every rank pulls every peer's chunk (its own is a local copy).
      for (int r = 0; r < T; ++r) {
        for (int i = 0; i < T; ++i) {
          const int p = (r + i) % T;
          pull(r, out[r] + p * chunk, p, in[p], cb, ready[p], i & 1);
        }
        join_copies(r);
      }
      return;
    }
    // Reduce-scatter, direct: the owner of chunk o pulls it from every peer, then sums on its comm stream.
    for (int o = 0; o < T; ++o) {
      grow_stage(o, (T - 1) * chunk);
      // The staging buffer is reused by the next collective: its pulls wait for this owner's last
      // sum to have read it (a write-after-read race that failed t4-rs-slicing4 once on an H100).
      order(streams(o).copy[0], o, streams(o).comm);
      order(streams(o).copy[1], o, streams(o).comm);
      PtrList parts;
      parts.add(in[o] + o * chunk);
      for (int i = 1; i < T; ++i) {
        const int p = (o + i) % T;
        __nv_bfloat16* dst = stage_[o].get() + (i - 1) * chunk;
        pull(o, dst, p, in[p] + o * chunk, cb, ready[p], i & 1);
        parts.add(dst);
      }
      join_copies(o);
      order(streams(o).comm, o, ready[o]);
      activate(o);
      host_profile::Scope t(host_profile::Call::launch);
      sum_bf16(kind == Collective::all_reduce ? out[o] + o * chunk : out[o], parts, chunk, streams(o).comm);
    }
    if (kind == Collective::reduce_scatter) return;
    // All-gather of the reduced chunks.
    for (int r = 0; r < T; ++r) {
      for (int i = 1; i < T; ++i) {
        const int o = (r + i) % T;
        pull(r, out[r] + o * chunk, o, out[o] + o * chunk, cb, streams(o).comm, i & 1);
      }
      join_copies(r);
    }
  }

 private:
  void join_copies(int r) {
    order(streams(r).comm, r, streams(r).copy[0]);
    order(streams(r).comm, r, streams(r).copy[1]);
  }
  void grow_stage(int r, std::size_t elems) {
    auto& b = stage_[static_cast<std::size_t>(r)];
    if (b.size() < elems) {
      CUDA_CHECK(cudaDeviceSynchronize());  // only while a run is being set up (its first pass)
      b = DeviceBuffer<__nv_bfloat16>(elems);
    }
  }

  int device_;
  std::string link_;
  SmPartitions parts_;
  std::vector<cudaEvent_t> events_;
  std::vector<PinnedBuffer> staging_;
  std::vector<DeviceBuffer<__nv_bfloat16>> stage_;
};

class NcclNode final : public Node {
 public:
  NcclNode(ncclComm_t comm, int rank, int ranks, int sm_count) : comm_(comm), rank_(rank), ranks_(ranks), sms_(sm_count) {
    const int high = greatest_priority();
    streams_.resize(static_cast<std::size_t>(ranks));
    RankStreams& s = streams_[static_cast<std::size_t>(rank)];
    for (auto* p : {&s.compute[0], &s.compute[1], &s.copy[0], &s.copy[1], &signal_[0], &signal_[1]}) {
      CUDA_CHECK(cudaStreamCreateWithFlags(p, cudaStreamNonBlocking));
    }
    CUDA_CHECK(cudaStreamCreateWithPriority(&s.comm, cudaStreamNonBlocking, high));
    CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    try {
      peer_ = std::make_unique<PeerMemory>(comm_, rank_, ranks_, s.comm, 2);
    } catch (const std::runtime_error& e) {
      no_peer_memory_ = e.what();
    }
  }
  void use_transport(Transport t) override {
    if (t == Transport::copy_engine && !peer_) {
      throw std::invalid_argument("this node has no peer memory for copy-engine pulls: " + no_peer_memory_);
    }
    transport_ = t;
  }
  Transport transport() const override { return transport_; }
  std::shared_ptr<void> share(const std::vector<std::pair<const void*, std::size_t>>& buffers) override {
    if (transport_ != Transport::copy_engine) return nullptr;
    peer_->share(buffers);
    PeerMemory* p = peer_.get();
    // The token's end is a collective too (every rank's GemmRun ends in the same order).
    return std::shared_ptr<void>(p, [](PeerMemory* m) {
      try {
        m->unshare();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "peer memory: %s\n", e.what());
      }
    });
  }
  const void* peer(int rank, const void* local, std::size_t bytes) const override {
    return transport_ == Transport::copy_engine ? peer_->peer(rank, local, bytes) : nullptr;
  }
  int ranks() const override { return ranks_; }
  bool is_virtual() const override { return false; }
  std::vector<int> local_ranks() const override { return {rank_}; }
  int rank_sms() const override { return sms_; }
  void activate(int) override {}
  void barrier(cudaStream_t s) override {
    NCCL_CHECK(ncclAllReduce(token_.get(), token_.get(), 1, ncclFloat, ncclSum, comm_, s));
  }
  void order(cudaStream_t waiter, int signaller_rank, cudaStream_t signaller) override {
    if (signaller_rank != rank_) throw std::logic_error("real node: cross-rank order goes through NCCL");
    if (waiter == signaller) return;
    CUDA_CHECK(cudaEventRecord(event_, signaller));
    CUDA_CHECK(cudaStreamWaitEvent(waiter, event_, 0));
  }
  void transfer(const std::vector<Transfer>& xfers, int idx) override {
    idx &= 1;
    cudaStream_t s = streams(rank_).copy[idx];
    for (const auto& x : xfers) {
      if (x.src == rank_ && !x.src_ready) throw std::logic_error("transfer from this rank without the stream its data is ready on");
    }
    if (transport_ == Transport::copy_engine) {
      // One-sided: the sender announces its data on its signal stream, the receiver's copy engine
      // pulls from the sender's memory once announced. Every signal of the step is enqueued before
      // any wait, so where the driver runs a signal stream and a copy stream on one hardware queue,
      // no wait sits ahead of a signal a peer is waiting for.
      for (const auto& x : xfers) {
        if (x.src != rank_) continue;
        order(signal_[idx], rank_, x.src_ready);
        peer_->signal_ready(signal_[idx], x.dst, idx);
      }
      for (const auto& x : xfers) {
        if (x.dst != rank_) continue;
        if (!x.src_ptr || !x.dst_ptr) throw std::logic_error("copy-engine pull without the peer's address (GemmRun::on_rank) or its destination");
        peer_->wait_ready(s, x.src, idx);
        CUDA_CHECK(cudaMemcpyAsync(x.dst_ptr, x.src_ptr, x.bytes, cudaMemcpyDeviceToDevice, s));
      }
      return;
    }
    for (const auto& x : xfers) {
      if (x.src == rank_) order(s, rank_, x.src_ready);
    }
    NCCL_CHECK(ncclGroupStart());
    for (const auto& x : xfers) {
      if (x.src == rank_) NCCL_CHECK(ncclSend(x.src_ptr, x.bytes, ncclChar, x.dst, comm_, s));
      if (x.dst == rank_) NCCL_CHECK(ncclRecv(x.dst_ptr, x.bytes, ncclChar, x.src, comm_, s));
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  cudaStream_t done_on(int, int idx) override { return streams(rank_).copy[idx & 1]; }
  void collective(Collective kind, const std::vector<const __nv_bfloat16*>& in, const std::vector<__nv_bfloat16*>& out,
                  std::size_t elems, const std::vector<cudaStream_t>& ready) override {
    cudaStream_t s = streams(rank_).comm;
    order(s, rank_, ready[static_cast<std::size_t>(rank_)]);
    const auto* src = in[static_cast<std::size_t>(rank_)];
    auto* dst = out[static_cast<std::size_t>(rank_)];
    if (kind == Collective::all_reduce) NCCL_CHECK(ncclAllReduce(src, dst, elems, ncclBfloat16, ncclSum, comm_, s));
    if (kind == Collective::reduce_scatter) NCCL_CHECK(ncclReduceScatter(src, dst, elems / ranks_, ncclBfloat16, ncclSum, comm_, s));
    if (kind == Collective::all_gather) NCCL_CHECK(ncclAllGather(src, dst, elems / ranks_, ncclBfloat16, comm_, s));
  }

 private:
  std::vector<cudaStream_t> node_streams() const override { return {signal_[0], signal_[1]}; }

  ncclComm_t comm_;
  int rank_, ranks_, sms_;
  cudaEvent_t event_ = nullptr;
  cudaStream_t signal_[2] = {nullptr, nullptr};  // copy-engine pulls: the sender's ready signals
  DeviceBuffer<float> token_{1};
  std::unique_ptr<PeerMemory> peer_;
  std::string no_peer_memory_;
  Transport transport_ = Transport::nccl;
};

}  // namespace

void Node::fork_from(cudaEvent_t start) {
  for (int r : local_ranks()) {
    for (cudaStream_t x : streams(r).all()) CUDA_CHECK(cudaStreamWaitEvent(x, start, 0));
  }
  for (cudaStream_t x : node_streams()) CUDA_CHECK(cudaStreamWaitEvent(x, start, 0));
}

void Node::join_to(cudaStream_t root) {
  for (int r : local_ranks()) {
    for (cudaStream_t x : streams(r).all()) order(root, r, x);
  }
  for (cudaStream_t x : node_streams()) order(root, local_ranks().front(), x);
}

std::shared_ptr<void> Node::share(const std::vector<std::pair<const void*, std::size_t>>&) { return nullptr; }

const void* Node::peer(int, const void*, std::size_t) const { return nullptr; }

std::unique_ptr<Node> make_virtual_node(int device, int ranks, int sms_each, const std::string& link, std::size_t max_bytes) {
  return std::make_unique<VirtualNode>(device, ranks, sms_each, link, max_bytes);
}

std::unique_ptr<Node> make_nccl_node(ncclComm_t comm, int rank, int ranks, int sm_count) {
  return std::make_unique<NcclNode>(comm, rank, ranks, sm_count);
}

int virtual_rank_sms(int sm_count, int ranks, int granularity) {
  if (ranks < 1 || granularity < 1) throw std::invalid_argument("virtual_rank_sms: ranks and granularity must be positive");
  return sm_count / ranks / granularity * granularity;
}

}  // namespace overlap::cuda
