"""Bad input gives clear puffer errors; ``puffer partial-demo`` writes the three figures quickly."""
from __future__ import annotations

import math

import numpy as np
import pytest

import puffer.partial as P
from puffer import cli
from puffer.errors import ParameterError, ParameterTypeError, UnboundedSensitivityError
from puffer.partial import distributions as D
from timing import cpu_seconds


@pytest.mark.parametrize("call", [
    lambda: P.WassersteinExponential(0.0, delta_z=1.0, support=[0.0, 1.0]),
    lambda: P.WassersteinExponential(-1.0, delta_z=1.0, support=[0.0, 1.0]),
    lambda: P.WassersteinExponential(1.0, delta_z=1.0),                             # no output space
    lambda: P.WassersteinExponential(1.0, delta_z=1.0, support=[0.0, 1.0], log_base=[-np.inf, -np.inf]),
    lambda: P.WassersteinExponential(1.0, delta_z=1.0, support=[0.0, 1.0], loss="l7"),
    lambda: P.KNormGradient(1.0, 1.0, norm=3, dim=2),
    lambda: P.KNormGradient(1.0, 1.0, norm=2, dim=2).release([0.0, 0.0, 0.0]),   # dimension mismatch
    lambda: D.knorm_sample(2, 3, 1.0, 2, center=np.zeros(4)),
    lambda: D.dirichlet_multinomial_logpmf([1, 2], [1.0, 0.0]),                  # concentration <= 0
    lambda: D.dirichlet_multinomial_sample(3, [1.0, -1.0]),
    lambda: P.delta_correlated_counts(10, 1.2, 0.5),
    lambda: P.delta_correlated_counts(0, 0.2, 0.5),
    lambda: P.project_consistent([1.0], [0.0], -2.0),
    lambda: P.LatticeWEM(1.0, delta_z=2.0, base="congenial").release([3, 1], [1, 0], 5),  # z inconsistent
    lambda: P.LatticeWEM(1.0, delta_z=2.0, base="prior").release([3, 1], [1, 0], 4),      # no concentration
    lambda: P.LatticeWEM(1.0, delta_z=2.0, base="prior").release([3, 1], [1, 0], 4, concentration=[1.0, 0.0]),
    lambda: P.LatticeWEM(1.0, delta_z=2.0, base="exotic"),
    lambda: P.TPFramework.from_conditionals("z", {"t": {"a": None, "b": None}}, [("a", "b")]),  # empty support
    lambda: P.TP(-0.1),
    lambda: D.discrete_laplace_sample(0.0, 3),
    lambda: D.truncated_laplace_sample(0.0, 1.0, 1.0, 0.0, 3),
])
def test_bad_input_raises_puffer_errors(call):
    with pytest.raises((ParameterError, ParameterTypeError)):
        call()


def test_unbounded_sensitivity():
    with pytest.raises(UnboundedSensitivityError):
        P.KNormGradient(1.0, math.inf, dim=2)
    with pytest.raises(UnboundedSensitivityError):
        P.AdditiveWasserstein(1.0, delta_z=math.inf)


def test_cpp_errors_are_translated():
    with pytest.raises(ParameterError, match="log_weights"):
        P.WassersteinExponential(1.0, delta_z=1.0, support=[0.0, 1.0]).sample_indices([np.nan, 0.0], 3)


def test_restricted_release_doubles_eps():
    m = P.AdditiveWasserstein(1.0, delta_z=1.0, discrete=True)
    r = P.restrict_to_public(lambda g: m.release(np.array([3]), rng=int(g.integers(2**31))), lambda y: y[0] >= 0, 1.0)
    y = r.release(rng=0)
    assert y[0] >= 0 and r.guarantee.eps >= 2.0
    never = P.RestrictedRelease(lambda g: -1, lambda y: y >= 0, 1.0, max_tries=10)
    with pytest.raises(Exception, match="no output satisfied"):
        never.release(rng=0)


def test_partial_demo_cli(tmp_path, capsys):
    t0 = cpu_seconds()   # ~3 CPU-s (CPU time: a loaded machine stretches the wall time, not this)
    rc = cli.main(["partial-demo", "--out", str(tmp_path), "--replicates", "2", "--steps-per-dim", "100"])
    assert rc == 0
    assert cpu_seconds() - t0 < 60
    for f in ("fig1_case_rates.png", "fig2_relative_error.png", "fig3_contraction.png", "summary.json"):
        assert (tmp_path / f).stat().st_size > 1000 or f == "summary.json"
    out = capsys.readouterr().out
    assert "WEM-c" in out and "PP" in out


def test_case_study_structure():
    from puffer.partial import casestudy as C
    d = C.synthetic_data(J=6, T=3, seed=0)
    st = C.run_case_study(d, (1.0,), 2, steps_per_dim=50, rng=1, quiet=True)
    for (m, _e), r in st["results"].items():
        c, dd = r["cases"], r["deaths"]
        assert c.shape == (2, 3, 6)
        if m != "WEM-a":  # congenial outputs satisfy the public constraints exactly
            assert (c.sum(2) == d.totals()[None]).all() and (c >= dd).all() and (dd >= 0).all()
        assert "Delta_z assumed, not derived" in r["guarantee"].assumptions
    s = C.summaries(st)
    assert set(s["fig3_counties"]) == {"largest", "smallest"}


def test_tp_mechanisms_share_the_interface():
    import puffer
    ms = [P.WassersteinExponential(1.0, delta_z=1.0, support=np.arange(5.0)),
          P.KNormGradient(1.0, 1.0, dim=2), P.AdditiveWasserstein(1.0, delta_z=2.0),
          P.LatticeWEM(1.0, delta_z=2.0)]
    for m in ms:
        d = m.to_dict()
        assert d["mechanism"] == type(m).__name__ and d["refs"] and m.target == {"eps": 1.0}
        assert puffer.guarantee_from_dict(d["guarantee"]) == m.guarantee
