"""Issue 9 item 3: Student-t with very large nu (log normalising constant without cancellation)."""
import mpmath as mp
import pytest

from puffer.noise import GenCauchy, StudentT


def t_divergence(nu, alpha, u):
    """D_alpha(t_nu(. - u) || t_nu) at 40 digits, from the definition."""
    mp.mp.dps = 40
    nu, a, u = mp.mpf(nu), mp.mpf(alpha), mp.mpf(u)
    k = nu + 1
    logZ = mp.loggamma(k / 2) - mp.loggamma(nu / 2) - mp.log(nu * mp.pi) / 2

    def f(x):
        return mp.exp(logZ - k / 2 * (a * mp.log1p((x - u) ** 2 / nu) + (1 - a) * mp.log1p(x * x / nu)))

    pts = [-mp.inf, -40, -10, -3, 0, u / 2, u, 3 + u, 10 + u, 40 + u, mp.inf]
    return mp.log(mp.quad(f, pts)) / (a - 1)


@pytest.mark.parametrize("nu", [1e4, 1e6, 1e8, 1e10])
@pytest.mark.parametrize("alpha,u", [(1.01, 1.0), (2.0, 0.5), (1.5, 3.0), (1.001, 1e-3)])
def test_student_large_nu_never_under_reports(nu, alpha, u):
    got = StudentT(nu, 1.0).renyi_shift(alpha, u)
    ref = t_divergence(nu, alpha, u)
    assert got >= ref, (got, float(ref), float((got - ref) / ref))
    assert got <= ref * (1 + 1e-9)


@pytest.mark.parametrize("k", [1.0 + 1e-6, 1e6, 1e9])
def test_gen_cauchy_extreme_k(k):
    # GenCauchy(gamma, k) = gamma t_{k-1} / sqrt(k-1): compare through Student-t's oracle
    nu = k - 1.0
    g = GenCauchy(1.0, k)
    u = 0.5
    got = g.renyi_shift(2.0, u)
    ref = t_divergence(nu, 2.0, u * mp.sqrt(nu))
    assert got >= ref
    assert got <= ref * (1 + 1e-8)
