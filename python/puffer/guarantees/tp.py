"""Epsilon-TP guarantees for partially private data, and their algebra.

epsilon-TP guarantees: (eps, {Theta_z})-Pufferfish for partially private data (Seeman,
Reimherr & Slavkovic, Def 3) and their algebra.

* :class:`TP` -- one epsilon-TP claim for a realised public information z, a conditional family
  Theta_z and secret pairs (stored as descriptors/digests), with Delta_z, sigma and assumption flags
  (e.g. "Delta_Z assumed, not derived", "sampler approximate (MCMC)").
* :func:`compose_sequential` (Lemma 6): sum of eps; requires independent mechanism randomness given
  (X, Z) and the same z / family / pairs.
* :func:`compose_parallel` (Lemma 7): eps for a disjoint partition of the records, each release
  touching only its block. The paper states equal eps; unequal eps are combined by their max, a
  natural extension flagged in ``assumptions``.
* :func:`post_process` (Lemma 5): Y* = h(Y, Z) keeps eps (h may use z, never X).
* :func:`restrict` (Lemma 8): an eps-DP release conditioned on landing in a public set is 2 eps-TP.
* :func:`posterior_odds_bounds` (Lemma 4) and :func:`tv_bound` (Eq. 3/5).

>>> g = TP(0.5, z="z1", family="Theta", secret_pairs="binary")
>>> compose_sequential(g, g).eps
1.0
>>> lo, hi = posterior_odds_bounds(1.0, math.log(2))    # widened outward by an ulp
>>> lo <= 0.5 <= 2.0 <= hi, round(lo, 12), round(hi, 12)
(True, 0.5, 2.0)
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..refs import Ref
from ._base import Guarantee, register_guarantee, round_up
from .provenance import Provenance, as_provenance

__all__ = ["TP", "compose_sequential", "compose_parallel", "post_process", "restrict",
           "posterior_odds_bounds", "tv_bound"]

_PAPER = "seeman2024"


def _strs(name: str, v: Any) -> tuple[str, ...]:
    if isinstance(v, str):
        return (v,)
    if not isinstance(v, (tuple, list)) or not all(isinstance(s, str) for s in v):
        raise ParameterTypeError(name, v, "a tuple of strings")
    return tuple(v)


@register_guarantee
@dataclass(frozen=True, repr=False)
class TP(Guarantee):
    """An (eps, {Theta_z})-Pufferfish ("eps-TP") guarantee (Seeman et al. 2024, Def 3).

    eps: the privacy parameter (inf allowed: no guarantee); z, family, secret_pairs: descriptors
    (digests) of the public realisation, of Theta_z and of the secret pairs -- compositions refuse
    to mix different ones; delta_z, sigma: the W_inf sensitivity and the loss sensitivity used
    (None when not applicable); mechanism: a name; assumptions: flags; children: the composed parts.
    """

    eps: float
    z: str = ""
    family: str = ""
    secret_pairs: str = ""
    delta_z: float | None = None
    sigma: float | None = None
    mechanism: str = ""
    assumptions: tuple[str, ...] = ()
    children: tuple[TP, ...] = ()
    definition: str = "TP"
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", V.nonneg("eps", self.eps, allow_inf=True))
        for name in ("z", "family", "secret_pairs", "mechanism"):
            if not isinstance(getattr(self, name), str):
                raise ParameterTypeError(name, getattr(self, name), "a string descriptor")
        for name in ("delta_z", "sigma"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, V.nonneg(name, v, allow_inf=True))
        object.__setattr__(self, "assumptions", _strs("assumptions", self.assumptions))
        ch = tuple(self.children)
        for c in ch:
            if not isinstance(c, TP):
                raise ParameterTypeError("children", c, "TP guarantees")
        object.__setattr__(self, "children", ch)
        if self.definition != "TP":
            raise ParameterError("definition", self.definition, "'TP'")
        object.__setattr__(self, "provenance", as_provenance(self.provenance))

    @property
    def approximate(self) -> bool:
        """True when some part was released by an approximate (MCMC) sampler: the eps holds for
        the exact target law only."""
        return any("approximate" in a for a in self.assumptions) or any(c.approximate for c in self.children)

    def posterior_odds_bounds(self, prior_odds: float) -> tuple[float, float]:
        return posterior_odds_bounds(prior_odds, self.eps)

    def tv_bound(self) -> float:
        return tv_bound(self.eps)

    def __repr__(self) -> str:
        flags = f", assumptions={list(self.assumptions)}" if self.assumptions else ""
        return f"TP(eps={self.eps!r}, mechanism={self.mechanism!r}, delta_z={self.delta_z!r}{flags})"


def _check_same(gs: Sequence[TP], override: bool) -> None:
    if not gs:
        raise ParameterError("guarantees", gs, "at least one TP guarantee")
    for g in gs:
        if not isinstance(g, TP):
            raise ParameterTypeError("guarantees", g, "puffer TP guarantees")
    if override:
        return
    for name in ("z", "family", "secret_pairs"):
        vals = {getattr(g, name) for g in gs}
        if len(vals) > 1:
            raise ParameterError(name, sorted(vals), f"the same {name} for every composed guarantee "
                                 "(Lemmas 6-7 hold within one framework; pass override=True to accept)")


def _merged(gs: Sequence[TP], name: str) -> str:
    v: str = getattr(gs[0], name)
    return v


def compose_sequential(*guarantees: TP, independent: bool = True, override: bool = False) -> TP:
    """(Y_1, ..., Y_k) is (sum eps_k)-TP (Lemma 6). ``independent`` must be True: the mechanisms
    use independent randomness given (X, Z) and are non-adaptive (fresh rng streams)."""
    if independent is not True:
        raise ParameterError("independent", independent, "True (Lemma 6 needs Y_1 independent of Y_2 "
                             "given X, Z: fresh randomness, non-adaptive)")
    gs = list(guarantees)
    _check_same(gs, override)
    eps = math.fsum(g.eps for g in gs)
    if math.isfinite(eps) and Fraction(eps) < sum((Fraction(g.eps) for g in gs), Fraction(0)):
        eps = math.nextafter(eps, math.inf)  # fsum is correctly rounded: one ulp up covers it
    return TP(eps, z=_merged(gs, "z"), family=_merged(gs, "family"), secret_pairs=_merged(gs, "secret_pairs"),
              mechanism="sequential", children=tuple(gs),
              assumptions=("independent randomness given (X, Z)",)
              + (("frameworks differ (override)",) if override else ()),
              provenance=Provenance(mechanism="compose_sequential", refs=(Ref("seeman2024", "Lemma 6"),)))


def compose_parallel(guarantees: Sequence[TP], partition: Sequence[Any], *, override: bool = False) -> TP:
    """(Y_1, ..., Y_B) over a disjoint partition of the records is eps-TP (Lemma 7).

    ``partition[b]``: the record indices block b touches; blocks must be pairwise disjoint. Each
    Y_b must depend on X only through X_b (and on Z). Unequal eps give max eps (not stated in the
    paper; flagged)."""
    gs = list(guarantees)
    _check_same(gs, override)
    parts = list(partition)
    if len(parts) != len(gs):
        raise ParameterError("partition", f"{len(parts)} blocks", f"one block per guarantee ({len(gs)})")
    seen: dict[Any, Any] = {}
    for b, blk in enumerate(parts):
        try:
            items = set(blk)
        except TypeError:
            raise ParameterTypeError(f"partition[{b}]", blk, "an iterable of record indices") from None
        for r in items:
            if r in seen:
                raise ParameterError("partition", f"record {r!r} in blocks {seen[r]} and {b}",
                                     "disjoint blocks (Lemma 7)")
            seen[r] = b
    eps = max(g.eps for g in gs)
    flags: tuple[str, ...] = ("disjoint partition; Y_b depends on X_b and Z only",)
    if len({g.eps for g in gs}) > 1:
        flags += ("unequal eps combined by max (extension of Lemma 7)",)
    return TP(eps, z=_merged(gs, "z"), family=_merged(gs, "family"), secret_pairs=_merged(gs, "secret_pairs"),
              mechanism="parallel", children=tuple(gs), assumptions=flags,
              provenance=Provenance(mechanism="compose_parallel", refs=(Ref("seeman2024", "Lemma 7"),)))


def post_process(guarantee: TP, description: str = "h(Y, Z)") -> TP:
    """Y* = h(Y, Z) is eps-TP (Lemma 5); h may use the public z but never the confidential X."""
    if not isinstance(guarantee, TP):
        raise ParameterTypeError("guarantee", guarantee, "a TP guarantee")
    return replace(guarantee, mechanism=f"post_process({guarantee.mechanism})", children=(guarantee,),
                   assumptions=guarantee.assumptions + (f"post-processing {description} uses Z, not X",),
                   provenance=Provenance(mechanism="post_process", refs=(Ref("seeman2024", "Lemma 5"),)))


def restrict(eps_dp: float, *, z: str = "", family: str = "", secret_pairs: str = "",
             mechanism: str = "restricted DP release") -> TP:
    """An eps-DP release conditioned on lying in a public set X* is (2 eps)-TP for the family of
    DP scenarios renormalised to X* (Lemma 8)."""
    e = V.nonneg("eps_dp", eps_dp, allow_inf=True)
    return TP(round_up(2.0 * e), z=z, family=family, secret_pairs=secret_pairs, mechanism=mechanism,
              assumptions=("eps-DP release conditioned on the public set (Lemma 8: eps -> 2 eps)",),
              provenance=Provenance(mechanism="restrict_to_public", refs=(Ref("seeman2024", "Lemma 8"),)))


def posterior_odds_bounds(prior_odds: float, eps: float) -> tuple[float, float]:
    """Lemma 4: posterior odds of (s1, s2) after seeing Y lie in [prior e^-eps, prior e^eps]."""
    po = V.nonneg("prior_odds", prior_odds, allow_inf=True)
    e = V.nonneg("eps", eps, allow_inf=True)
    lo = po * math.exp(-e)
    hi = po * math.exp(e) if e < 709 else math.inf
    return (math.nextafter(lo, 0.0) if lo > 0 and lo != po else lo, round_up(hi, 2) if hi != po else hi)


def tv_bound(eps: float) -> float:
    """d_TV between posteriors with and without one record's value is <= e^eps - 1 (Eq. 3/5)."""
    e = V.nonneg("eps", eps, allow_inf=True)
    return round_up(math.expm1(e)) if e < 709 else math.inf

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
REFERENCES = {
    "posterior_odds_bounds": (Ref("seeman2024", "Lemma 4"),),
    "tv_bound": (Ref("seeman2024", "Eq. 3"),),
}
