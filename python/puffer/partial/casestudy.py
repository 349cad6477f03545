"""The COVID-19 case study of Seeman, Reimherr & Slavkovic (§4), on synthetic data.

The paper's data (Pennsylvania Department of Health county x month cases and deaths, CPS/IPUMS
populations) are not available offline: :func:`synthetic_data` generates a table with the paper's
dimensions -- J = 67 counties x T = 24 months plus the lag month t = 0 (25 months), populations
spanning 4 k to 1.2 m, with "Allegheny" (1.2 m), "Erie" (260 k) and "Cameron" (4 k) named -- and
epidemic-like waves. All structural results (consistency, contraction effects, privacy) are
data-independent.

Public information for month t (Z_t): last month's county cases and deaths, this month's state total
of cases s_t, and cases >= deaths >= 0. Delta_Z = 2 is *assumed* as in the paper (one person changes
one county's case and death counts by 1 each); guarantees carry the flag "Delta_z assumed".

Methods (:func:`run_case_study`):

* ``"PP"``: cases and deaths + discrete Laplace of rate eps/Delta_Z, then :func:`~.postprocess.two_stage`
  (exact l2 projection, exact controlled rounding) -- eps-TP by Lemma 5;
* ``"WEM-a"``, ``"WEM-b"``, ``"WEM-c"``: :class:`~.wem.LatticeWEM` with the naive, deterministic
  congenial and Dirichlet-multinomial prior congenial base measures (concentration
  a_j = alpha X^(c)_{j,t-1} + pseudo; the paper's alpha is unreported, the pseudo-count avoids the
  degenerate a_j = 0), sampled by Metropolis-Hastings from a public starting point (approximate).

:func:`summaries` computes the Figure 1-3 quantities, :mod:`puffer.partial.plot` draws them.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..sampling import as_stream
from .additive import AdditiveWasserstein
from .frameworks import TPFramework
from .postprocess import contraction_effects, two_stage
from .wem import LatticeWEM

__all__ = ["CaseData", "synthetic_data", "run_case_study", "summaries", "dirmult_concentration", "METHODS", "DELTA_Z"]

METHODS = ("PP", "WEM-a", "WEM-b", "WEM-c")
DELTA_Z = 2.0
_BASES = {"WEM-a": "naive", "WEM-b": "congenial", "WEM-c": "prior"}
NAMED = {"Allegheny": 1_200_000, "Erie": 260_000, "Cameron": 4_000}


@dataclass(frozen=True)
class CaseData:
    """cases, deaths: int64 (T + 1, J) with row 0 the lag month; population (J,); names (J,)."""

    cases: np.ndarray
    deaths: np.ndarray
    population: np.ndarray
    names: tuple[str, ...]
    synthetic: bool = True

    @property
    def J(self) -> int:
        return cast(int, self.cases.shape[1])

    @property
    def T(self) -> int:
        return cast(int, self.cases.shape[0] - 1)

    def totals(self) -> np.ndarray:
        """s_t = sum_j cases_{j,t} for t = 1..T (public)."""
        return cast(np.ndarray, self.cases[1:].sum(1))


def synthetic_data(J: int = 67, T: int = 24, *, seed: int = 0) -> CaseData:
    """A synthetic county x month table with the paper's dimensions (see the module docstring).

    >>> d = synthetic_data(seed=1)
    >>> d.cases.shape, int(d.population.min()), int(d.population.max())
    ((25, 67), 4000, 1200000)
    """
    J = V.integer("J", J, lo=3)
    T = V.integer("T", T, lo=1)
    g = np.random.default_rng(seed)
    others = np.exp(g.uniform(np.log(4_000), np.log(1_200_000), J - 3)).round().astype(np.int64)
    pop = np.concatenate([np.array(list(NAMED.values()), dtype=np.int64), others])
    names = tuple(NAMED) + tuple(f"County {j}" for j in range(4, J + 1))
    t = np.arange(T + 1)
    # two waves and a floor of monthly incidence (per capita)
    rate = 0.0015 + 0.012 * np.exp(-0.5 * ((t - 6) / 2.0) ** 2) + 0.02 * np.exp(-0.5 * ((t - 17) / 2.5) ** 2)
    effect = np.exp(g.normal(0.0, 0.3, J))
    lam = np.outer(rate, pop * effect)
    cases = g.poisson(lam).astype(np.int64)
    cfr = np.clip(0.02 * np.exp(-t / 20.0), 0.004, None)
    deaths = g.binomial(cases, cfr[:, None]).astype(np.int64)
    return CaseData(cases, deaths, pop, names)


def dirmult_concentration(prev_cases: Any, alpha: float, *, total: int | None = None,
                          pseudo: float = 0.0) -> np.ndarray:
    """Dirichlet-multinomial concentration of WEM variant (c) from last month's public counts.

    ``total=None``: a_j = alpha X_{j,t-1} + pseudo (the reading with A = alpha s_{t-1}); with
    ``total=s_t``: a_j = alpha s_t X_{j,t-1} / s_{t-1} + pseudo (the reading consistent with the printed
    A = alpha s_t). Both have prior mean s_t X_{j,t-1} / s_{t-1}. ``pseudo`` > 0 avoids a_j = 0.

    >>> dirmult_concentration([3, 1], 2.0), dirmult_concentration([3, 1], 2.0, total=8)
    (array([6., 2.]), array([12.,  4.]))
    """
    prev = V.float_array("prev_cases", prev_cases, ndim=(1, 2))
    if (prev < 0).any():
        raise ParameterError("prev_cases", prev_cases, "non-negative counts")
    a = V.positive("alpha", alpha)
    p = V.nonneg("pseudo", pseudo)
    if total is None:
        out = a * prev + p
    else:
        s_prev = prev.sum(-1, keepdims=True)
        if (s_prev <= 0).any():
            raise ParameterError("prev_cases", prev_cases, "a positive previous total (for total=)")
        out = a * V.nonneg("total", total) * prev / s_prev + p
    if (out <= 0).any():
        raise ParameterError("pseudo", pseudo, "a pseudo-count > 0 when some previous count is 0 (a_j must be > 0)")
    return out


def _progress(msg: str, quiet: bool) -> None:
    if not quiet:
        print(f"  .. {msg}", file=sys.stderr, flush=True)


def run_case_study(data: CaseData, eps_grid: Sequence[float] = (0.01, 1.0), replicates: int = 3, *,
                   methods: Sequence[str] = METHODS, alpha: float = 1.0, pseudo: float = 1.0,
                   steps_per_dim: int = 400, rng: Any = None, quiet: bool = False) -> dict[str, Any]:
    """Release every month (t = 1..T) of ``data`` with each method at each eps, ``replicates`` times.

    Returns ``{"data": data, "results": {(method, eps): {"cases": (R, T, J), "deaths": (R, T, J),
    ["noisy_cases", "noisy_deaths"], "guarantee": TP, ["acceptance"]}}}``.
    """
    if not isinstance(data, CaseData):
        raise ParameterTypeError("data", data, "a CaseData (see synthetic_data)")
    R = V.integer("replicates", replicates, lo=1)
    eps_list = [V.positive("eps", e) for e in eps_grid]
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise ParameterError("methods", list(methods), f"a non-empty subset of {METHODS}")
    alpha = V.positive("alpha", alpha)
    pseudo = V.positive("pseudo", pseudo)
    stream = as_stream(rng)
    X_c, X_d = data.cases[1:], data.deaths[1:]
    prev_c, prev_d = data.cases[:-1], data.deaths[:-1]
    s = data.totals()
    T, J = X_c.shape
    fw = TPFramework.assumed(DELTA_Z, z=f"synthetic J={J} T={T}", family="unspecified (Delta_Z assumed)",
                             pairs="one person: one county's case and death counts")
    out: dict[tuple[str, float], Any] = {}   # (method, eps) -> results
    # replicate-major stacks: chain r*T + t is replicate r, month t
    xc, xd = np.tile(X_c, (R, 1)), np.tile(X_d, (R, 1))
    ss = np.tile(s, R)
    pc, pd = np.tile(prev_c, (R, 1)), np.tile(prev_d, (R, 1))
    for eps in eps_list:
        for meth in methods:
            t0 = time.perf_counter()
            if meth == "PP":
                add = AdditiveWasserstein(eps, fw, discrete=True)
                nc = add.release(xc, rng=stream)
                nd = add.release(xd, rng=stream)
                c, d = two_stage(nc.astype(np.float64), nd.astype(np.float64), ss)
                res = {"noisy_cases": nc.reshape(R, T, J), "noisy_deaths": nd.reshape(R, T, J),
                       "guarantee": add.guarantee}
            else:
                mech = LatticeWEM(eps, fw, base=_BASES[meth], steps_per_dim=steps_per_dim)
                start_c = np.stack([LatticeWEM.public_start(int(ss[k]), pc[k] + 1.0)[:J] for k in range(ss.size)])
                start = np.concatenate([start_c, np.minimum(start_c, pd)], axis=1)
                conc = dirmult_concentration(pc, alpha, pseudo=pseudo) if meth == "WEM-c" else None
                c, d, acc = mech.release(xc, xd, ss, start=start, concentration=conc, rng=stream,
                                         return_acceptance=True)
                res = {"guarantee": mech.guarantee, "acceptance": float(np.mean(acc))}
            res["cases"], res["deaths"] = c.reshape(R, T, J), d.reshape(R, T, J)
            out[(meth, eps)] = res
            _progress(f"{meth:6s} eps={eps:<5g} {R} replicates x {T} months: {time.perf_counter() - t0:.2f} s", quiet)
    return {"data": data, "results": out, "eps": eps_list, "methods": list(methods), "replicates": R}


def summaries(study: dict[str, Any]) -> dict[str, Any]:
    """Figure 1-3 quantities.

    * ``fig1[(method, eps)][name]``: (R, T) case rates of the named counties; ``fig1_truth[name]`` (T,).
    * ``fig2[(method, eps)]``: relative percentage errors 100 |Y - X| / X of the case counts over all
      counties, months and replicates with X > 0 (cells with X = 0 excluded).
    * ``fig3[(eps, which)]``: frequencies of the three contraction effects (PP only) for the county with
      the largest and the smallest total cases.
    """
    data: CaseData = study["data"]
    res = study["results"]
    X = data.cases[1:]
    idx = {nm: data.names.index(nm) for nm in NAMED if nm in data.names}
    fig1 = {k: {nm: v["cases"][:, :, j] / data.population[j] for nm, j in idx.items()} for k, v in res.items()}
    truth = {nm: X[:, j] / data.population[j] for nm, j in idx.items()}
    pos = X > 0
    fig2 = {k: (100.0 * np.abs(v["cases"] - X[None]) / np.where(pos, X, 1)[None])[:, pos].ravel()
            for k, v in res.items()}
    tot = X.sum(0)
    which = {"largest": int(np.argmax(tot)), "smallest": int(np.argmin(tot))}
    fig3 = {}
    for (meth, eps), v in res.items():
        if meth != "PP":
            continue
        eff = contraction_effects(v["noisy_cases"], v["noisy_deaths"], v["cases"], v["deaths"])
        for lab, j in which.items():
            fig3[(eps, lab)] = {k: float(a[:, :, j].mean()) for k, a in eff.items()}
    return {"fig1": fig1, "fig1_truth": truth, "fig2": fig2, "fig3": fig3, "fig3_counties":
            {lab: data.names[j] for lab, j in which.items()}}

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "run_case_study": (Ref("seeman2024", "Figure 1"), Ref("seeman2024", "Figure 2"),),
    "summaries": (Ref("seeman2024", "Figure 1"), Ref("seeman2024", "Figure 2"),),
}
