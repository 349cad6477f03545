// Unit tests of the plan kernels (cpp/transport/kantorovich.hpp, cpp/models/markov_plans.hpp):
// closed forms, the safe side of the roots, the witness rule and the cancellation hook.
#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/errors.hpp"
#include "models/markov_plans.hpp"
#include "transport/kantorovich.hpp"

namespace {

namespace tr = puffer::transport;

TEST(Thm2, OneRowAtOneDistanceHasRootEpsOverD) {
  const double d[] = {2.0, 2.0}, m[] = {0.25, 0.75}, r[] = {1.0, 1.0}, c[] = {3.0, 3.0};
  const tr::Thm2 t = tr::thm2_eta(d, m, r, c, 2, 1.0);
  EXPECT_LE(t.eta, 0.5);  // feasible: at or below the exact root eps / d
  EXPECT_GE(t.eta, 0.5 * (1 - 1e-12));
  EXPECT_EQ(t.kind, 1);
  EXPECT_EQ(t.key, 1.0);
}

TEST(Thm2, NothingConstrainedWhenNoMassMoves) {
  const double d[] = {0.0, 0.0}, m[] = {0.5, 0.5}, r[] = {1.0, 2.0}, c[] = {1.0, 2.0};
  const tr::Thm2 t = tr::thm2_eta(d, m, r, c, 2, 1.0);
  EXPECT_TRUE(std::isinf(t.eta));
  EXPECT_EQ(t.kind, 0);
}

TEST(Thm2, EqualRowsAndColumnsBindAtTheFirstRow) {
  const double d[] = {1.0, 1.0}, m[] = {0.5, 0.5}, r[] = {0.0, 1.0}, c[] = {1.0, 2.0};
  const tr::Thm2 t = tr::thm2_eta(d, m, r, c, 2, 1.0);
  EXPECT_EQ(t.kind, 1);
  EXPECT_EQ(t.key, 0.0);
}

TEST(Thm2, BadInputThrows) {
  const double d[] = {1.0}, m[] = {-1.0}, r[] = {0.0}, c[] = {1.0};
  EXPECT_THROW(tr::thm2_eta(d, m, r, c, 1, 1.0), puffer::InvalidArgument);
  const double m2[] = {1.0};
  EXPECT_THROW(tr::thm2_eta(d, m2, r, c, 1, 0.0), puffer::InvalidArgument);
}

TEST(Thm2, CancellationHookStopsTheBatch) {
  std::vector<double> d(100, 1.0), m(100, 0.01), r(100), c(100);
  for (int k = 0; k < 100; ++k) r[k] = c[k] = k;
  std::vector<std::int64_t> off(101);
  for (int k = 0; k <= 100; ++k) off[k] = k;
  std::vector<tr::Thm2> out(100);
  std::atomic<int> polls{0};
  const tr::CancelFn stop = [&] { return ++polls > 3; };
  EXPECT_THROW(tr::thm2_batch(d.data(), m.data(), r.data(), c.data(), off.data(), 100, 1.0, 0.0, 2, stop, out.data()),
               tr::Cancelled);
  tr::thm2_batch(d.data(), m.data(), r.data(), c.data(), off.data(), 100, 1.0, 0.0, 2, {}, out.data());
  for (const auto& t : out) EXPECT_LE(t.eta, 1.0);
}

TEST(Dagwm, LogMomentIsAnUpperBound) {
  // log(0.5 e^0 + 0.5 e^(1 * 2)) with s = {0, 2}
  const double logm[] = {std::log(0.5), std::log(0.5)}, s[] = {0.0, 2.0};
  const std::int64_t idx[] = {0, 1}, off[] = {0, 2};
  double out = 0.0;
  tr::dagwm_log_moments(logm, s, idx, 2, off, 1, 1.0, 1, {}, &out);
  const double exact = std::log(0.5 + 0.5 * std::exp(2.0));
  EXPECT_GE(out, exact);
  EXPECT_LE(out, exact + 1e-13);
}

TEST(MarkovPlans, CancellationPolledPerPosition) {
  const double trans[] = {0.9, 0.1, 0.2, 0.8, 0.7, 0.3, 0.4, 0.6};
  const double init[] = {0.5, 0.5, 0.5, 0.5};
  const std::int64_t values[] = {0, 1};
  const puffer::models::MarkovChainSpec spec{trans, init, 2, 2, values, 5};
  const auto r = puffer::models::markov_thm2(spec, 1.0, 1);
  ASSERT_EQ(r.eta.size(), 10u);
  for (std::size_t k = 0; k < r.eta.size(); ++k) {
    EXPECT_GT(r.eta[k], 0.0);
    EXPECT_EQ(r.kind[k] > 0, true);
  }
  puffer::JobControl ctl;
  ctl.cancel = true;  // a cancelled job stops at the first position
  EXPECT_THROW(puffer::models::markov_thm2(spec, 1.0, 1, &ctl), puffer::Cancelled);
}

TEST(MarkovPlans, NearTiedLevelKeepsTheFarthestEntry) {
  // issue 22: the float tie band dropped a tiny-mass entry of the exact quantile coupling at
  // position 1, pair (1, 2): Thm 2's sup |x - x'| was 4 where exact rational arithmetic gives 5
  const double trans[] = {5e-324, 1.0, 1e-30, 0.3, 0.3, 0.4, 1e-140, 1e-140, 1.0};
  const double init[] = {1e-30, 1.0, 1.37e-299};
  const std::int64_t values[] = {-3, 0, 2};
  const puffer::models::MarkovChainSpec spec{trans, init, 1, 3, values, 2};
  const auto r = puffer::models::markov_thm2(spec, 1.0, 1);
  EXPECT_GE(r.dmax[1 * 3 + 2], 5.0);
  const auto plans = puffer::models::markov_dagwm_plans(spec, 1);
  std::size_t s = 0;  // the plan index of slot (position 1, pair 2) among the valid slots
  for (std::size_t j = 0; j < 1 * 3 + 2; ++j) s += plans.valid[j];
  ASSERT_EQ(plans.valid[1 * 3 + 2], 1);
  double vmax = 0.0;
  for (std::int64_t e = plans.off[s]; e < plans.off[s + 1]; ++e)
    vmax = std::max(vmax, std::fabs(plans.v[static_cast<std::size_t>(e)]));
  EXPECT_GE(vmax, 5.0);
}

}  // namespace
