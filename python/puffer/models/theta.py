"""What a fitted Theta's guarantee rests on: adversaries close to Theta, and Delta_G against the
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


def _log_levels(atoms: np.ndarray, logm: np.ndarray, g0: int, n: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """On the grid g0 .. g0 + n - 1: log F(s) (mass <= s) and log S(s) (mass > s), normalised,
    and the grid indices of the smallest and largest atoms."""
    d = np.full(n, -np.inf)
    idx = atoms.astype(np.int64) - g0
    d[idx] = logm
    tot = np.logaddexp.reduce(logm)
    F = np.logaddexp.accumulate(d) - tot
    rev = np.logaddexp.accumulate(d[::-1])[::-1]          # mass >= s
    S = np.empty(n)
    S[:-1] = rev[1:] - tot
    S[-1] = -np.inf
    return F, S, int(idx.min()), int(idx.max())


def _one_way(FQ: np.ndarray, SQ: np.ndarray, lq: int, hq: int, FP: np.ndarray, SP: np.ndarray, hp: int) -> int:
    """The least z with F_Q(s) <= F_P(s + z) at every s, each comparison certified (a level
    closer than the margin counts as not holding: an upper bound of the exact least z)."""
    n = FP.size
    z = hp - hq                                            # F_Q = 1 from hq on: F_P must be 1 (>= hp)
    if hq > lq:
        s = np.arange(lq, hq)
        # the first j with log F_P(j) > log F_Q(s) + margin, or log S_P(j) < log S_Q(s) - margin
        jf = np.searchsorted(FP, FQ[s] + _MARGIN, side="right")
        negS = -SP                                          # nondecreasing
        js = np.searchsorted(negS, -(SQ[s] - _MARGIN), side="right")
        j = np.minimum(np.minimum(jf, js), hp)              # F_P(hp) = 1 exactly
        j = np.minimum(j, n - 1)
        z = max(z, int((j - s).max()))
    return max(z, 0)


def w_inf_upper(atoms_p: np.ndarray, logm_p: np.ndarray, atoms_q: np.ndarray, logm_q: np.ndarray) -> int:
    """An upper bound of W_inf between two laws on the integer grid (natural-log masses, not
    necessarily normalised): the exact value unless two levels are closer than 1e-9 relative."""
    g0 = int(min(atoms_p.min(), atoms_q.min()))
    n = int(max(atoms_p.max(), atoms_q.max())) - g0 + 1
    FP, SP, lp, hp = _log_levels(atoms_p, logm_p, g0, n)
    FQ, SQ, lq, hq = _log_levels(atoms_q, logm_q, g0, n)
    return max(_one_way(FQ, SQ, lq, hq, FP, SP, hp), _one_way(FP, SP, lp, hp, FQ, SQ, hq))


def _laws(fw: MarkovChainFramework, M: np.ndarray, pi: np.ndarray) -> list[list[list[tuple[np.ndarray, np.ndarray]]]]:
    """laws[j][t][a] = (grid atoms, log masses) of S given X_t = a under prior j of (M, pi) (an
    empty pair where the secret is impossible)."""
    from .. import _core

    T, k = fw.length, len(fw.state_names)
    A, Pr, O, S, L = _core.models.markov_sum_laws(np.ascontiguousarray(M), np.ascontiguousarray(pi), fw._vals, T,
                                                  fw._threads)
    out = []
    for j in range(M.shape[0]):
        per_t = []
        for t in range(T):
            row = []
            for a in range(k):
                i = (j * T + t) * k + a
                lo, hi = int(O[i]), int(O[i + 1])
                if hi == lo or S[i] <= 0:
                    row.append((np.zeros(0), np.zeros(0)))
                    continue
                lm = Pr[lo:hi] if L[i] else np.log(Pr[lo:hi])
                row.append((A[lo:hi], lm))
            per_t.append(row)
        out.append(per_t)
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
    """(beliefs, priors) table of max_{t, a} W_inf (upper bounds, value units; inf where a secret
    possible under the belief is impossible under the prior)."""
    M = np.concatenate([Mb, fw.transitions], axis=0)
    pi = np.concatenate([pib, fw.initial_laws], axis=0)
    laws = _laws(fw, M, pi)
    nb, n = Mb.shape[0], len(fw.priors)
    out = np.zeros((nb, n))
    for i in range(nb):
        for j in range(n):
            if np.array_equal(M[i], M[nb + j]) and np.array_equal(pi[i], pi[nb + j]):
                continue          # the same model: its laws are equal (levels tie exactly), W_inf = 0
            w = 0
            for t in range(fw.length):
                for a in range(len(fw.state_names)):
                    P, Q = laws[i][t][a], laws[nb + j][t][a]
                    if not P[0].size:
                        continue
                    if not Q[0].size:
                        w = -1
                        break
                    w = max(w, w_inf_upper(P[0], P[1], Q[0], Q[1]))
                if w < 0:
                    break
            out[i, j] = math.inf if w < 0 else fw._to_units(float(w))
    return out


def sample_beliefs(fw: MarkovChainFramework, n: int = 8, corners: int = 8, *, seed: int | None = None) -> np.ndarray:
    """Beliefs in the fit's credible box: ``n`` draws from the rows' posteriors Dir(counts +
    prior) kept inside the box (a row outside is redrawn, up to 50 times, then taken at a
    random corner), and ``corners`` random corners (each group's phases and rows pushed to a
    random extreme of the box). Shape (n + corners, *fw.transitions.shape[1:])."""
    from .fit import _corner

    fit = _fit_of(fw)
    rng = np.random.default_rng(seed)
    est, lo, hi = fit.estimate, fit.lower, fit.upper
    G, P, k, _ = est.shape
    a = fit.counts + fit.prior
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
        raise ParameterTypeError("fw", type(fw).__name__, "a MarkovChainFramework from puffer.models.fit_markov")
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
                f"  {self.n_sampled} posterior beliefs and {self.n_corners} random corners of the box: W_inf "
                f"divergence to Theta up to {max(self.divergence):.4g} -> eps <= {self.eps_sampled:.4g} for "
                f"adversaries holding any of them (Thm A.5)\n"
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

    ``beliefs``: matrices to assess (shape (m, *fw.transitions.shape[1:])); default
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
        rows = [f"  level {lv:>5.0%}: Delta_G = {d:g} (gain over group DP {self.group / d:.3g}x)"
                for lv, d in zip(self.levels, self.delta_g)]
        return "\n".join([f"Theta profile (T = {self.T}; group DP {self.group:g}; point estimate alone "
                          f"{self.estimate:g}):"] + rows)

    def plot(self, ax: Any = None) -> Any:
        from .. import plot

        return plot.theta_profile(self, ax=ax)


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
