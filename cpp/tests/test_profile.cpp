// GoogleTest unit tests of the privacy profiles (renyi/hockey.hpp) and the Renyi -> (eps, delta)
// conversions (renyi/conversion.hpp): the headers' contracts, below the Python facade, so they
// also run under the sanitizer builds. Reference values: mpmath at 40 digits (in the comments).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/errors.hpp"
#include "renyi/conversion.hpp"
#include "renyi/hockey.hpp"

namespace {

using puffer::renyi::Shape;

Shape shape(double k, double nu, double beta) {
  Shape s;
  s.k = k;
  s.nu = nu;
  s.beta = beta;
  return s;
}

TEST(Hockey, GaussianClosedFormIsAnUpperBound) {
  // Phi(1/2) - e Phi(-3/2) (Balle & Wang 2018, Thm 8) = 0.12693673750664394...
  const double d = puffer::renyi::hockey_stick(0, shape(0, 0, 0), 1.0, 1.0);
  EXPECT_GE(d, 0.12693673750664394);
  EXPECT_LE(d, 0.12693673750664394 * (1 + 1e-12));
  EXPECT_EQ(puffer::renyi::hockey_stick(0, shape(0, 0, 0), 1.0, 0.0), 0.0);
  // deep tail (eps = 10, s = 0.3): 8.375062845942414e-244, never below
  EXPECT_GE(puffer::renyi::hockey_stick(0, shape(0, 0, 0), 10.0, 0.3), 8.375062845942414e-244);
}

TEST(Hockey, LaplaceClosedForm) {
  // 1 - e^{(eps - u)/2} for u > eps, 0 otherwise
  EXPECT_GE(puffer::renyi::hockey_stick(1, shape(0, 0, 0), 0.5, 1.0), -std::expm1(-0.25));
  EXPECT_LE(puffer::renyi::hockey_stick(1, shape(0, 0, 0), 0.5, 1.0), -std::expm1(-0.25) * (1 + 1e-15));
  EXPECT_EQ(puffer::renyi::hockey_stick(1, shape(0, 0, 0), 2.0, 1.5), 0.0);
}

TEST(Hockey, QuadratureFamiliesAgreeWithMpmath) {
  // mpmath quadrature over the event {L > eps}: Student-t(3) 0.17903850371754726 (eps 0.5, u 1),
  // logistic 0.07740468631569081, generalized Gaussian beta 1.5: 0.34554164026201367
  const double st = puffer::renyi::hockey_stick(2, shape(4, 3, 0), 0.5, 1.0);
  EXPECT_GE(st, 0.17903850371754726);
  EXPECT_LE(st, 0.17903850371754726 * (1 + 1e-9));
  const double lg = puffer::renyi::hockey_stick(3, shape(0, 0, 0), 0.5, 1.0);
  EXPECT_GE(lg, 0.07740468631569081);
  EXPECT_LE(lg, 0.07740468631569081 * (1 + 1e-9));
  const double gg = puffer::renyi::hockey_stick(4, shape(0, 0, 1.5), 0.5, 1.0);
  EXPECT_GE(gg, 0.34554164026201367);
  EXPECT_LE(gg, 0.34554164026201367 * (1 + 1e-9));
  // Student-type: above its D_inf the event is empty; logistic likewise above u
  EXPECT_EQ(puffer::renyi::hockey_stick(2, shape(4, 3, 0), 3.0, 2.0), 0.0);
  EXPECT_EQ(puffer::renyi::hockey_stick(3, shape(0, 0, 0), 3.0, 2.0), 0.0);
}

TEST(Hockey, MaxShiftMeetsTheTargetFromBelow) {
  for (int fam : {0, 1, 2, 3, 4}) {
    const Shape s = fam == 2 ? shape(4, 3, 0) : shape(0, 0, fam == 4 ? 1.5 : 0);
    for (double eps : {0.1, 1.0, 5.0}) {
      const double u = puffer::renyi::max_shift_hockey(fam, s, eps, 1e-6);
      ASSERT_GT(u, 0.0);
      EXPECT_LE(puffer::renyi::hockey_stick(fam, s, eps, u), 1e-6) << fam << " " << eps;
      EXPECT_GT(puffer::renyi::hockey_stick(fam, s, eps, u * (1 + 1e-9)), 1e-6) << fam << " " << eps;
    }
  }
}

TEST(Hockey, BatchEqualsScalarAndBadInputThrows) {
  std::vector<double> eps{0.1, 1.0, 3.0, 0.0}, u{0.5, 1.0, 2.0, 1.0}, out(4);
  puffer::renyi::hockey_stick_batch(2, shape(4, 3, 0), eps.data(), u.data(), out.data(), 4, 2);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], puffer::renyi::hockey_stick(2, shape(4, 3, 0), eps[i], u[i]));
  EXPECT_THROW(puffer::renyi::hockey_stick(0, shape(0, 0, 0), -1.0, 1.0), puffer::InvalidArgument);
  EXPECT_THROW(puffer::renyi::hockey_stick(0, shape(0, 0, 0), 1.0, std::nan("")), puffer::InvalidArgument);
  EXPECT_THROW(puffer::renyi::max_shift_hockey(0, shape(0, 0, 0), 1.0, 1.0), puffer::InvalidArgument);
}

TEST(Conversion, CksAndOptimal) {
  // CKS: 0.5 + log(1/2) - (log 1e-5 + log 2) = 10.626631103850345...
  const double cks = puffer::renyi::rdp_to_dp_cks(2.0, 0.5, 1e-5);
  EXPECT_GE(cks, 10.626631103850345);
  EXPECT_LE(cks, 10.626631103850345 * (1 + 1e-14));
  // the optimal conversion: >= the two-point primal optimum 9.693940631529006 (mpmath), <= CKS
  const double opt = puffer::renyi::rdp_to_dp_optimal(2.0, 0.5, 1e-5);
  EXPECT_GE(opt, 9.693940631529006);
  EXPECT_LE(opt, 9.693940631529006 * (1 + 1e-9));
  EXPECT_EQ(puffer::renyi::rdp_to_dp_optimal(2.0, 0.0, 1e-5), 0.0);
  EXPECT_EQ(puffer::renyi::rdp_to_dp_cks(2.0, std::numeric_limits<double>::infinity(), 1e-5),
            std::numeric_limits<double>::infinity());
  EXPECT_THROW(puffer::renyi::rdp_to_dp_cks(1.0, 0.5, 1e-5), puffer::InvalidArgument);
  EXPECT_THROW(puffer::renyi::rdp_to_dp_optimal(2.0, 0.5, 0.0), puffer::InvalidArgument);
}

}  // namespace
