#include "cost_model/bandwidth_curve.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Eigen/Dense>

namespace overlap {

Ps AlphaBeta::time_ps(Bytes bytes) const {
  if (bytes <= 0) return 0;
  return ps_from_us(alpha_us) + transfer_ps(bytes, beta_gbps);
}

// Weighted least squares of t = alpha + s * (1/beta). Each sample is weighted by 1/t so the fit
// minimises relative error: samples span many decades (nccl-tests sweeps 8 B..8 GB) and an
// unweighted fit would let the largest sizes decide alpha too.
AlphaBeta fit_alpha_beta(const std::vector<CurvePoint>& points) {
  if (points.empty()) throw std::invalid_argument("fit_alpha_beta: no points");
  if (points.size() == 1) {
    const CurvePoint& p = points.front();
    return AlphaBeta{0.0, static_cast<double>(p.bytes) / (static_cast<double>(p.time_ps) * 1e-3)};
  }
  const auto n = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& p = points[static_cast<std::size_t>(i)];
    const double t_us = us_from_ps(p.time_ps);
    const double w = 1.0 / t_us;
    a(i, 0) = w;                                        // alpha, us
    a(i, 1) = w * static_cast<double>(p.bytes) * 1e-6;  // us per MB (1e6 bytes)
    b(i) = w * t_us;
  }
  const Eigen::Vector2d x = a.colPivHouseholderQr().solve(b);
  const double us_per_mb = x(1);
  AlphaBeta ab;
  ab.alpha_us = std::max(0.0, x(0));
  // x(1) us per 1e6 bytes -> 1e6 B / x(1) us = 1e12 / x(1) B/s = 1000 / x(1) GB/s.
  ab.beta_gbps = us_per_mb > 0 ? 1000.0 / us_per_mb : 0.0;
  if (!(ab.beta_gbps > 0) || !std::isfinite(ab.beta_gbps)) {
    // Degenerate samples (time not growing with size): fall back to the largest sample's bandwidth.
    const auto& p = *std::max_element(points.begin(), points.end(),
                                      [](const CurvePoint& l, const CurvePoint& r) { return l.bytes < r.bytes; });
    ab.beta_gbps = static_cast<double>(p.bytes) / (static_cast<double>(p.time_ps) * 1e-3);
  }
  return ab;
}

BandwidthCurve::BandwidthCurve(std::vector<CurvePoint> points) : points_(std::move(points)) {
  if (points_.empty()) throw std::invalid_argument("BandwidthCurve: no points");
  std::sort(points_.begin(), points_.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.bytes < b.bytes; });
  for (std::size_t i = 0; i < points_.size(); ++i) {
    if (points_[i].bytes <= 0) throw std::invalid_argument("BandwidthCurve: sizes must be positive");
    if (points_[i].time_ps <= 0) throw std::invalid_argument("BandwidthCurve: times must be positive");
    if (i > 0 && points_[i].bytes == points_[i - 1].bytes) {
      throw std::invalid_argument("BandwidthCurve: sizes must be distinct");
    }
  }
  fit_ = fit_alpha_beta(points_);
}

BandwidthCurve BandwidthCurve::from_alpha_beta(double alpha_us, double beta_gbps) {
  if (!(alpha_us >= 0) || !(beta_gbps > 0)) {
    throw std::invalid_argument("BandwidthCurve::from_alpha_beta: need alpha >= 0 and beta > 0");
  }
  BandwidthCurve c;
  c.fit_ = AlphaBeta{alpha_us, beta_gbps};
  c.fit_only_ = true;
  return c;
}

Ps BandwidthCurve::time_ps(Bytes bytes) const {
  if (bytes <= 0) return 0;
  if (fit_only_) return fit_.time_ps(bytes);
  if (points_.empty()) throw std::logic_error("BandwidthCurve::time_ps on an empty curve");
  const CurvePoint& first = points_.front();
  const CurvePoint& last = points_.back();
  if (bytes >= last.bytes) {
    // Beyond the samples: the last sample plus the remaining bytes at the fitted asymptotic bandwidth.
    return last.time_ps + transfer_ps(bytes - last.bytes, fit_.beta_gbps);
  }
  if (bytes <= first.bytes) {
    // Below the samples: remove the missing bytes at the fitted bandwidth, never below alpha (the
    // latency floor) nor below 1 ps; if alpha exceeds the first sample, keep the first sample.
    const Ps shifted = first.time_ps - transfer_ps(first.bytes - bytes, fit_.beta_gbps);
    const Ps floor_ps = std::min(first.time_ps, std::max<Ps>(1, ps_from_us(fit_.alpha_us)));
    return std::max(shifted, floor_ps);
  }
  const auto hi = std::upper_bound(points_.begin(), points_.end(), bytes,
                                   [](Bytes b, const CurvePoint& p) { return b < p.bytes; });
  const auto lo = hi - 1;
  if (lo->bytes == bytes) return lo->time_ps;
  // Linear in bytes: exact wherever the path is alpha-beta between two samples (a transfer's time is
  // affine in its size at a fixed protocol), where interpolating in log2(size) would overestimate a
  // bandwidth-bound stretch by up to 25 % between samples 4x apart. FlashOverlap's tuner interpolates
  // the same way (facts.md: "linear interpolation").
  const double f = static_cast<double>(bytes - lo->bytes) / static_cast<double>(hi->bytes - lo->bytes);
  const double t = static_cast<double>(lo->time_ps) + f * static_cast<double>(hi->time_ps - lo->time_ps);
  return checked_ps(std::round(t));
}

double BandwidthCurve::gbps(Bytes bytes) const {
  const Ps t = time_ps(bytes);
  return t > 0 ? gbps_from_bytes_per_ps(static_cast<double>(bytes) / static_cast<double>(t)) : 0.0;
}

}  // namespace overlap
