"""Theta fitted from traces (issue 33 items 2 and 3): puffer.models.fit_markov, its record, the
close-adversary statement and the Theta profile.

Coverage tests simulate traces from known per-phase matrices (3 phases, 40 units x 31 records)
and count how often the fitted box holds all six true rows at once. With n = 150 simulations
and a box at level L = 0.9 the count is Binomial(n, coverage); the test fails below the
binomial quantile of false-alarm rate 1e-3 at coverage 0.9 (124). Measured once over 600
simulations (the box is a Bayesian credible set for "dirichlet" and an approximate interval
for "bootstrap", so the frequentist coverage is near, not exactly, 0.9): coverage 0.887
(dirichlet; the test's false-alarm rate there is 0.6 %) and 0.912 (bootstrap, < 0.1 %). Power:
boxes with half-widths 15 % too narrow cover 0.747 / 0.798 and pass with probability 2 % / 29 %;
a Dirichlet box at level 0.75 covers 0.738 and passes 1.2 % of the time."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.stats import binom

import puffer
from puffer.errors import ParameterError
from puffer.models import close_adversary, fit_markov, markov_chain, refit, theta_profile
from puffer.models.fit import FitWarning, MarkovFit
from puffer.models.theta import _data_level, belief_divergence, w_inf_upper

DAY = np.array([[[0.9, 0.1], [0.3, 0.7]], [[0.6, 0.4], [0.2, 0.8]], [[0.8, 0.2], [0.5, 0.5]]])


def simulate(per, units, length, rng, k=2, init=None):
    """States of ``units`` traces of ``length`` records from the periodic chain ``per`` (P, k, k),
    record j at phase j mod P."""
    P = per.shape[0]
    x = np.empty((units, length), dtype=np.int64)
    p0 = np.full(k, 1.0 / k) if init is None else init
    x[:, 0] = rng.choice(k, size=units, p=p0)
    for t in range(1, length):
        cum = np.cumsum(per[(t - 1) % P][x[:, t - 1]], axis=1)
        x[:, t] = (rng.random((units, 1)) > cum[:, :-1]).sum(axis=1)
    return x


def _covered(fw, per):
    f = fw.fit
    return bool(((f.lower[0] <= per) & (per <= f.upper[0])).all())


@pytest.mark.parametrize("method,n_boot", [("dirichlet", 2), ("bootstrap", 150)])
def test_box_covers_the_true_matrices_at_the_stated_level(method, n_boot):
    """The fitted box holds all 3 x 2 true rows at once in >= level of the simulations (false
    alarm 1e-3; the binomial lower quantile at 0.9 of 150 is 124)."""
    rng = np.random.default_rng(2024 if method == "dirichlet" else 7)
    n, level = 150, 0.9
    hits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        for _ in range(n):
            x = simulate(DAY, 40, 31, rng)
            fw = fit_markov(x, T=6, period=3, level=level, method=method, n_boot=n_boot,
                            seed=int(rng.integers(2**31)))
            hits += _covered(fw, DAY)
    lo = binom.ppf(1e-3, n, level)
    assert hits >= lo, (hits, lo)
    # and not absurdly wide: below the upper quantile of a box at 0.995
    assert hits <= binom.isf(1e-3, n, 0.995) + 1


def test_recorded_fit_reproduces_the_framework(tmp_path):
    rng = np.random.default_rng(3)
    x = simulate(DAY, 60, 24, rng)
    d = fit_markov(x, T=12, period=3, method="dirichlet", level=0.8)
    rec = json.loads(json.dumps(d.fit.to_dict()))           # through JSON, as in the ledger
    r = refit(rec)
    assert np.array_equal(r.transitions, d.transitions) and np.array_equal(r.initial_laws, d.initial_laws)
    assert r.fit.digest == d.fit.digest and r.priors == d.priors and r.w_inf().value == d.w_inf().value
    b = fit_markov(x, T=12, period=3, level=0.8, n_boot=50)  # a seed is drawn and recorded
    assert b.fit.seed is not None
    rb = refit(b.fit.to_dict(), x)
    assert np.array_equal(rb.transitions, b.transitions)
    with pytest.raises(ParameterError, match="traces of a bootstrap fit"):
        refit(b.fit.to_dict())
    y = x.copy()
    y[0, 0] = 1 - y[0, 0]
    with pytest.raises(ParameterError, match="digest"):
        refit(b.fit.to_dict(), y)
    assert MarkovFit.from_dict(rec).digest == d.fit.digest


def test_arrays_tables_and_files_give_the_same_fit(tmp_path):
    pd = pytest.importorskip("pandas")
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(4)
    x = simulate(DAY, 20, 12, rng)
    x = np.ma.masked_array(x, mask=np.zeros_like(x, bool))
    x.mask[3, 5] = True                                     # a missing record: two transitions less
    units, orders = np.nonzero(~x.mask)
    df = pd.DataFrame({"house": units, "t": orders, "s": np.asarray(x)[units, orders]})
    a = fit_markov(x, T=6, period=3, method="dirichlet", min_count=0)
    b = fit_markov(df.sample(frac=1, random_state=1), T=6, period=3, method="dirichlet", columns=("house", "t", "s"),
                   min_count=0)
    p = tmp_path / "traces.parquet"
    pq.write_table(pa.Table.from_pandas(df), p)
    c = fit_markov(str(p), T=6, period=3, method="dirichlet", columns=("house", "t", "s"), min_count=0)
    assert a.fit.n_transitions == 20 * 11 - 2
    for f in (b, c):
        assert np.array_equal(f.transitions, a.transitions) and f.fit.digest == a.fit.digest


def test_groups_thin_counts_and_errors():
    rng = np.random.default_rng(5)
    x = simulate(DAY, 30, 12, rng)
    g = np.array(["winter"] * 25 + ["summer"] * 5)
    with pytest.warns(FitWarning, match="summer"):
        fw = fit_markov(x, T=6, period=3, groups=g, method="dirichlet", min_count=15)
    assert len(fw.priors) == 2 * 5 and fw.priors[0] == "summer: estimate"
    assert any("summer" in w for w in fw.fit.warnings) and not any("winter" in w for w in fw.fit.warnings)
    assert fw.fit.counts.shape == (2, 3, 2, 2) and fw.fit.counts.sum() == 30 * 11
    with pytest.raises(ParameterError, match="method"):
        fit_markov(x, T=6, method="mle")
    with pytest.raises(ParameterError, match="level"):
        fit_markov(x, T=6, level=1.0)
    with pytest.raises(ParameterError, match="two units"):
        fit_markov(x[:1], T=6)
    with pytest.raises(ParameterError, match="two distinct states"):
        fit_markov(np.zeros((3, 5)), T=6, method="dirichlet")


def test_box_contains_theta_and_corners_are_extreme():
    """Every prior of Theta lies in the box (on the simplex); for k = 2 the corners are the
    box's corners, and the estimate is the posterior mean."""
    rng = np.random.default_rng(6)
    x = simulate(DAY, 50, 20, rng)
    fw = fit_markov(x, T=6, period=3, method="dirichlet")
    f = fw.fit
    M = fw.transitions
    assert ((M >= f.lower[0] - 1e-15) & (M <= f.upper[0] + 1e-15)).all()
    np.testing.assert_allclose(M.sum(axis=-1), 1.0, atol=1e-15)
    a = f.counts[0] + 0.5
    np.testing.assert_allclose(M[0], a / a.sum(axis=-1, keepdims=True), rtol=1e-15)
    stay = M[fw.priors.index("stay")]
    np.testing.assert_allclose(stay[:, 0, 0], f.upper[0][:, 0, 0], rtol=1e-15)
    np.testing.assert_allclose(stay[:, 1, 1], f.upper[0][:, 1, 1], rtol=1e-15)


