// BandwidthCurve: exact at samples, monotone between, alpha-beta fit and extrapolation.
#include <catch2/catch.hpp>

#include "cost_model/bandwidth_curve.hpp"

using namespace overlap;

TEST_CASE("curve is exact at samples and monotone between", "[curve]") {
  const BandwidthCurve c({{1 << 20, ps_from_us(20)}, {1024, ps_from_us(10)}, {1 << 30, ps_from_us(3000)}});
  CHECK(c.time_ps(1024) == ps_from_us(10));
  CHECK(c.time_ps(1 << 20) == ps_from_us(20));
  CHECK(c.time_ps(1 << 30) == ps_from_us(3000));
  // Linear in bytes: halfway between 2^20 and 2^30 bytes is halfway in time.
  CHECK(c.time_ps((Bytes{1} << 20) + ((Bytes{1} << 30) - (Bytes{1} << 20)) / 2) == ps_from_us(1510));
  Ps prev = 0;
  for (Bytes b = 1; b <= (Bytes{1} << 32); b = b * 3 / 2 + 1) {
    const Ps t = c.time_ps(b);
    CHECK(t >= prev);
    prev = t;
  }
  CHECK(c.time_ps(0) == 0);
}

TEST_CASE("alpha-beta fit recovers known parameters", "[curve]") {
  // t = 5 us + S / (100 GB/s); 100 GB/s = 1e5 bytes per us.
  std::vector<CurvePoint> pts;
  for (int e = 10; e <= 30; e += 2) {
    const Bytes s = Bytes{1} << e;
    pts.push_back({s, ps_from_us(5.0 + static_cast<double>(s) / 1e5)});
  }
  const AlphaBeta ab = fit_alpha_beta(pts);
  CHECK(ab.alpha_us == Approx(5.0).epsilon(1e-6));
  CHECK(ab.beta_gbps == Approx(100.0).epsilon(1e-6));
  // Beyond the samples: continuous with the last sample, slope 1 / beta.
  const BandwidthCurve c(pts);
  const Bytes last = Bytes{1} << 30;
  CHECK(c.time_ps(2 * last) == c.time_ps(last) + transfer_ps(last, c.fit().beta_gbps));
  CHECK(c.time_ps(1) >= ps_from_us(5.0) - 1);  // below: never under the latency floor
  CHECK(c.time_ps(1) <= c.time_ps(1024));
}

TEST_CASE("from_alpha_beta and validation", "[curve]") {
  const BandwidthCurve c = BandwidthCurve::from_alpha_beta(2.0, 500);
  CHECK_FALSE(c.empty());
  CHECK(c.time_ps(1'000'000) == ps_from_us(2.0) + 2'000'000);  // 1 MB at 0.5 B/ps
  CHECK(BandwidthCurve().empty());
  CHECK_THROWS_AS(BandwidthCurve({{100, 5}, {100, 6}}), std::invalid_argument);
  CHECK_THROWS_AS(BandwidthCurve({{0, 5}}), std::invalid_argument);
  CHECK_THROWS_AS(BandwidthCurve({{10, 0}}), std::invalid_argument);
}
