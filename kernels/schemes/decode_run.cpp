#include "kernels/schemes/decode_run.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/comm/bootstrap.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/host_profile.hpp"
#include "kernels/ops/ops.hpp"
#include "kernels/schemes/run_root.hpp"

namespace overlap::cuda {
DecodeRun::DecodeRun(Node& node, const RunSpec& cfg, cublasHandle_t cublas, ncclComm_t ref_comm)
    : node_(node), cfg_(cfg), cublas_(cublas), ref_comm_(ref_comm), d_model_(cfg.d_model) {
  const int T = node.ranks();
  const std::int64_t hd = cfg.d_model / cfg.heads, q = cfg.heads * hd, kv = cfg.kv_heads * hd;
  const std::int64_t att = (cfg.d_model * (q + 2 * kv) + q * cfg.d_model) / T;  // elements per rank
  const std::int64_t mlp = 3 * cfg.d_model * cfg.d_ffn / T;
  for (const auto& m : plan_.modules) {
    const std::int64_t e = m.kind == sim::DecodeModuleKind::attention ? att
                           : m.kind == sim::DecodeModuleKind::mlp     ? mlp
                                                                      : att + mlp;
    cols_.push_back(std::max<std::int64_t>(d_model_, e / d_model_ / 8 * 8));
  }
  make_primary_current();
  CUDA_CHECK(cudaStreamCreateWithFlags(&root_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&root_event_, cudaEventDisableTiming));
  const std::size_t R = static_cast<std::size_t>(T), M = plan_.modules.size();
  w_.resize(R);
  x_.resize(R);
  y_.resize(R);
  ar_.resize(R);
  landed_.resize(R);
  for (int r : node.local_ranks()) {
    node.activate(r);
    for (std::size_t i = 0; i < M; ++i) {
      cudaEvent_t e;
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      landed_[r].push_back(e);
    }
    make_primary_current();
    for (std::size_t i = 0; i < M; ++i) {
      w_[r].emplace_back(d_model_ * cols_[i]);
      x_[r].emplace_back(cols_[i]);
      y_[r].emplace_back(d_model_);
      ar_[r].emplace_back(d_model_);
      fill_random_bf16(w_[r][i].get(), w_[r][i].size(), 1000 * (r + 1) + i, 0.05f, root_);
      fill_random_bf16(x_[r][i].get(), x_[r][i].size(), 77 + i, 1.0f, root_);  // the same input on every rank
    }
  }
  what = cfg.scheme + ": " + std::to_string(M) + " modules, " + std::to_string(plan_.comm_streams) +
         " all-reduce(s) may be in flight in the plan (the kernels run them on one communication stream per rank)";
  CUDA_CHECK(cudaStreamSynchronize(root_));
}

DecodeRun::~DecodeRun() {
  for (auto& v : landed_) {
    for (auto e : v) cudaEventDestroy(e);
  }
  if (root_event_) cudaEventDestroy(root_event_);
  if (root_) cudaStreamDestroy(root_);
}

void DecodeRun::enqueue(bool skip) {
  const std::size_t M = plan_.modules.size();
  for (std::size_t i = 0; i < M; ++i) {
    const auto& mod = plan_.modules[i];
    for (int r : node_.local_ranks()) {
      cudaStream_t cs = node_.streams(r).compute[0];
      node_.activate(r);
      if (!mod.waits_for.empty()) {
        // The input takes the awaited all-reduces (a residual add): the data dependency is real, and
        // only on those all-reduces (later ones may still be in flight: the point of delaying).
        if (!skip) {
          host_profile::Scope t(host_profile::Call::stream_wait);
          for (int w : mod.waits_for) CUDA_CHECK(cudaStreamWaitEvent(cs, landed_[r][static_cast<std::size_t>(w)], 0));
        }
        PtrList in;
        for (int w : mod.waits_for) in.add(ar_[r][static_cast<std::size_t>(w)].get());
        host_profile::Scope t(host_profile::Call::launch);
        sum_bf16(x_[r][i].get(), in, static_cast<std::size_t>(d_model_), cs);
      }
      host_profile::Scope t(host_profile::Call::launch);
      gemv_bf16(y_[r][i].get(), w_[r][i].get(), x_[r][i].get(), d_model_, cols_[i], cs);
    }
    if (mod.all_reduce && !skip) {
      const auto T = static_cast<std::size_t>(node_.ranks());
      std::vector<const __nv_bfloat16*> in(T, nullptr);
      std::vector<__nv_bfloat16*> out(T, nullptr);
      std::vector<cudaStream_t> ready(T, nullptr);
      for (int r : node_.local_ranks()) {
        in[r] = y_[r][i].get();
        out[r] = ar_[r][i].get();
        ready[r] = node_.streams(r).compute[0];
      }
      node_.collective(Node::Collective::all_reduce, in, out, static_cast<std::size_t>(d_model_), ready);
      for (int r : node_.local_ranks()) {
        node_.activate(r);
        host_profile::Scope t(host_profile::Call::event_record);
        CUDA_CHECK(cudaEventRecord(landed_[r][i], node_.streams(r).comm));
      }
    }
  }
  if (!skip) {
    for (int r : node_.local_ranks()) node_.order(node_.streams(r).compute[0], r, node_.streams(r).comm);
  }
}

double DecodeRun::check() {
  fork_ranks_from(node_, root_, root_event_);
  enqueue(false);
  join_ranks_to(node_, root_);
  CUDA_CHECK(cudaStreamSynchronize(root_));
  double worst = 0;
  const float one = 1.0f, zero = 0.0f;
  DeviceBuffer<float> ref(d_model_), sum(d_model_);
  for (std::size_t i = 0; i < plan_.modules.size(); ++i) {
    CUDA_CHECK(cudaMemsetAsync(sum.get(), 0, sum.bytes(), root_));
    for (int r : node_.local_ranks()) {
      // y = W x with W row-major d_model x cols: column-major W^T (cols x d_model), op T.
      if (cublasSetStream(cublas_, root_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasSetStream");
      if (cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(d_model_), 1, static_cast<int>(cols_[i]), &one,
                       w_[r][i].get(), CUDA_R_16BF, static_cast<int>(cols_[i]), x_[r][i].get(), CUDA_R_16BF,
                       static_cast<int>(cols_[i]), &zero, ref.get(), CUDA_R_32F, static_cast<int>(d_model_), CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
        throw std::runtime_error("cublasGemmEx (decode reference)");
      }
      worst = std::max(worst, relative_error(y_[r][i].get(), ref.get(), static_cast<std::size_t>(d_model_), root_));
      DeviceBuffer<float> yf(d_model_);
      bf16_to_f32(yf.get(), y_[r][i].get(), static_cast<std::size_t>(d_model_), root_);
      accumulate_f32_from_f32(sum.get(), yf.get(), static_cast<std::size_t>(d_model_), root_);
    }
    if (!plan_.modules[i].all_reduce) continue;
    if (!node_.is_virtual()) NCCL_CHECK(ncclAllReduce(sum.get(), sum.get(), d_model_, ncclFloat, ncclSum, ref_comm_, root_));
    for (int r : node_.local_ranks()) {
      worst = std::max(worst, relative_error(ar_[r][i].get(), sum.get(), static_cast<std::size_t>(d_model_), root_));
    }
  }
  return worst_over_processes(node_, ref_comm_, root_, worst);
}

std::vector<double> DecodeRun::time(bool skip_comm, int warmup, int reps) {
  return time_run_us(node_, root_, root_event_, warmup, reps, host_enqueue_us, [&] { enqueue(skip_comm); });
}

}  // namespace overlap::cuda
