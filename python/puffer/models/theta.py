"""What a fitted Theta's guarantee rests on: close adversaries and Delta_G against the fit's box.

What a fitted Theta's guarantee rests on: adversaries close to Theta, and Delta_G against the
fit's level.

* :func:`close_adversary` -- the guarantee of a calibrated additive mechanism against an
  adversary whose belief theta' lies in the fit's credible box but not in Theta (Pierquin et
  al. 2024, App. A.4): the divergence Delta_theta' = inf_theta sup_s W_inf(P(S | s, theta'),
  P(S | s, theta)) between the query laws (an upper bound, computed from the chain's exact
  laws), and the eps it leaves:

  - Laplace noise of scale b with eps-PP on Theta: (eps + 2 Delta_theta' / b)-PP on Theta u
    {theta'} (Thm A.5 as alpha -> infinity: R_beta(Lap(b), z) <= z / b at every order, and
    D_inf = lim D_alpha; directly: a W_inf shift z moves a Laplace density by at most e^(z/b));
  - any belief in the box at once, by the data-level divergence of Thm A.3 (Song et al. 2017,
    Thm A.3): D_inf(P(X | s, theta') || P(X | s, theta_hat)) <= the sum over the steps of the
    spread of log theta'(x, y) / theta_hat(x, y) over the box, plus that of the initial law.
    Rigorous for the whole box, but it grows with T (each step adds its spread).

  The sampled beliefs are draws from the rows' posteriors kept inside the box, and random
  corners of the box (every phase and row pushed to a random extreme): the statement is about
  those beliefs, which is what the report says; the box-wide statement is the data-level one.
* :func:`theta_profile` -- Delta_G of the fitted framework at several levels (e.g. 50-99 %),
  with the point estimate's and group DP's for reference, and a plot
  (:func:`puffer.plot.theta_profile`): how much of the gain over group DP depends on Theta.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import PP, Provenance, round_up
from ..refs import Ref

if TYPE_CHECKING:
    from . import MarkovChainFramework

__all__ = ["close_adversary", "CloseAdversary", "theta_profile", "ThetaProfile", "belief_divergence",
           "sample_beliefs"]

# Relative error allowed for a cumulative level of the core's laws: the masses carry ~(2 T + R)
# ulps (cpp/models/markov.hpp), the log-space sums here a few more; 1e-9 is far above both, so
# a level comparison certified with it holds for the exact levels.
_MARGIN = 1e-9


@dataclass(frozen=True)
class _Levels:
    """Cumulative levels of laws on one integer grid, one law per row: log F (mass <= s) and
    log S (mass > s), normalised, and each row's smallest and largest atom (grid indices; a row
    whose secret is impossible has lo > hi)."""

    F: np.ndarray
    S: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def _levels(rows: np.ndarray) -> _Levels:
    """Levels of the laws whose natural-log masses are the rows of ``rows`` (-inf: no mass)."""
    with np.errstate(invalid="ignore"):
        tot = np.logaddexp.reduce(rows, axis=1)
        F = np.logaddexp.accumulate(rows, axis=1) - tot[:, None]
        rev = np.logaddexp.accumulate(rows[:, ::-1], axis=1)[:, ::-1] - tot[:, None]    # mass >= s
    S = np.full(rows.shape, -np.inf)
    S[:, :-1] = rev[:, 1:]
    has = np.isfinite(rows)
    n = rows.shape[1]
    lo = np.where(has.any(axis=1), has.argmax(axis=1), n)
    hi = np.where(has.any(axis=1), n - 1 - has[:, ::-1].argmax(axis=1), -1)
    return _Levels(F, S, lo, hi)


def _holds(Q: _Levels, P: _Levels, z: int, margin: float = _MARGIN) -> bool:
    """Whether F_Q(s) <= F_P(s + z) at every s of every row, each comparison certified: F_P(s +
    z) = 1 exactly (s + z >= P's largest atom), or the float levels differ by more than the
    margin in log F or in log S (a level closer than the margin counts as not holding, so the
    least such z is an upper bound of the exact one)."""
    n = Q.F.shape[1]
    if (Q.hi + z < P.hi).any():                   # F_Q = 1 from Q's top atom on: F_P must be 1
        return False
    if z >= n:
        return True
    s = np.arange(n - z)                          # s + z < n; beyond, F_P = 1
    inside = (s[None, :] >= Q.lo[:, None]) & (s[None, :] < Q.hi[:, None]) & (s[None, :] + z < P.hi[:, None])
    with np.errstate(invalid="ignore"):
        ok = (P.F[:, z:] - Q.F[:, :n - z] > margin) | (Q.S[:, :n - z] - P.S[:, z:] > margin)
    return bool((ok | ~inside).all())


def _rows(L: _Levels, rows: np.ndarray) -> _Levels:
    return _Levels(L.F[rows], L.S[rows], L.lo[rows], L.hi[rows])


def _w_inf_rows(P: _Levels, Q: _Levels, below: float = math.inf, margin: float = _MARGIN) -> float:
    """max over the rows of the certified W_inf (grid steps) between the laws of P and Q (an
    upper bound: exact unless two levels are within the margin); stops as soon as it is known
    to be >= ``below`` (returns ``below`` then). With ``margin`` = 2 delta + 1e-9 it bounds
    W_inf between any laws whose levels are within a factor e^delta of these (log F and log S
    both)."""
    n = P.F.shape[1]

    def fits(z: int) -> bool:
        return _holds(Q, P, z, margin) and _holds(P, Q, z, margin)

    if below <= 0:
        return below
    if math.isfinite(below) and below <= n and not fits(int(below) - 1):
        return below
    lo, hi = 0, n                               # fits(n) is true: every level is reached
    if math.isfinite(below):
        hi = min(hi, int(below) - 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return float(lo)


def w_inf_upper(atoms_p: np.ndarray, logm_p: np.ndarray, atoms_q: np.ndarray, logm_q: np.ndarray) -> int:
    """An upper bound of W_inf between two laws on the integer grid (natural-log masses, not
    necessarily normalised): the exact value unless two levels are closer than 1e-9 relative."""
    g0 = int(min(atoms_p.min(), atoms_q.min()))
    n = int(max(atoms_p.max(), atoms_q.max())) - g0 + 1
    rows = np.full((2, n), -np.inf)
    rows[0, np.asarray(atoms_p, dtype=np.int64) - g0] = logm_p
    rows[1, np.asarray(atoms_q, dtype=np.int64) - g0] = logm_q
    L = _levels(rows)
    return int(_w_inf_rows(_rows(L, np.array([0])), _rows(L, np.array([1]))))


def _dense_laws(fw: MarkovChainFramework, M: np.ndarray, pi: np.ndarray) -> list[_Levels]:
    """Per prior of (M, pi): the levels of the laws of S given X_t = a, one row per (t, a)
    (row t k + a), on the framework's integer grid."""
    from .. import _core

    T, k = fw.length, len(fw.state_names)
    A, Pr, O, S, L = _core.models.markov_sum_laws(np.ascontiguousarray(M), np.ascontiguousarray(pi), fw._vals, T,
                                                  fw._threads)
    span = int(fw._vals.max() - fw._vals.min())
    g0, n = T * int(fw._vals.min()), T * span + 1
    lens = np.diff(O)
    logm = np.where(np.repeat(L, lens), Pr, np.log(np.where(np.repeat(L, lens), 1.0, Pr)))
    out = []
    for j in range(M.shape[0]):                 # the CSR is prior-major: prior j's laws are contiguous
        a, b = int(O[j * T * k]), int(O[(j + 1) * T * k])
        rows = np.full((T * k, n), -np.inf)
        rows[np.repeat(np.arange(T * k), lens[j * T * k:(j + 1) * T * k]), A[a:b].astype(np.int64) - g0] = logm[a:b]
        out.append(_levels(rows))
    return out


def belief_divergence(fw: MarkovChainFramework, belief: Any, *, init: Any = "stationary") -> tuple[float, Any]:
    """Delta_theta' = min over the priors theta of ``fw`` of max over positions t and states a
    of W_inf(P(S | X_t = a, theta'), P(S | X_t = a, theta)) (an upper bound, in the units of the
    values), and the prior that attains it. ``belief``: matrices shaped like one prior of
    ``fw.transitions``; ``init`` its initial law ("stationary": as the framework's)."""
    from . import markov_chain

    B = V.float_array("belief", belief, ndim=(2, 3))
    shape = fw.transitions.shape[1:]
    if B.shape != shape:
        raise ParameterError("belief", f"shape {B.shape}", f"one prior's matrices, shape {shape}")
    # (k, k): homogeneous; (P, k, k) with the framework's period; (T - 1, k, k): a matrix per step
    b = markov_chain(B[None] if B.ndim == 3 and fw.period is None else B, fw.length, init=init,
                     values=fw.state_values, period=fw.period)
    d = _divergences(fw, b.transitions, b.initial_laws)
    j = int(np.argmin(d[0]))
    return float(d[0][j]), fw.priors[j]


def _divergences(fw: MarkovChainFramework, Mb: np.ndarray, pib: np.ndarray) -> np.ndarray:
    """(beliefs, priors) table: max over (t, a) of W_inf (upper bounds, value units; inf where a
    secret possible under the belief is impossible under the prior). Per belief only the least
    entry is exact: an entry known to be >= the least found so far is reported as that bound
    (branch and bound; the minimum and its prior are those of the full table)."""
    M = np.concatenate([Mb, fw.transitions], axis=0)
    pi = np.concatenate([pib, fw.initial_laws], axis=0)
    lv = _dense_laws(fw, M, pi)
    nb, n = Mb.shape[0], len(fw.priors)
    out = np.full((nb, n), math.inf)
    for i in range(nb):
        best = math.inf
        rows = np.flatnonzero(lv[i].lo <= lv[i].hi)        # secrets possible under the belief
        B = _rows(lv[i], rows)
        for j in range(n):
            if np.array_equal(M[i], M[nb + j]) and np.array_equal(pi[i], pi[nb + j]):
                out[i, j] = best = 0.0                     # the same model: equal laws, W_inf = 0
                continue
            P = _rows(lv[nb + j], rows)
            if (P.lo > P.hi).any():
                continue                                   # a secret impossible under theta: inf
            w = _w_inf_rows(B, P, best)
            out[i, j] = w
            best = min(best, w)
    return np.vectorize(fw._to_units)(out) if not fw._identity_grid else out


def sample_beliefs(fw: MarkovChainFramework, n: int = 8, corners: int = 8, *, seed: int | None = None) -> np.ndarray:
    """Beliefs in the fit's credible box: ``n`` draws from the rows' posteriors Dir(counts +
    prior) kept inside the box (a row outside is redrawn, up to 50 times, then taken at a
    random corner), and ``corners`` random corners (each group's phases and rows pushed to a
    random extreme of the box). Shape ``(n + corners, *fw.transitions.shape[1:])``."""
    from .fit import _corner

    fit = _fit_of(fw)
    rng = np.random.default_rng(seed)
    est, lo, hi = fit.estimate, fit.lower, fit.upper
    G, P, k, _ = est.shape
    a = np.maximum(fit.counts, 0.0) + fit.prior       # (a private fit's noised counts may be < 0)
    out = []
    for i in range(n + corners):
        g = int(rng.integers(G))
        if i < n:
            M = np.empty((P, k, k))
            for p in range(P):
                for x in range(k):
                    for _ in range(50):
                        r = rng.dirichlet(a[g, p, x])
                        if (r >= lo[g, p, x]).all() and (r <= hi[g, p, x]).all():
                            break
                    else:
                        r = _corner(est[g, p, x], lo[g, p, x], hi[g, p, x], np.array(rng.integers(k)))
                    M[p, x] = r
        else:
            M = _corner(est[g], lo[g], hi[g], rng.integers(k, size=(P, k)))
        out.append(M if fit.period is not None else M[0])
    return np.stack(out)


def _fit_of(fw: Any) -> Any:
    from . import MarkovChainFramework

    if not isinstance(fw, MarkovChainFramework):
        raise ParameterTypeError("fw", fw, "a MarkovChainFramework from puffer.models.fit_markov")
    if fw.fit is None:
        raise ParameterError("fw", fw.name, "a framework fitted by puffer.models.fit_markov (its credible box)")
    if np.isnan(fw.fit.lower).any():
        raise ParameterError("fw", fw.name, "a fitted framework with its box (rebuild a record with refit())")
    return fw.fit


def _data_level(fw: MarkovChainFramework) -> float:
    """Thm A.3's divergence over the whole box, with theta = the point estimate (in Theta): the
    sum over steps of max - min of log(theta' / theta_hat) over the box's entries, plus the
    spread of the initial law's log-ratio (a stationary law pi' = pi' Q' of a period's product
    Q' lies in [min_u Qlo(u, x), max_u Qhi(u, x)], Qlo / Qhi the products of the lower / upper
    bounds), rounded up. Per group (the box of the belief's group), the largest."""
    fit = _fit_of(fw)
    est, lo, hi = fit.estimate, fit.lower, fit.upper
    G, P = est.shape[0], est.shape[1]
    T = fw.length
    worst = 0.0
    with np.errstate(divide="ignore"):
        for g in range(G):
            up = np.log(hi[g]) - np.log(est[g])
            dn = np.log(lo[g]) - np.log(est[g])
            spread = up.reshape(P, -1).max(axis=1) - dn.reshape(P, -1).min(axis=1)
            steps = np.arange(T - 1) % P
            total = float(spread[steps].sum())
            if isinstance(fit.init, str):
                Qlo, Qhi = lo[g][0].copy(), hi[g][0].copy()
                for p in range(1, P):
                    Qlo, Qhi = Qlo @ lo[g][p], Qhi @ hi[g][p]
                pi_hat = fw.initial_laws[fit.priors.index(_est_label(fit, g))]
                l0 = np.log(Qlo.min(axis=0)) - np.log(pi_hat)
                h0 = np.log(np.minimum(Qhi.max(axis=0), 1.0)) - np.log(pi_hat)
                total += float(h0.max() - l0.min())
            worst = max(worst, total)
    return round_up(worst * (1 + 1e-12) + 1e-12)


def _est_label(fit: Any, g: int) -> str:
    return "estimate" if len(fit.groups) == 1 else f"{fit.groups[g]}: estimate"


@dataclass(frozen=True)
class CloseAdversary:
    """The close-adversary statement of a calibrated mechanism on a fitted framework.

    ``divergence[i]``: Delta_theta' of sampled belief i (W_inf, value units, an upper bound)
    and ``nearest[i]`` the prior of Theta attaining it; ``eps_beliefs[i]``: the PP eps against
    that belief (eps + 2 Delta / b); ``eps_sampled`` their largest; ``data_divergence`` and
    ``eps_box``: Thm A.3 over the whole box (every belief in it at once); ``guarantee``: the
    PP of ``eps_sampled`` with its provenance."""

    eps: float
    scale: float
    divergence: tuple[float, ...]
    nearest: tuple[Any, ...]
    eps_beliefs: tuple[float, ...]
    eps_sampled: float
    data_divergence: float
    eps_box: float
    n_sampled: int
    n_corners: int
    level: float
    guarantee: PP

    refs = (Ref("pierquin2024", "Thm A.5"), Ref("pierquin2024", "Thm A.3"), Ref("song2017", "Thm A.3"))

    def summary(self) -> str:
        return (f"Close adversaries (Pierquin et al. 2024, App. A.4), Theta fitted at level {self.level:g}:\n"
                f"  the mechanism: eps = {self.eps:.4g} on Theta (Laplace b = {self.scale:.4g})\n"
                + "".join(f"  {what}: W_inf divergence to Theta up to {max(d):.4g} -> eps <= {max(e):.4g} for "
                          "adversaries holding any of them (Thm A.5)\n"
                          for what, d, e in ((f"{self.n_sampled} posterior draws in the box",
                                              self.divergence[:self.n_sampled], self.eps_beliefs[:self.n_sampled]),
                                             (f"{self.n_corners} random corners of the box",
                                              self.divergence[self.n_sampled:], self.eps_beliefs[self.n_sampled:]))
                          if d) +
                f"  every belief in the box at once (data-level, Thm A.3): divergence <= {self.data_divergence:.4g} "
                f"-> eps <= {self.eps_box:.4g}")

    def to_dict(self) -> dict[str, Any]:
        return {"eps": self.eps, "scale": self.scale, "divergence": list(self.divergence),
                "eps_sampled": self.eps_sampled, "data_divergence": self.data_divergence, "eps_box": self.eps_box,
                "n_sampled": self.n_sampled, "n_corners": self.n_corners, "level": self.level}


def close_adversary(fw: MarkovChainFramework, mechanism: Any, *, beliefs: Any = None, n: int = 8, corners: int = 8,
                    seed: int | None = None) -> CloseAdversary:
    """The guarantee of ``mechanism`` (calibrated on the fitted ``fw``, Laplace noise, pure PP)
    against adversaries whose beliefs lie in the fit's credible box (see the module docstring).

    ``beliefs``: matrices to assess (shape ``(m, *fw.transitions.shape[1:])``); default
    :func:`sample_beliefs` (``n`` posterior draws and ``corners`` random corners, ``seed``).
    """
    from ..noise import Laplace

    fit = _fit_of(fw)
    if getattr(mechanism, "framework", None) is not fw:
        raise ParameterError("mechanism", repr(mechanism), "a mechanism calibrated on this framework")
    noise = getattr(mechanism, "noise", None)
    g = getattr(mechanism, "guarantee", None)
    if not isinstance(noise, Laplace) or not isinstance(g, PP) or g.delta != 0.0:
        raise ParameterError("mechanism", repr(mechanism), "additive Laplace noise with a pure PP guarantee "
                             "(e.g. Wasserstein); for other noise use belief_divergence() with "
                             "puffer.mechanisms.close_adversary_additive")
    b, eps = float(noise.scale), float(g.eps)
    if beliefs is None:
        Bs = sample_beliefs(fw, V.integer("n", n, lo=0), V.integer("corners", corners, lo=0), seed=seed)
        ns, nc = n, corners
    else:
        Bs = V.float_array("beliefs", beliefs, ndim=(3, 4))
        if Bs.shape[1:] != fw.transitions.shape[1:]:
            raise ParameterError("beliefs", f"shape {Bs.shape}", f"(m, {', '.join(map(str, fw.transitions.shape[1:]))})")
        ns, nc = Bs.shape[0], 0
    if Bs.shape[0] == 0:
        raise ParameterError("n", n, "at least one belief (n + corners >= 1)")
    from . import markov_chain

    bf = markov_chain(Bs, fw.length, init=fit.init, values=fw.state_values, period=fw.period)
    D = _divergences(fw, bf.transitions, bf.initial_laws)
    j = D.argmin(axis=1)
    div = tuple(float(D[i, j[i]]) for i in range(D.shape[0]))
    near = tuple(fw.priors[int(x)] for x in j)
    eb = tuple(round_up(eps + 2.0 * d / b) if math.isfinite(d) else math.inf for d in div)
    dd = _data_level(fw)
    ebox = round_up(eps + 2.0 * dd)
    es = max(eb)
    prov = Provenance(theorem="Pierquin et al. 2024, Thm A.5 (close adversary, Laplace noise, alpha -> infinity): "
                              f"eps + 2 W_inf(theta', Theta) / b over {len(div)} beliefs in the fitted box")
    return CloseAdversary(eps, b, div, near, eb, es, dd, ebox, ns, nc, fit.level, PP(es, 0.0, prov))


@dataclass(frozen=True)
class ThetaProfile:
    """Delta_G of the framework fitted at each level, the point estimate's Delta_G (Theta = the
    estimate alone) and the group-DP sensitivity (the whole chain as one group)."""

    levels: tuple[float, ...]
    delta_g: tuple[float, ...]
    estimate: float
    group: float
    T: int

    def summary(self) -> str:
        rows = [f"  level {_percent(lv):>6}: Delta_G = {d:g} (gain over group DP {self.group / d:.3g}x)"
                for lv, d in zip(self.levels, self.delta_g)]
        return "\n".join([f"Theta profile (T = {self.T}; group DP {self.group:g}; point estimate alone "
                          f"{self.estimate:g}):"] + rows)

    def plot(self, ax: Any = None, *, title: str | None = None) -> Any:
        """Delta_G against the level (a matplotlib Figure, or drawn on ``ax``), with the point
        estimate's Delta_G and group DP's sensitivity as horizontal references (log scale: the gain
        over group DP is the gap). Also :func:`puffer.plot.theta_profile`."""
        from .._mpl import _fig_ax

        fig, ax = _fig_ax(ax, (5.6, 3.8))
        x = np.asarray(self.levels, float) * 100
        ax.plot(x, self.delta_g, marker="o", label="Delta_G, Theta fitted at this level")
        ax.axhline(self.estimate, color="tab:green", ls=":", lw=1, label="Delta_G, point estimate alone")
        ax.axhline(self.group, color="grey", ls="--", lw=1, label="group DP (the whole chain)")
        ax.set_yscale("log")
        # plain numbers on the log axis (matplotlib's default labels a short range "6x10^0")
        from matplotlib.ticker import FuncFormatter

        plain = FuncFormatter(lambda y, _: f"{y:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.set_xlabel("level of the fitted Theta (%)")
        ax.set_ylabel("sensitivity (noise scale x eps)")
        ax.set_title(title or f"how Delta_G depends on Theta (T = {self.T})")
        ax.legend(fontsize=7)
        return fig


def _percent(level: float) -> str:
    """``level`` as a percentage with the digits it needs (0.999: "99.9%", never "100%")."""
    for digits in range(10):   # the fewest decimals that do not round a level in (0, 1) to 0 % or 100 %
        text = f"{100 * level:.{digits}f}"
        if 0.0 < float(text) < 100.0:
            return (text.rstrip("0").rstrip(".") if "." in text else text) + "%"
    return f"{100 * level:g}%"


def theta_profile(traces: Any, *, levels: Sequence[float] = (0.5, 0.8, 0.9, 0.95, 0.99), **fit: Any) -> ThetaProfile:
    """Delta_G of :func:`fit_markov` ``(traces, level=lv, **fit)`` for each level (a bootstrap
    fit reuses one seed, so the levels differ only by the box), of the point estimate alone,
    and group DP's sensitivity."""
    from . import markov_chain
    from .fit import fit_markov

    lv = [V.real("levels", x, lo=0.0, hi=1.0, lo_open=True, hi_open=True) for x in levels]
    if not lv:
        raise ParameterError("levels", levels, "at least one level")
    if "level" in fit:
        raise ParameterError("level", fit["level"], "no single level: theta_profile takes levels=")
    if fit.get("private") is not None:
        raise ParameterError("private", fit["private"], "None: each level would be a new private fit, a new "
                             "release of the traces (fit once with private= and compare levels with refit)")
    if fit.get("method", "bootstrap") == "bootstrap" and fit.get("seed") is None:
        from .fit import _fresh_seed

        fit = {**fit, "seed": _fresh_seed()}
    out, fw = [], None
    for x in lv:
        fw = fit_markov(traces, level=x, **fit)
        out.append(float(fw.w_inf().value))
    assert fw is not None
    rec = fw.fit
    est = [i for i, p in enumerate(fw.priors) if str(p).endswith("estimate")]
    e = markov_chain(fw.transitions[est], fw.length, init=rec.init, values=fw.state_values, period=fw.period)
    return ThetaProfile(tuple(lv), tuple(out), float(e.w_inf().value), float(cast(float, fw.group_sensitivity)),
                        fw.length)


# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
REFERENCES = {
    "close_adversary": (Ref("pierquin2024", "Thm A.5"), Ref("pierquin2024", "Thm A.3"), Ref("song2017", "Thm A.3")),
}
