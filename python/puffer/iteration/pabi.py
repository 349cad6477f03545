"""The accountant of privacy amplification by iteration for contractive noisy iterations.

The accountant of privacy amplification by iteration for contractive noisy iterations
(Pierquin, Bellet, Tommasi, Boussard 2024, Def 5.1 and Thm 5.2).

A contractive noisy iteration W_t = psi_t(W_{t-1}, X_t) + N_t, N_t ~ zeta_t, with psi_t
1-Lipschitz in W and per-step shifts s_t >= sup_w W_inf(psi_t(w, X_t), psi_t(w, X'_t)) (X, X'
the data under the two secrets of a pair, the same prior) satisfies, for every allocation a_t
with prefix sums A_t <= S_t and A_T = S_T,

    D_alpha(W_T || W'_T) <= sum_t R_alpha(zeta_t, a_t).

:class:`PABI` evaluates this bound with certified R_alpha (each noise family's upper bound,
rounded up) on an allocation made exactly feasible (:func:`~.allocation.certified_allocation`).

Soundness caveat (recorded in every guarantee's provenance): the paper's proof applies its
Lemma 5.1 treating X_t as a random variable independent of the current iterate W_{t-1}; with
correlated data they are dependent, and the paper does not address this. puffer reports the
bound as stated by the paper.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import RPP, Provenance, RPPCurve, round_up
from .allocation import (
    _shifts,
    certified_allocation,
    check_allocation,
    optimal_allocation,
    paper_allocation,
    single_step_allocation,
    uniform_allocation,
)

__all__ = ["PABI", "PABIBound", "pabi", "pabi_curve", "SOUNDNESS_CAVEAT"]

THEOREM = "Pierquin, Bellet, Tommasi, Boussard 2024, Thm 5.2 (dataset-dependent PABI)"

SOUNDNESS_CAVEAT = (
    "soundness caveat: Thm 5.2 applies Lemma 5.1 with the data point X_t treated as independent "
    "of the current iterate W_{t-1}; with correlated data they are dependent and the paper does "
    "not address this. The bound is reported as stated by the paper.")

_ALLOCATIONS = ("optimal", "paper", "uniform", "single_step")


def _is_family(x: Any) -> bool:
    return hasattr(x, "R") and hasattr(x, "scale")


def _gaussian_var(fam: Any) -> float | None:
    """sigma^2 of a Gaussian family (1-D or iid), else None."""
    from ..noise import Gaussian
    from ..noise.product import IID

    base = fam.base if isinstance(fam, IID) else fam
    return base.sigma ** 2 if isinstance(base, Gaussian) else None


class PABI:
    """Thm 5.2 accountant: per-step shifts, per-step noise and a shift allocation.

    ``shifts``: s_1..s_T >= 0 (upper bounds on the per-step W_inf shifts, in the noise's
    natural norm). ``noise``: one puffer noise family (the same at every step; ``.iid(d)`` for
    d-dimensional iterates) or a list of T families. ``allocation``: ``"optimal"`` (greatest
    convex minorant; in the reparametrised time sum sigma_t^2 when every step is Gaussian),
    ``"paper"`` (a_t = s_t), ``"uniform"`` (Prop F.2), ``"single_step"`` (Lemma F.1) or an array.

    >>> from puffer.noise import Gaussian
    >>> acc = PABI([1, 0.5, 0.25, 0.1], Gaussian(1.0))
    >>> round(acc.epsilon(2.0), 10)    # 4 * alpha * 0.4625^2 / 2
    0.855625
    >>> acc.curve().provenance.theorem.startswith("Pierquin")
    True
    """

    def __init__(self, shifts: Any, noise: Any, allocation: Any = "optimal"):
        self.shifts = _shifts(shifts)
        T = self.shifts.size
        if _is_family(noise):
            fams = [noise]
            index = np.zeros(T, dtype=np.intp)
        elif isinstance(noise, (list, tuple)):
            if len(noise) != T:
                raise ParameterError("noise", f"{len(noise)} families", f"one noise family per step ({T})")
            uniq: dict[Any, int] = {}   # noise family -> its index
            index = np.empty(T, dtype=np.intp)
            for t, f in enumerate(noise):
                if not _is_family(f):
                    raise ParameterTypeError("noise", f, "puffer noise families")
                index[t] = uniq.setdefault(f, len(uniq))
            fams = list(uniq)
        else:
            raise ParameterTypeError("noise", noise, "a puffer noise family or a list of one per step")
        self._fams, self._index = fams, index
        self.noise = noise
        if isinstance(allocation, str):
            if allocation not in _ALLOCATIONS:
                raise ParameterError("allocation", allocation, f"one of {_ALLOCATIONS} or an array")
            self.allocation_kind = allocation
            if allocation == "optimal":
                var = [_gaussian_var(f) for f in fams]
                if len(fams) > 1 and all(v is not None for v in var):
                    a = optimal_allocation(self.shifts, np.asarray(var)[index])
                else:
                    # identical noise: optimal whenever R_alpha(zeta, .) is convex; otherwise a
                    # feasible (hence sound) allocation
                    a = optimal_allocation(self.shifts)
            elif allocation == "paper":
                a = paper_allocation(self.shifts)
            elif allocation == "uniform":
                a = uniform_allocation(self.shifts)
            else:
                a = single_step_allocation(self.shifts)
        else:
            self.allocation_kind = "array"
            a = check_allocation(self.shifts, allocation)
        self.allocation = a
        self.allocation.setflags(write=False)
        self._b = certified_allocation(self.shifts, a)

    @property
    def T(self) -> int:
        return int(self.shifts.size)

    def epsilon(self, alpha: Any) -> float:
        """Certified sum_t R_alpha(zeta_t, a_t) at one order alpha > 1 (inf allowed: R_inf)."""
        alpha = V.alpha("alpha", alpha)
        terms = []
        for k, fam in enumerate(self._fams):
            b = self._b if len(self._fams) == 1 else self._b[self._index == k]
            nz = b[b > 0]
            if nz.size:
                r = np.asarray(fam.R(np.full(nz.shape, alpha), nz), dtype=np.float64)
                if not np.isfinite(r).all():
                    return math.inf
                terms.append(r)
        if not terms:
            return 0.0
        allr = np.concatenate(terms)
        # fsum is correctly rounded: one ulp, plus the R values' own certified margins
        return round_up(math.fsum(allr.tolist()), 2)

    def _provenance(self) -> Provenance:
        noise = repr(self.noise) if _is_family(self.noise) else f"{len(self._fams)} distinct families over {self.T} steps"
        return Provenance(
            mechanism="PABI", theorem=THEOREM, sensitivity=float(self.shifts.max(initial=0.0)),
            witness={"T": self.T, "allocation": self.allocation_kind,
                     "sum_shifts": math.fsum(self.shifts.tolist())},
            noise=noise, notes=SOUNDNESS_CAVEAT)

    def guarantee(self, alpha: float) -> RPP:
        """(alpha, eps)-RPP with provenance (the soundness caveat in its notes)."""
        return RPP(V.alpha("alpha", alpha), self.epsilon(alpha), self._provenance())

    def curve(self, alphas: Sequence[float] | None = None) -> RPPCurve:
        """The RPP curve alpha -> eps(alpha) (default orders: :func:`puffer.default_orders`)."""
        return RPPCurve.from_function(self.epsilon, alphas, provenance=self._provenance())

    def __repr__(self) -> str:
        return f"PABI(T={self.T}, allocation={self.allocation_kind!r}, noise={self.noise!r})" \
            if _is_family(self.noise) else f"PABI(T={self.T}, allocation={self.allocation_kind!r}, noise=[...])"


class PABIBound(float):
    """The Thm 5.2 bound as a float (the Renyi divergence bound eps at ``alpha``) that also
    carries ``alpha``, ``allocation`` (the a_t used) and ``guarantee`` (an :class:`~puffer.RPP`
    with provenance). ``eps`` is the same number as ``float(self)``."""

    alpha: float
    allocation: np.ndarray
    guarantee: RPP

    def __new__(cls, eps: float, alpha: float, allocation: np.ndarray, guarantee: RPP) -> PABIBound:
        obj = super().__new__(cls, eps)
        obj.alpha, obj.allocation, obj.guarantee = alpha, allocation, guarantee
        return obj

    @property
    def eps(self) -> float:
        return float(self)

    @property
    def provenance(self) -> Provenance | None:
        return self.guarantee.provenance

    def __repr__(self) -> str:
        return f"PABIBound(eps={float(self)!r}, alpha={self.alpha!r})"


def pabi(shifts: Any, noise: Any, alpha: Any, allocation: Any = "optimal") -> PABIBound:
    """The Renyi bound of Thm 5.2: D_alpha(W_T || W'_T) <= sum_t R_alpha(zeta_t, a_t).

    Returns a :class:`PABIBound` (a float with ``.guarantee``, ``.allocation``); ``noise`` is
    one family or a list of per-step families; ``allocation`` is ``"optimal"``, ``"paper"``,
    ``"uniform"``, ``"single_step"`` or an array (checked for feasibility).

    >>> from puffer.noise import Gaussian
    >>> b = pabi([0, 2.0, 0, 0], Gaussian(1.0), 2.0)   # 3 steps of 2/3: 3 * alpha (2/3)^2 / 2
    >>> round(b, 12), b.allocation.round(6).tolist()
    (1.333333333333, [0.0, 0.666667, 0.666667, 0.666667])
    """
    acc = PABI(shifts, noise, allocation)
    g = acc.guarantee(alpha)
    return PABIBound(g.eps, g.alpha, acc.allocation, g)


def pabi_curve(shifts: Any, noise: Any, alphas: Sequence[float] | None = None,
               allocation: Any = "optimal") -> RPPCurve:
    """The Thm 5.2 bound at every order as an :class:`~puffer.RPPCurve` (provenance carries the
    soundness caveat)."""
    return PABI(shifts, noise, allocation).curve(alphas)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "PABI": (Ref("pierquin2024", "Def 5.1"), Ref("pierquin2024", "Thm 5.2"),),
    "pabi": (Ref("pierquin2024", "Thm 5.2"),),
    "pabi_curve": (Ref("pierquin2024", "Thm 5.2"),),
}