def test_w_inf_upper_is_the_exact_w_inf():
    """The certified W_inf of two laws of different priors equals the exact quantile-coupling
    value (Fractions) on random laws, and never falls below it."""
    from fractions import Fraction

    from test_markov_scale import exact_w_inf

    rng = np.random.default_rng(8)
    for _ in range(200):
        n, m = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        xp = np.sort(rng.choice(12, n, replace=False)).astype(float)
        xq = np.sort(rng.choice(12, m, replace=False)).astype(float)
        p, q = rng.random(n) + 1e-3, rng.random(m) + 1e-3
        if rng.random() < 0.3:
            q = np.concatenate([p, np.zeros(max(0, m - n))])[:m] if m >= n else q    # ties possible
            xq = xp[:m] if m <= n else xq
        want = exact_w_inf({int(a): int(Fraction(v) * 2**60) for a, v in zip(xp, p)},
                           {int(a): int(Fraction(v) * 2**60) for a, v in zip(xq, q) if v > 0})
        got = w_inf_upper(xp, np.log(p), xq[q > 0], np.log(q[q > 0]))
        assert got >= want
        assert got == want or abs(got - want) <= 12      # only on exact ties (levels within 1e-9)


def test_close_adversary_statement():
    """eps for a belief = eps + 2 Delta / b (Laplace); a belief in Theta has Delta = 0; the
    data-level bound (Thm A.3) holds for a belief: the exact D_inf between the path laws given
    each secret (enumerated, T = 6) is below it."""
    import itertools

    rng = np.random.default_rng(9)
    x = simulate(DAY, 80, 25, rng)
    fw = fit_markov(x, T=6, period=3, method="dirichlet", level=0.9)
    m = puffer.mechanisms.Wasserstein(fw, eps=1.0)
    ca = close_adversary(fw, m, n=3, corners=3, seed=1)
    b = m.noise.scale
    for d, e in zip(ca.divergence, ca.eps_beliefs):
        assert e == pytest.approx(1.0 + 2 * d / b, rel=1e-12) and e >= 1.0 + 2 * d / b
    assert ca.eps_sampled == max(ca.eps_beliefs) and ca.guarantee.eps == ca.eps_sampled
    own = close_adversary(fw, m, beliefs=fw.transitions[1:3])
    assert own.divergence == (0.0, 0.0) and own.eps_sampled == pytest.approx(1.0)
    assert belief_divergence(fw, fw.transitions[2]) == (0.0, fw.priors[2])
    # the data-level D_inf bound against the exact D_inf of one sampled belief
    from puffer.models.theta import sample_beliefs

    B = sample_beliefs(fw, 1, 1, seed=3)
    T, P = 6, 3
    worst = 0.0
    for Mb in B:
        bf = markov_chain(Mb, T, period=P)
        est, pe = fw.transitions[0], fw.initial_laws[0]

        def path_p(M, p0, xs):
            return p0[xs[0]] * np.prod([M[t % P][xs[t], xs[t + 1]] for t in range(T - 1)])

        paths = list(itertools.product(range(2), repeat=T))
        for t in range(T):
            for a in range(2):
                sel = [xs for xs in paths if xs[t] == a]
                pb = np.array([path_p(bf.transitions[0], bf.initial_laws[0], xs) for xs in sel])
                pt = np.array([path_p(est, pe, xs) for xs in sel])
                r = np.log(pb / pb.sum()) - np.log(pt / pt.sum())
                worst = max(worst, float(np.abs(r).max()))
    assert worst <= _data_level(fw) == ca.data_divergence
    assert ca.eps_box == pytest.approx(1.0 + 2 * ca.data_divergence)
    with pytest.raises(ParameterError, match="Laplace"):
        close_adversary(fw, puffer.mechanisms.GeneralWasserstein(fw, puffer.noise.Gaussian, alpha=2.0, eps=1.0))
    with pytest.raises(ParameterError, match="fit_markov"):
        g = markov_chain(DAY, T=6, period=3)
        close_adversary(g, puffer.mechanisms.Wasserstein(g, eps=1.0))
    assert "Thm A.5" in ca.summary()


