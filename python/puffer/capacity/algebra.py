"""Guarantee algebra of capacity bounded privacy: post-processing, composition, mixtures, generalization.

Guarantee algebra for capacity bounded privacy (Chaudhuri, Imola, Machanavajjhala 2019,
Thms 1–4, 6, 7).

* :func:`post_process` — Thm 1: an (H, Gamma) guarantee holds for g∘A against the class I
  when i∘g ∈ H for all i ∈ I, g ∈ G (checked through :func:`~.classes.contains_composition`).
* :func:`mixture` — Thm 2: KL (an f-divergence) gives lam eps_A + (1-lam) eps_B; for Rényi the
  same argument on the alpha-divergence (an f-divergence; eq. 3 is increasing) gives
  log(lam e^{(alpha-1)eps_A} + (1-lam) e^{(alpha-1)eps_B})/(alpha-1). (The paper remarks that
  restricted Rényi is not convex; the mixture rule above is jointly quasi-convex in this
  sense, derived from its Thm 2, not stated in the paper.)
* :func:`compose_parallel` — Thm 3 (disjoint data): max; class = direct sum.
* :func:`compose_sequential` — Thm 4 (same data, **non-adaptive** only): sum; class = direct sum.
* :func:`ipm_from_restricted_kl` (Thm 7) and :func:`generalization_gap_bound` (Thm 6): 8 sqrt(.)
  Hypotheses (Thm 7): H convex, [-1, 1]-valued, translation invariant and closed under negation
  — read literally these are inconsistent (a translation-invariant class is unbounded), so the
  numbers are exposed as the paper's formulas without further claims. Thm 6 is an
  in-expectation, non-adaptive statement for statistical queries with values in [0, 1].

>>> from puffer import capacity as C
>>> g = C.compose_sequential(C.laplace_lin_kl(1.0), C.gaussian_lin_kl(1.0), non_adaptive=True)
>>> round(g.eps, 9), g.H
(0.725987156, 'lin ⊕ lin')
"""
from __future__ import annotations

import math
from typing import Any

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import round_up
from ..guarantees.capacity import CapacityBounded
from ..guarantees.provenance import Provenance
from ..refs import Ref
from .classes import FunctionClass, contains_composition, function_class

__all__ = ["from_unrestricted", "post_process", "mixture", "compose_parallel", "compose_sequential",
           "ipm_from_restricted_kl", "generalization_gap_bound"]


def _g(x: Any, name: str = "guarantee") -> CapacityBounded:
    if not isinstance(x, CapacityBounded):
        raise ParameterTypeError(name, x, "a CapacityBounded guarantee")
    return x


def _joint_kind(gs: tuple[CapacityBounded, ...]) -> tuple[str, bool]:
    sound = all(g.sound for g in gs)
    if not sound:
        return "paper_bound", False
    if any(g.kind == "corrected_paper_bound" for g in gs):
        return "corrected_paper_bound", True
    return "sound_upper_bound", True


def _same_divergence(gs: tuple[CapacityBounded, ...]) -> None:
    d0, a0 = gs[0].divergence, gs[0].alpha
    for i, g in enumerate(gs[1:], 1):
        if g.divergence != d0 or g.alpha != a0:
            raise ParameterError(f"guarantees[{i}]", f"{g.divergence}, alpha={g.alpha}",
                                 f"the divergence of the first guarantee ({d0}, alpha={a0})")


def _cls(H: str) -> FunctionClass | None:
    try:
        return function_class(H)
    except ParameterError:
        return None


def post_process(guarantee: CapacityBounded, I: Any, G: Any) -> CapacityBounded:  # noqa: E741 (paper notation)
    """Thm 1: the guarantee of g∘A against the class I, for g in the map class G.

    >>> from puffer import capacity as C
    >>> C.post_process(C.laplace_lin_kl(1.0), C.Lin(), C.AffineMaps()).H
    'lin'
    """
    g = _g(guarantee)
    H = _cls(g.H)
    if H is None:
        raise ParameterError("guarantee.H", g.H, "a single class (a composed class cannot be post-processed here)")
    Ic = function_class(I)
    if not contains_composition(H, Ic, G):
        raise ParameterError("I", str(Ic), f"a class with i∘g in {H} for every g in {G} (Thm 1); the guarantee "
                             "does not transfer to this adversary class")
    prov = (g.provenance or Provenance()).cite(Ref("chaudhuri2019", "Thm 1"), notes=f"post-processed by {G}")
    return CapacityBounded(str(Ic), g.divergence, g.alpha, g.eps, g.kind, g.sound, prov)


