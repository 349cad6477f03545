"""The least noise by default (issue 32): puffer.mechanisms.best, `puffer run`'s chosen row and the
mechanism `puffer noise --mechanism FILE` publishes with. Oracle: the variance of each row's noise
from its closed form (Laplace 2 b^2, Gaussian sigma^2), independent of the loss code."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import puffer
from puffer import cli
from puffer.mechanisms import best

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
README_FW = puffer.models.markov_chain([[[.9, .1], [.2, .8]], [[.8, .2], [.1, .9]], [[.7, .3], [.3, .7]]], T=48)


def _variance(noise):
    if noise is None:
        return 0.0
    kind = type(noise).__name__
    return {"Laplace": lambda: 2 * noise.b ** 2, "Gaussian": lambda: noise.sigma ** 2}[kind]()


def _check_least(sel):
    applicable = [r for r in sel.rows if r.status in ("chosen", "lost")]
    assert applicable and sum(r.status == "chosen" for r in sel.rows) == 1
    oracle = min(_variance(r.mechanism.noise) for r in applicable)
    assert sel.loss == pytest.approx(oracle, rel=1e-12)
    assert _variance(sel.mechanism.noise) == pytest.approx(oracle, rel=1e-12)
    for r in sel.rows:
        assert r.reason, r


def _tutorial_framework():
    """The household tutorial's fitted Theta (docs/tutorials/household.md, section 1)."""
    import numpy as np

    rng = np.random.default_rng(7)
    true = {"commuter": np.array([[.92, .08], [.15, .85]]), "homebody": np.array([[.80, .20], [.05, .95]])}

    def simulate(P, n, T=48):
        x = np.zeros((n, T), dtype=int)
        x[:, 0] = rng.random(n) < P[0, 1] / (P[0, 1] + P[1, 0])
        for t in range(1, T):
            x[:, t] = rng.random(n) < P[x[:, t - 1], 1]
        return x

    def fit(x):
        a, b = x[:, :-1].ravel(), x[:, 1:].ravel()
        c = np.array([[np.sum((a == i) & (b == j)) for j in (0, 1)] for i in (0, 1)], dtype=float)
        return (c / c.sum(axis=1, keepdims=True)).round(3)

    theta = []
    for x in (simulate(P, 150) for P in true.values()):
        theta.append(fit(x))
        for _ in range(2):
            theta.append(fit(x[rng.integers(0, len(x), len(x))]))
    return puffer.models.markov_chain([(M / M.sum(axis=1, keepdims=True)).tolist() for M in theta], T=48)


def test_readme_framework_least_noise_is_not_the_first_row():
    """The README's framework at (1, 1e-5): Kantorovich Thm 2's Laplace(6.073) (variance 73.8), not
    the first row's Laplace(7) (98) -- what `puffer noise` published with before issue 32."""
    sel = best(README_FW, eps=1.0, delta=1e-5)
    _check_least(sel)
    assert sel.label == "Kantorovich Thm 2 (Laplace)" and sel.rows[0].label == "Wasserstein (Laplace)"
    assert sel.rows[0].status == "lost" and sel.mechanism.noise.b == pytest.approx(6.072739905, rel=1e-8)
    # the Gaussian rows are the exact profile: GWM at the analytic sigma 26.11, DAGWM below it
    gwm = next(r for r in sel.rows if r.label.startswith("GWM Gaussian, PP"))
    assert gwm.mechanism.noise.sigma == pytest.approx(26.1144214437, rel=1e-9)
    assert "1-PP" not in repr(sel) and "\n" not in repr(sel) and "(1, 1e-05)-PP" in repr(sel)


def test_tutorial_framework_and_targets():
    fw = _tutorial_framework()
    sel = best(fw, eps=1.0)                                          # pure eps: Kantorovich beats W_inf
    _check_least(sel)
    assert sel.label == "Kantorovich Thm 2 (Laplace)" and sel.mechanism.noise.b < 9.0
    rpp = best(puffer.models.correlated_pair(), eps=1.0, alpha=2.0)  # an RPP target: the Renyi rows compete
    _check_least(rpp)
    assert "RPP" in rpp.label
    na = {r.label: r.reason for r in best(puffer.models.correlated_pair(), eps=1.0, delta=1e-5).rows
          if r.status == "n/a"}
    assert na == {}                                                   # every (eps, delta) row applies here


def test_loss_choices_and_errors():
    fw = puffer.models.correlated_pair()
    by_abs = best(fw, eps=1.0, delta=1e-5, loss="abs")
    _check_least(best(fw, eps=1.0, delta=1e-5))
    assert by_abs.loss_name == "abs" and by_abs.loss == pytest.approx(by_abs.mechanism.noise.b, rel=1e-9)
    # a callable loss: the 95 % quantile of |noise| picks the Laplace row too; a loss that prefers
    # Gaussian noise picks a Gaussian row
    q = best(fw, eps=1.0, delta=1e-5, loss=lambda n: float(n.ppf(0.975)))
    assert q.loss_name == "<lambda>" and type(q.mechanism.noise).__name__ == "Laplace"
    g = best(fw, eps=1.0, delta=1e-5, loss=lambda n: 0.0 if type(n).__name__ == "Gaussian" else 1.0)
    assert type(g.mechanism.noise).__name__ == "Gaussian"
    with pytest.raises(puffer.ParameterError, match="'alpha'"):
        best(fw, eps=1.0, delta=1e-5, alpha=2.0)
    with pytest.raises(puffer.ParameterError, match="'loss'"):
        best(fw, eps=1.0, loss="mse")
    with pytest.raises(puffer.ParameterError, match="'loss'"):
        best(fw, eps=1.0, loss=lambda n: -1.0)
    with pytest.raises(puffer.ParameterTypeError, match="'framework'"):
        best("fw", eps=1.0)


@pytest.mark.parametrize("name", ["household.toml", "adult.json"])
def test_cli_marks_and_releases_with_the_least_noise_row(name, capsys):
    """`puffer run --json`: the chosen row is the least variance among those that give the file's
    target, the release uses it (not the first row, as before issue 32)."""
    assert cli.main(["run", str(EXAMPLES / name), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["label"]: r for r in doc["rows"]}
    ok = [r for r in doc["rows"] if r["selection"]["status"] in ("chosen", "lost")]
    var = {r["label"]: (2 * r["noise"]["b"] ** 2 if r["noise"]["family"] == "Laplace" else r["noise"]["sigma"] ** 2)
           for r in ok}
    least = min(var, key=var.get)
    assert doc["chosen"] == least == "Kantorovich Thm 2 (Laplace)" != doc["rows"][0]["label"]
    assert rows[least]["selection"]["status"] == "chosen"
    assert all(r["selection"]["status"] == "n/a" for r in doc["rows"] if "RPP" in r["label"])
    assert math.isfinite(var[least])
