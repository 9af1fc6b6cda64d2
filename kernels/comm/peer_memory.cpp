#include "kernels/comm/peer_memory.hpp"

#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "kernels/comm/bootstrap.hpp"
#include "kernels/common/check.hpp"

namespace overlap::cuda {
namespace {

constexpr std::size_t kHostNameBytes = 64;

// What a rank tells its peers of one shared buffer.
struct BufferRecord {
  cudaIpcMemHandle_t handle;
  std::uint64_t offset;  // of the buffer inside its allocation
  std::uint64_t bytes;
};

}  // namespace

std::vector<unsigned char> PeerMemory::all_gather(const void* mine, std::size_t bytes) {
  DeviceBuffer<unsigned char> send(bytes), recv(bytes * static_cast<std::size_t>(ranks_));
  CUDA_CHECK(cudaMemcpyAsync(send.get(), mine, bytes, cudaMemcpyHostToDevice, stream_));
  NCCL_CHECK(ncclAllGather(send.get(), recv.get(), bytes, ncclUint8, comm_, stream_));
  std::vector<unsigned char> all(recv.size());
  CUDA_CHECK(cudaMemcpyAsync(all.data(), recv.get(), all.size(), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  return all;
}

std::uintptr_t PeerMemory::open(int rank, const cudaIpcMemHandle_t& h) {
  const std::pair<int, std::string> key{rank, std::string(h.reserved, sizeof h.reserved)};
  if (auto it = opened_.find(key); it != opened_.end()) return it->second;
  void* p = nullptr;
  // Lazy peer access: the driver enables NVLink / PCIe peer access to rank's GPU on first use.
  CUDA_CHECK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
  opened_.emplace(key, reinterpret_cast<std::uintptr_t>(p));
  return reinterpret_cast<std::uintptr_t>(p);
}

PeerMemory::PeerMemory(ncclComm_t comm, int rank, int ranks, cudaStream_t stream, int copy_streams)
    : comm_(comm), rank_(rank), ranks_(ranks), stream_(stream), registry_(ranks, rank), signals_(ranks, copy_streams) {
  // Every rank sees every hostname, so every rank reaches the same verdict (no rank is left waiting
  // in a collective the others skipped).
  char host[kHostNameBytes] = {0};
  gethostname(host, sizeof host - 1);
  const auto hosts = all_gather(host, sizeof host);
  for (int j = 0; j < ranks_; ++j) {
    if (std::memcmp(hosts.data() + static_cast<std::size_t>(j) * kHostNameBytes, host, kHostNameBytes) != 0) {
      throw std::runtime_error("peer memory needs every rank on one host (CUDA IPC); rank " + std::to_string(j) + " runs on " +
                               std::string(reinterpret_cast<const char*>(hosts.data() + static_cast<std::size_t>(j) * kHostNameBytes)) +
                               ", rank " + std::to_string(rank_) + " on " + host);
    }
  }
  pad_ = DeviceBuffer<std::uint32_t>(signals_.words());
  CUDA_CHECK(cudaMemsetAsync(pad_.get(), 0, pad_.bytes(), stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  cudaIpcMemHandle_t mine{};
  CUDA_CHECK(cudaIpcGetMemHandle(&mine, pad_.get()));
  const auto handles = all_gather(&mine, sizeof mine);
  pads_.assign(static_cast<std::size_t>(ranks_), 0);
  std::string error;
  try {
    for (int j = 0; j < ranks_; ++j) {
      cudaIpcMemHandle_t h;
      std::memcpy(&h, handles.data() + static_cast<std::size_t>(j) * sizeof h, sizeof h);
      pads_[static_cast<std::size_t>(j)] = j == rank_ ? reinterpret_cast<std::uintptr_t>(pad_.get()) : open(j, h);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  try {
    agree(error);
  } catch (...) {
    close_all();  // the destructor does not run for a constructor that throws
    throw;
  }
}

// Closes this process's mappings of its peers' pads. Its own pad is freed with it while peers may
// still map it: only at the end of a job, after the last collective, when every process ends.
PeerMemory::~PeerMemory() { close_all(); }

void PeerMemory::close_all() {
  for (const auto& [key, base] : opened_) cudaIpcCloseMemHandle(reinterpret_cast<void*>(base));
  opened_.clear();
}

void PeerMemory::agree(const std::string& error) {
  const std::int32_t ok = error.empty() ? 1 : 0;
  const auto all = all_gather(&ok, sizeof ok);
  for (int j = 0; j < ranks_; ++j) {
    std::int32_t v = 0;
    std::memcpy(&v, all.data() + static_cast<std::size_t>(j) * sizeof v, sizeof v);
    if (v == 0) {
      throw std::runtime_error(error.empty() ? "rank " + std::to_string(j) + " could not map its peers' memory (its log says why)"
                                             : "rank " + std::to_string(rank_) + " could not map its peers' memory: " + error);
    }
  }
}

void PeerMemory::share(const std::vector<std::pair<const void*, std::size_t>>& buffers) {
  std::vector<BufferRecord> mine(buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    const auto p = reinterpret_cast<CUdeviceptr>(buffers[i].first);
    CU_CHECK(cuMemGetAddressRange(&base, &size, p));
    CUDA_CHECK(cudaIpcGetMemHandle(&mine[i].handle, reinterpret_cast<void*>(base)));
    mine[i].offset = p - base;
    mine[i].bytes = buffers[i].second;
  }
  // The count first: a rank sharing a different number of buffers is named, not a hang.
  const std::uint64_t count = buffers.size();
  const auto counts = all_gather(&count, sizeof count);
  for (int j = 0; j < ranks_; ++j) {
    std::uint64_t c = 0;
    std::memcpy(&c, counts.data() + static_cast<std::size_t>(j) * sizeof c, sizeof c);
    if (c != count) {
      throw std::runtime_error("peer memory: rank " + std::to_string(j) + " shares " + std::to_string(c) + " buffers, rank " +
                               std::to_string(rank_) + " " + std::to_string(count));
    }
  }
  if (count == 0) return;
  const auto all = all_gather(mine.data(), mine.size() * sizeof(BufferRecord));
  const std::size_t per_rank = mine.size() * sizeof(BufferRecord);
  // Sizes that differ between ranks are the same error on every rank; a mapping that fails on one
  // rank is agreed on, so no rank goes on into a collective the others left.
  std::string error;
  try {
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      std::vector<std::size_t> sizes(static_cast<std::size_t>(ranks_));
      std::vector<std::uintptr_t> mapped(static_cast<std::size_t>(ranks_));
      for (int j = 0; j < ranks_; ++j) {
        BufferRecord r;
        std::memcpy(&r, all.data() + static_cast<std::size_t>(j) * per_rank + i * sizeof r, sizeof r);
        sizes[static_cast<std::size_t>(j)] = r.bytes;
        mapped[static_cast<std::size_t>(j)] =
            j == rank_ ? reinterpret_cast<std::uintptr_t>(buffers[i].first) : open(j, r.handle) + static_cast<std::uintptr_t>(r.offset);
      }
      registry_.add(reinterpret_cast<std::uintptr_t>(buffers[i].first), buffers[i].second, sizes, mapped);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  agree(error);
}

void PeerMemory::unshare() {
  // Every mapping of a peer's run buffers is closed before any rank frees them (CUDA: freeing an
  // exported allocation before its importers close it is undefined): finish every pull, close,
  // then meet.
  CUDA_CHECK(cudaDeviceSynchronize());
  for (auto it = opened_.begin(); it != opened_.end();) {
    const bool pad = it->second == pads_[static_cast<std::size_t>(it->first.first)];
    if (pad) {
      ++it;
      continue;
    }
    CUDA_CHECK(cudaIpcCloseMemHandle(reinterpret_cast<void*>(it->second)));
    it = opened_.erase(it);
  }
  registry_ = PeerRegistry(ranks_, rank_);
  const std::uint64_t token = 0;
  (void)all_gather(&token, sizeof token);
}

const void* PeerMemory::peer(int rank, const void* local, std::size_t bytes) const {
  return reinterpret_cast<const void*>(registry_.translate(rank, reinterpret_cast<std::uintptr_t>(local), bytes));
}

void PeerMemory::signal_ready(cudaStream_t stream, int dst, int idx) {
  const std::uint32_t n = signals_.next_sent(dst, idx);
  const CUdeviceptr word = pads_.at(static_cast<std::size_t>(dst)) + signals_.word(rank_, idx) * sizeof(std::uint32_t);
  // Default flags: the write is fenced after every earlier write of the stream (the data it announces).
  CU_CHECK(cuStreamWriteValue32(reinterpret_cast<CUstream>(stream), word, n, CU_STREAM_WRITE_VALUE_DEFAULT));
}

void PeerMemory::wait_ready(cudaStream_t stream, int src, int idx) {
  const std::uint32_t n = signals_.next_expected(src, idx);
  const CUdeviceptr word = reinterpret_cast<CUdeviceptr>(pad_.get()) + signals_.word(src, idx) * sizeof(std::uint32_t);
  CU_CHECK(cuStreamWaitValue32(reinterpret_cast<CUstream>(stream), word, n, CU_STREAM_WAIT_VALUE_GEQ));
}

}  // namespace overlap::cuda
