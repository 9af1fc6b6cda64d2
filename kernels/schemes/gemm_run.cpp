#include "kernels/schemes/gemm_run.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/comm/bootstrap.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/host_profile.hpp"
#include "kernels/gemm/signal_gemm.hpp"
#include "kernels/ops/ops.hpp"
#include "kernels/schemes/run_root.hpp"

namespace overlap::cuda {
namespace {

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cublas status " + std::to_string(static_cast<int>(s)));
}

// fp32 C (row-major m x n) = A (m x k) B (k x n), bf16 inputs: the reference GEMM.
void reference_gemm(cublasHandle_t h, cudaStream_t s, const __nv_bfloat16* a, const __nv_bfloat16* b, float* c,
                    std::int64_t m, std::int64_t n, std::int64_t k) {
  check_cublas(cublasSetStream(h, s), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  check_cublas(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                            CUDA_R_16BF, static_cast<int>(n), a, CUDA_R_16BF, static_cast<int>(k), &beta, c, CUDA_R_32F,
                            static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (reference)");
}

}  // namespace

GemmRun::GemmRun(Node& nd, const RunSpec& c_, cublasHandle_t cublas, ncclComm_t ref_comm)
    : node(nd), cfg(c_), T(nd.ranks()), m(c_.m), n(c_.n), k(c_.k), cublas_(cublas), ref_comm_(ref_comm) {
  if (T != cfg.ranks) throw std::invalid_argument("GemmRun: node has " + std::to_string(T) + " ranks, the run " + std::to_string(cfg.ranks));
  make_primary_current();
  CUDA_CHECK(cudaStreamCreateWithFlags(&root_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&root_event_, cudaEventDisableTiming));
  const std::size_t R = static_cast<std::size_t>(T);
  a.resize(R);
  a_shard.resize(R);
  b.resize(R);
  c.resize(R);
  out.resize(R);
  layout.resize(R);
  ref_.resize(R);
  scratch_.resize(R);
  const bool ag = cfg.primitive == "all_gather";
  const std::int64_t shard = m / T;
  for (int r : node.local_ranks()) {
    const auto i = static_cast<std::size_t>(r);
    a[i] = DeviceBuffer<__nv_bfloat16>(m * k);
    b[i] = DeviceBuffer<__nv_bfloat16>(k * n);
    c[i] = DeviceBuffer<__nv_bfloat16>(m * n);
    if (ag) {
      a_shard[i] = DeviceBuffer<__nv_bfloat16>(shard * k);
      fill_random_bf16(a_shard[i].get(), a_shard[i].size(), 100 + r, 1.0f, root_);
    } else {
      fill_random_bf16(a[i].get(), a[i].size(), 100 + r, 1.0f, root_);
    }
    fill_random_bf16(b[i].get(), b[i].size(), 200 + r, 1.0f, root_);
    out[i] = DeviceBuffer<__nv_bfloat16>(cfg.primitive == "reduce_scatter" ? shard * n : m * n);
  }
  // The reference: cuBLAS GEMMs with fp32 output, then the reference collective in fp32.
  DeviceBuffer<float> tmp(m * n);
  if (!ag) {
    DeviceBuffer<float> sum(m * n);
    CUDA_CHECK(cudaMemsetAsync(sum.get(), 0, sum.bytes(), root_));
    for (int r : node.local_ranks()) {
      reference_gemm(cublas_, root_, a[static_cast<std::size_t>(r)].get(), b[static_cast<std::size_t>(r)].get(), tmp.get(), m, n, k);
      accumulate_f32_from_f32(sum.get(), tmp.get(), sum.size(), root_);
    }
    if (!node.is_virtual()) NCCL_CHECK(ncclAllReduce(sum.get(), sum.get(), sum.size(), ncclFloat, ncclSum, ref_comm_, root_));
    ref_[static_cast<std::size_t>(node.local_ranks().front())] = std::move(sum);
  } else {
    DeviceBuffer<__nv_bfloat16> gathered(m * k);
    if (node.is_virtual()) {
      for (int r = 0; r < T; ++r) {
        CUDA_CHECK(cudaMemcpyAsync(gathered.get() + r * shard * k, a_shard[static_cast<std::size_t>(r)].get(),
                                   shard * k * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice, root_));
      }
    } else {
      const int me = node.local_ranks().front();
      NCCL_CHECK(ncclAllGather(a_shard[static_cast<std::size_t>(me)].get(), gathered.get(), shard * k, ncclBfloat16, ref_comm_, root_));
    }
    for (int r : node.local_ranks()) {
      ref_[static_cast<std::size_t>(r)] = DeviceBuffer<float>(m * n);
      reference_gemm(cublas_, root_, gathered.get(), b[static_cast<std::size_t>(r)].get(), ref_[static_cast<std::size_t>(r)].get(), m, n, k);
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(root_));
}

GemmRun::~GemmRun() {
  if (root_event_) cudaEventDestroy(root_event_);
  if (root_) cudaStreamDestroy(root_);
}

const float* GemmRun::reference(int r) const {
  const bool shared_ref = cfg.primitive != "all_gather";
  return (shared_ref ? ref_[static_cast<std::size_t>(node.local_ranks().front())] : ref_[static_cast<std::size_t>(r)]).get();
}

__nv_bfloat16* GemmRun::scratch(int rank, const std::string& name, std::size_t elems) {
  auto& list = scratch_[static_cast<std::size_t>(rank)];
  for (auto& [nm, buf] : list) {
    if (nm == name) {
      if (buf.size() < elems) throw std::logic_error("scratch '" + name + "' asked for with two sizes");
      return buf.get();
    }
  }
  list.emplace_back(name, DeviceBuffer<__nv_bfloat16>(elems));
  return list.back().second.get();
}

bool GemmRun::is_local(int rank) const {
  const auto l = node.local_ranks();
  return std::find(l.begin(), l.end(), rank) != l.end();
}

const void* GemmRun::on_rank(int j, std::size_t bytes, const std::function<const void*(int)>& f) const {
  if (is_local(j)) return f(j);
  return node.peer(j, f(node.local_ranks().front()), bytes);
}

void GemmRun::share_buffers() {
  std::vector<std::pair<const void*, std::size_t>> list;
  auto add = [&](const DeviceBuffer<__nv_bfloat16>& b) {
    if (b.get()) list.emplace_back(b.get(), b.bytes());
  };
  // The same order on every rank: the operands, then the scratch in the order the setup asked.
  for (int r : node.local_ranks()) {
    const auto i = static_cast<std::size_t>(r);
    for (const auto* v : {&a, &a_shard, &c, &out}) add((*v)[i]);
    for (const auto& named : scratch_[i]) add(named.second);
  }
  shared_ = node.share(list);
}

double GemmRun::check() {
  for (int r : node.local_ranks()) {
    fill_value_bf16(out[static_cast<std::size_t>(r)].get(), out[static_cast<std::size_t>(r)].size(), std::nanf(""), root_);
  }
  CUDA_CHECK(cudaStreamSynchronize(root_));
  fork_ranks_from(node, root_, root_event_);
  enqueue(false);
  join_ranks_to(node, root_);
  CUDA_CHECK(cudaStreamSynchronize(root_));
  double worst = 0;
  const bool shared_ref = cfg.primitive != "all_gather";
  for (int r : node.local_ranks()) {
    const auto i = static_cast<std::size_t>(r);
    const float* ref = (shared_ref ? ref_[static_cast<std::size_t>(node.local_ranks().front())] : ref_[i]).get();
    DeviceBuffer<float> expected(out[i].size());
    std::size_t at = 0;
    for (const OutputPiece& p : layout[i]) {
      if (p.row < 0 || p.col < 0 || p.row + p.rows > m || p.col + p.cols > n || at + p.rows * p.cols > expected.size()) {
        throw std::logic_error("scheme layout piece outside the result");
      }
      CUDA_CHECK(cudaMemcpy2DAsync(expected.get() + at, p.cols * sizeof(float), ref + p.row * n + p.col, n * sizeof(float),
                                   p.cols * sizeof(float), p.rows, cudaMemcpyDeviceToDevice, root_));
      at += static_cast<std::size_t>(p.rows * p.cols);
    }
    if (at != expected.size()) throw std::logic_error("scheme layout does not cover its output buffer");
    const double e = relative_error(out[i].get(), expected.get(), expected.size(), root_);
    worst = std::isnan(e) || std::isnan(worst) ? std::nan("") : std::max(worst, e);
  }
  if (extra_check) {
    const double e = extra_check();
    worst = std::isnan(e) || std::isnan(worst) ? std::nan("") : std::max(worst, e);
  }
  return worst_over_processes(node, ref_comm_, root_, worst);
}

void gemm_rows(GemmRun& run, int r, cudaStream_t stream, const __nv_bfloat16* a_rows, __nv_bfloat16* c_rows,
               std::int64_t rows) {
  run.node.activate(r);
  SignalGemmArgs g;
  g.a = a_rows;
  g.b = run.b[static_cast<std::size_t>(r)].get();
  g.d = c_rows;
  g.m = static_cast<int>(rows);
  g.n = static_cast<int>(run.n);
  g.k = static_cast<int>(run.k);
  g.ctas_per_sm = kRunnerGemmCtasPerSm;
  host_profile::Scope t(host_profile::Call::launch);
  signal_gemm(g, stream);
}

std::vector<const __nv_bfloat16*> const_ptrs(const GemmRun& run, const std::function<const __nv_bfloat16*(int)>& f) {
  std::vector<const __nv_bfloat16*> v(static_cast<std::size_t>(run.T), nullptr);
  for (int r : run.node.local_ranks()) v[static_cast<std::size_t>(r)] = f(r);
  return v;
}
std::vector<__nv_bfloat16*> ptrs(const GemmRun& run, const std::function<__nv_bfloat16*(int)>& f) {
  std::vector<__nv_bfloat16*> v(static_cast<std::size_t>(run.T), nullptr);
  for (int r : run.node.local_ranks()) v[static_cast<std::size_t>(r)] = f(r);
  return v;
}
std::vector<cudaStream_t> stream_ptrs(GemmRun& run, const std::function<cudaStream_t(int)>& f) {
  std::vector<cudaStream_t> v(static_cast<std::size_t>(run.T), nullptr);
  for (int r : run.node.local_ranks()) v[static_cast<std::size_t>(r)] = f(r);
  return v;
}

std::vector<double> GemmRun::time(bool skip_comm, int warmup, int reps) {
  return time_run_us(node, root_, root_event_, warmup, reps, host_enqueue_us, [&] { enqueue(skip_comm); });
}

void use_scheme_transport(Node& node, const RunSpec& spec) {
  // Point-to-point steps: async TP pulls by copy engine (its definition); CommFuse takes the
  // configuration's transport, by default the node's own (copy engine on virtual ranks, NCCL on a
  // real node: what validate assumes for runs that do not say). Refused before any collective, so on
  // a real node every rank refuses together.
  if (spec.scheme == "async_tp") node.use_transport(Node::Transport::copy_engine);
  if (spec.scheme == "commfuse") {
    const std::string given = !spec.transport.empty() ? spec.transport : node.is_virtual() ? "copy_engine" : "nccl";
    node.use_transport(given == "nccl" ? Node::Transport::nccl : Node::Transport::copy_engine);
  }
}

void setup_scheme(GemmRun& run) {
  const RunSpec& c = run.cfg;
  if (c.scheme == "no_overlap") setup_no_overlap(run);
  if (c.scheme == "data_slicing") setup_data_slicing(run, c.chunks);
  if (c.scheme == "async_tp") setup_async_tp(run, c.streams);
  if (c.scheme == "commfuse") setup_commfuse(run, c.slices_per_rank, c.schedule);
  if (c.scheme == "flashoverlap") setup_flashoverlap(run, c.groups, c.wave_sms, c.ctas_per_sm);
  if (!run.enqueue) throw std::runtime_error("scheme " + c.scheme + " does not run gemm_collective");
}

}  // namespace overlap::cuda
