"""How Pufferfish guarantees may (not) compose.

* No sequential composition: no mechanism-agnostic sequential (let alone adaptive) composition
  theorem is known for Pufferfish or Rényi Pufferfish privacy (Pierquin et al. 2024, App. E.1;
  Song et al. 2017): with correlated data the conditional output laws of two mechanisms do not
  factor. The accountant therefore refuses PP / RPP objects unless they come with a DP-type
  guarantee for a granularity (then that guarantee is composed) — :class:`Certified` — or the
  object exposes one as ``.dp_guarantee``.
* Parallel composition (Pierquin et al. 2024, Prop E.1): for frameworks (S, Q, Theta_k), one per
  independent part X_k of the data, with every discriminative pair about one part and
  Theta = {prod_k theta_k}, if each M_k(X_k) is (alpha, eps_k)-RPP then (M_1, ..., M_m) is
  (alpha, max_k eps_k)-RPP: :func:`compose_parallel`.

>>> import puffer
>>> from puffer import accounting as A
>>> try:
...     A.Accountant(A.Unbounded()).add(puffer.RPP(2.0, 0.5))
... except A.NotComposableError as exc:
...     print("no known sequential composition" in str(exc))
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError, ParameterTypeError
from ..guarantees import PP, RPP, ApproxRPP, Provenance, RPPCurve
from ..guarantees.dp import DPGuarantee, NoGuarantee
from ..refs import Ref

__all__ = ["NotComposableError", "Certified", "as_dp_guarantee", "compose_parallel"]

_PUFFERFISH = (PP, RPP, ApproxRPP, RPPCurve)


class NotComposableError(ParameterTypeError):
    """A Pufferfish guarantee was given to an accountant without a DP-type certificate."""


@dataclass(frozen=True)
class Certified:
    """A Pufferfish guarantee together with a DP-type guarantee the same mechanism satisfies for a
    granularity (e.g. derived because Theta makes records independent, Kifer & Machanavajjhala
    2014). ``reason`` says why the DP-type guarantee holds; the accountant composes ``dp``."""

    guarantee: Any
    dp: DPGuarantee
    reason: str

    def __post_init__(self):
        if not isinstance(self.dp, DPGuarantee):
            raise ParameterTypeError("dp", self.dp, "a DP-type guarantee (PureDP, ApproxDP, ZCDP, GDP)")
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ParameterError("reason", self.reason, "a non-empty justification of the DP-type guarantee")


def _refuse(g: Any) -> NotComposableError:
    return NotComposableError(
        "guarantee", g, "a DP-type guarantee: Pufferfish/Renyi-Pufferfish guarantees have no known sequential "
        "composition (Pierquin et al. 2024, App. E.1; Song et al. 2017). Attach a DP-type guarantee for a "
        "granularity with accounting.Certified(g, dp=...), or use puffer.compose_parallel for independent "
        "parts (Prop E.1)")


def as_dp_guarantee(obj: Any) -> Any:
    """The DP-type guarantee an object carries (see the module docstring), or an error."""
    if isinstance(obj, (DPGuarantee, NoGuarantee)):
        return obj
    if isinstance(obj, Certified):
        return obj.dp
    dp = getattr(obj, "dp_guarantee", None)
    if isinstance(dp, (DPGuarantee, NoGuarantee)):
        return dp
    if isinstance(obj, _PUFFERFISH) or isinstance(getattr(obj, "guarantee", None), _PUFFERFISH):
        raise _refuse(obj)
    raise ParameterTypeError("guarantee", obj, "a DP-type guarantee (PureDP, ApproxDP, ZCDP, GDP), a Certified "
                             "Pufferfish guarantee, or an object with .dp_guarantee")


def _part(i: int, p: Any) -> tuple[Any, Any]:
    from ..framework import Framework
    if isinstance(p, tuple) and len(p) == 2:
        g, fw = p
    elif hasattr(p, "guarantee") and hasattr(p, "framework"):
        g, fw = p.guarantee, p.framework
    else:
        raise ParameterTypeError(f"parts[{i}]", p, "a (guarantee, framework) pair or a calibrated mechanism")
    if not isinstance(fw, Framework):
        raise ParameterTypeError(f"parts[{i}].framework", fw, "a puffer.Framework (the part's (S, Q, Theta_k))")
    if isinstance(g, PP):
        if g.delta != 0.0:
            raise ParameterError(f"parts[{i}].guarantee", g, "an RPP or a pure PP (delta = 0): Prop E.1 is stated "
                                 "for Renyi Pufferfish privacy")
        g = RPP(math.inf, g.eps, g.provenance)
    if not isinstance(g, (RPP, RPPCurve)):
        raise ParameterTypeError(f"parts[{i}].guarantee", g, "an RPP, RPPCurve or pure PP guarantee")
    return g, fw


def compose_parallel(parts: Any, *, independent: bool = False) -> Any:
    """Parallel composition of Rényi Pufferfish guarantees over independent parts of the data
    (Pierquin et al. 2024, Prop E.1): (alpha, max_k eps_k)-RPP.

    parts: (guarantee, framework) pairs or calibrated mechanisms, one per part X_k; guarantees
        are RPP at a common order, RPPCurves (composed at their common orders) or pure PP.
    independent: the caller's statement that the parts are independent under every prior
        (Theta = {prod_k theta_k}, each secret independent of the other parts' parameters). It
        cannot be read off separate frameworks, so it must be given explicitly.

    Checked: at least one part; the frameworks are distinct and their secrets pairwise disjoint
    (so every discriminative pair is about one part); a common order.

    >>> import puffer
    >>> from puffer import models
    >>> fa, fb = models.correlated_pair(0.5, 0.3), models.correlated_pair(0.4, 0.2)
    >>> fb = puffer.Framework.from_conditionals(
    ...     {th: {("b", s): fb.conditional(th, s) for s in fb.secrets} for th in fb.thetas},
    ...     [(("b", a), ("b", c)) for a, c in fb.pairs])
    >>> puffer.compose_parallel([(puffer.RPP(2.0, 0.3), fa), (puffer.RPP(2.0, 0.7), fb)], independent=True)
    RPP(alpha=2.0, eps=0.7)
    """
    if independent is not True:
        raise ParameterError("independent", independent, "True: Prop E.1 needs the parts to be independent under "
                             "every prior (Theta a product); puffer cannot check this from separate frameworks")
    try:
        items = list(parts)
    except TypeError:
        raise ParameterTypeError("parts", parts, "a list of (guarantee, framework) pairs") from None
    if not items:
        raise ParameterError("parts", parts, "at least one part")
    gs, fws = zip(*[_part(i, p) for i, p in enumerate(items)])
    owner: dict[Any, int] = {}
    for k, fw in enumerate(fws):
        for j in range(k):
            if fws[j] is fw:
                raise ParameterError(f"parts[{k}].framework", fw,
                                     f"a framework for another part (same object as part {j})")
        for s in fw.secrets:
            if s in owner:
                raise ParameterError(f"parts[{k}].framework.secrets", s, f"secrets about part {k} only (also a secret "
                                     f"of part {owner[s]}: a pair could relate two parts, Prop E.1 needs pairs within "
                                     "one part)")
            owner[s] = k
    refs = (Ref("pierquin2024", "Prop E.1"),)
    if all(isinstance(g, RPP) for g in gs):
        alphas = {g.alpha for g in gs}
        if len(alphas) != 1:
            raise ParameterError("parts", sorted(alphas), "RPP guarantees at one common order alpha")
        k = max(range(len(gs)), key=lambda i: gs[i].eps)
        prov = Provenance(mechanism="compose_parallel", theorem="parallel composition over independent parts",
                          witness={"part": k}, refs=refs,
                          notes=f"{len(gs)} parts; frameworks {[fw.digest()[:12] for fw in fws]}")
        return RPP(gs[0].alpha, gs[k].eps, prov)
    curves = [g if isinstance(g, RPPCurve) else RPPCurve((g.alpha,), (g.eps,)) for g in gs]
    common = sorted(set(curves[0].alphas).intersection(*[set(c.alphas) for c in curves[1:]]))
    if not common:
        raise ParameterError("parts", [c.alphas for c in curves], "RPP curves sharing at least one order")
    eps = [max(c.eps[c.alphas.index(a)] for c in curves) for a in common]
    prov = Provenance(mechanism="compose_parallel", theorem="parallel composition over independent parts (per order)",
                      refs=refs, notes=f"{len(gs)} parts")
    return RPPCurve(tuple(common), tuple(eps), prov)
