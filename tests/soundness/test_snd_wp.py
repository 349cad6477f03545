"""Issue 9 item 5: W_p in a scaled form, for every p, with bounded cost; fuzz escapes."""
import math
from fractions import Fraction as F

import pytest

from puffer.dist import DiscreteDist
from puffer.errors import PufferError
from puffer.transport import w_inf_sorted, w_p
from timing import cpu_seconds


@pytest.mark.parametrize("p", [1, 2, 7, 64, 65, 1000, 10**6, 1e300])
def test_w_p_two_point_shift(p):
    # every atom moves by 0.1: W_p = 0.1 for every p (was 0.0 at p = 1000: 0.1^1000 underflows)
    P, Q = DiscreteDist([0, 0.1], [0.5, 0.5]), DiscreteDist([0, 0.2], [0.5, 0.5])
    # quantile coupling moves half the mass by 0 and half by 0.1: W_p = 0.1 * 0.5^(1/p)
    assert w_p(P, Q, p) == pytest.approx(0.1 * 0.5 ** (1.0 / p), rel=1e-14)


@pytest.mark.parametrize("p", [600, 2000, 10**5])
def test_w_p_point_masses_far_apart(p):
    # 3.5^600 overflowed to inf
    assert w_p(DiscreteDist([0.0], [1.0]), DiscreteDist([3.5], [1.0]), p) == 3.5


def test_w_p_exact_huge_p_is_fast_and_right():
    P = DiscreteDist([0, 1, 3], [F(1, 3), F(1, 3), F(1, 3)])
    Q = DiscreteDist([1, 2, 5], [F(1, 3), F(1, 3), F(1, 3)])
    t = cpu_seconds()   # CPU time, not wall time: a loaded machine does not inflate it
    v = w_p(P, Q, 10**6)
    assert cpu_seconds() - t < 2.0
    # distances 1, 1, 2 each with mass 1/3: W_p = 2 (1/3 + 2/3 2^-p)^(1/p)
    assert v == pytest.approx(2.0 * (1 / 3) ** 1e-6, rel=1e-12)
    assert w_p(P, Q, 3) == pytest.approx((10 / 3) ** (1 / 3), rel=1e-14)


@pytest.mark.parametrize("p", [1e308, 2.0**80, math.inf])
def test_w_p_huge_p_no_overflow_error(p):
    P, Q = DiscreteDist([0, 1], [F(1, 2), F(1, 2)]), DiscreteDist([1, 2], [F(1, 2), F(1, 2)])
    assert w_p(P, Q, p) == 1.0


@pytest.mark.parametrize("tol", [math.nan, math.inf, 1.0, "x"])  # < 0 is the documented any-total mode
def test_w_inf_sorted_rejects_bad_sum_tol(tol):
    with pytest.raises(PufferError, match="sum_tol"):
        w_inf_sorted([0.0, 1.0], [0.5, 0.5], [1.0, 2.0], [0.5, 0.7], sum_tol=tol)


@pytest.mark.parametrize("norm", [0, -1, math.nan, 0.5, "l7"])
def test_support_diameter_rejects_bad_norm(norm):
    with pytest.raises(PufferError, match="norm"):
        DiscreteDist([0.0, 1.0], [0.5, 0.5]).support_diameter(norm=norm)
    with pytest.raises(PufferError, match="norm"):
        DiscreteDist([[0.0, 1.0], [2.0, 3.0]], [0.5, 0.5]).support_diameter(norm=norm)