def test_theta_profile_and_its_plot():
    rng = np.random.default_rng(10)
    x = simulate(DAY, 60, 25, rng)
    pr = theta_profile(x, T=8, period=3, method="dirichlet", levels=(0.5, 0.99))
    assert pr.levels == (0.5, 0.99) and pr.group == 8.0
    assert all(pr.estimate <= d <= pr.group for d in pr.delta_g)       # Theta holds the estimate
    assert "level" in pr.summary()
    fig = pr.plot()
    assert fig.axes[0].get_xlabel().startswith("level")
    with pytest.raises(ParameterError, match="levels"):
        theta_profile(x, T=8, level=0.9)


def test_framework_file_fit_markov_and_ledger(tmp_path):
    """[model] kind = "fit_markov" in a framework file: puffer run prints the fit; a release made
    with it stores the fit in its ledger entry."""
    pd = pytest.importorskip("pandas")
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(11)
    x = simulate(DAY, 30, 13, rng)
    u, t = np.nonzero(np.ones_like(x, bool))
    pq.write_table(pa.Table.from_pandas(pd.DataFrame({"unit": u, "order": t, "state": x[u, t]})),
                   tmp_path / "traces.parquet")
    (tmp_path / "fw.toml").write_text('name = "fitted"\n[model]\nkind = "fit_markov"\ndata = "traces.parquet"\n'
                                      'T = 6\nperiod = 3\nmethod = "dirichlet"\nlevel = 0.9\n[target]\neps = 1.0\n')
    r = subprocess.run([sys.executable, "-m", "puffer", "run", str(tmp_path / "fw.toml")], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Theta fitted from traces (dirichlet, level 0.9 (posterior probability), period 3)" in r.stdout
    from puffer.config import build_framework, load_config

    fw = build_framework(load_config(tmp_path / "fw.toml")["model"])
    assert fw.fit.level == 0.9 and fw.fit.n_units == 30
    # a release of the per-unit sums with the fitted framework: the ledger entry has the fit
    rec = pd.DataFrame({"unit": u, "order": t, "state": x[u, t].astype(float)})
    rec = rec[rec.order < 6]
    pq.write_table(pa.Table.from_pandas(rec), tmp_path / "week.parquet")
    puffer.io.keygen(tmp_path / "k.key")
    with pytest.raises(ParameterError, match="allow_fit_on_release"):   # the fit's units are released
        puffer.io.noise_file(tmp_path / "week.parquet", tmp_path / "out.parquet", ["state"],
                             puffer.mechanisms.Wasserstein(fw, eps=1.0), key=tmp_path / "k.key", unit="unit",
                             order="order")
    e = puffer.io.noise_file(tmp_path / "week.parquet", tmp_path / "out.parquet", ["state"],
                             puffer.mechanisms.Wasserstein(fw, eps=1.0), key=tmp_path / "k.key", unit="unit",
                             order="order", allow_fit_on_release=True)
    assert e["fit_on_release"] == {"private": False, "shared_units": 30, "allowed": True}
    cmd = [sys.executable, "-m", "puffer", "noise", "week.parquet", "out2.parquet", "--column", "state", "--mechanism",
           "fw.toml", "--key", "k.key", "--unit", "unit", "--order", "order", "--ledger", "l2.jsonl"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode != 0 and "allow_fit_on_release" in r.stderr, r.stderr
    r = subprocess.run(cmd + ["--allow-fit-on-release"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert e["fit"]["method"] == "dirichlet" and e["fit"]["digest"] == fw.fit.digest
    assert np.array_equal(refit(e["fit"], tmp_path / "traces.parquet").transitions, fw.transitions)
    # the exact counts are not in the ledger (issue 38 §8): a keyed digest of them is
    assert "counts" not in e["fit"] and e["fit"]["counts_digest"].startswith("hmac-sha256:")
    with pytest.raises(ParameterError, match="traces"):
        refit(e["fit"])
    bad = tmp_path / "bad.toml"
    bad.write_text('[model]\nkind = "fit_markov"\ndata = "x.txt"\nT = 6\n[target]\neps = 1.0\n')
    with pytest.raises(ParameterError, match="model.data"):
        load_config(bad)
    assert math.isfinite(fw.w_inf().value)