def mixture(gA: CapacityBounded, gB: CapacityBounded, lam: float) -> CapacityBounded:
    """Thm 2: run A with probability lam, else B (same data-independent coin on both datasets)."""
    a, b = _g(gA, "gA"), _g(gB, "gB")
    _same_divergence((a, b))
    if a.H != b.H:
        raise ParameterError("gB.H", b.H, f"the class of gA ({a.H})")
    lm = V.real("lam", lam, lo=0.0, hi=1.0)
    if a.divergence == "kl":
        val = lm * a.eps + (1 - lm) * b.eps
    else:
        al = a.alpha
        assert al is not None
        x, y = (al - 1) * a.eps, (al - 1) * b.eps
        m = max(x, y)
        val = (m + math.log(lm * math.exp(x - m) + (1 - lm) * math.exp(y - m))) / (al - 1) if math.isfinite(m) else m
    kind, sound = _joint_kind((a, b))
    prov = Provenance(mechanism="mixture", theorem="Thm 2", refs=(Ref("chaudhuri2019", "Thm 2"),),
                      notes=f"lam = {lm}")
    return CapacityBounded(a.H, a.divergence, a.alpha, round_up(val, 8), kind, sound, prov)


def _compose(gs: tuple[CapacityBounded, ...], rule: str, ref: Ref) -> CapacityBounded:
    if not gs:
        raise ParameterError("guarantees", gs, "at least one guarantee")
    gg = tuple(_g(g, f"guarantees[{i}]") for i, g in enumerate(gs))
    _same_divergence(gg)
    for g in gg:
        H = _cls(g.H)
        if H is not None and not (H.convex and H.translation_invariant and H.contains_constants):
            raise ParameterError("H", g.H, "a convex, translation-invariant class containing constants")
    val = max(g.eps for g in gg) if rule == "max" else round_up(math.fsum(g.eps for g in gg), 2 + len(gg))
    kind, sound = _joint_kind(gg)
    th = ref.item
    return CapacityBounded(" ⊕ ".join(g.H for g in gg), gg[0].divergence, gg[0].alpha, val, kind, sound,
                           Provenance(mechanism="compose_parallel" if rule == "max" else "compose_sequential",
                                      theorem=th, refs=(ref,)))


def compose_parallel(*guarantees: CapacityBounded) -> CapacityBounded:
    """Thm 3: mechanisms on disjoint data; parameter max(eps_i), class the direct sum."""
    return _compose(guarantees, "max", Ref("chaudhuri2019", "Thm 3"))


def compose_sequential(*guarantees: CapacityBounded, non_adaptive: bool) -> CapacityBounded:
    """Thm 4: mechanisms on the same data chosen in advance; parameter sum(eps_i). Adaptive
    composition is open for capacity bounded privacy, so ``non_adaptive=True`` is required."""
    if non_adaptive is not True:
        raise ParameterError("non_adaptive", non_adaptive, "True (Thm 4 covers only non-adaptive composition; "
                             "adaptive composition under capacity bounded privacy is open)")
    return _compose(guarantees, "sum", Ref("chaudhuri2019", "Thm 4"))


def from_unrestricted(eps: float, H: Any, alpha: float | None = None) -> CapacityBounded:
    """An (alpha, eps)-RDP (alpha = None: eps-KL-DP) guarantee is an (H, Rényi/KL) guarantee with
    the same eps for every class H (D^H <= D: restricting the sup can only lower it, eq. 2).

    >>> from puffer import capacity as C
    >>> C.from_unrestricted(0.5, C.Poly(3), alpha=2.0)
    CapacityBounded(H='poly_3', divergence='renyi', alpha=2.0, eps=0.5, kind='sound_upper_bound', sound=True)
    """
    Hc = function_class(H)
    div = "kl" if alpha is None else "renyi"
    return CapacityBounded(str(Hc), div, alpha, V.nonneg("eps", eps, allow_inf=True), "sound_upper_bound", True,
                           Provenance(mechanism="from_unrestricted", theorem="D^H <= D (eq. 2)",
                                      refs=(Ref("chaudhuri2019", "Def 3"),)))


def ipm_from_restricted_kl(kappa: float) -> float:
    """Thm 7: IPM^H(P, Q) <= 8 sqrt(KL^H(P, Q)) (see the hypotheses in the module doc)."""
    return round_up(8.0 * math.sqrt(V.nonneg("kappa", kappa)), 4)


def generalization_gap_bound(eps: float) -> float:
    """Thm 6: |E[empirical mean of q_S] - E_D[q_S]| <= 8 sqrt(eps) for an (H, KL) mechanism with
    parameter eps selecting statistical queries (non-adaptive, in expectation)."""
    return round_up(8.0 * math.sqrt(V.nonneg("eps", eps)), 4)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
REFERENCES = {
    "generalization_gap_bound": (Ref("chaudhuri2019", "Thm 6"),),
    "ipm_from_restricted_kl": (Ref("chaudhuri2019", "Thm 7"),),
}
