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

    def __post_init__(self) -> None:
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


def as_dp_guarantee(obj: Any) -> DPGuarantee | NoGuarantee:
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


def _part(i: Any, p: Any) -> tuple[Any, Any]:
    from ..framework import Framework
    if isinstance(p, tuple) and len(p) == 2:
        g, fw = p
    elif hasattr(p, "guarantee") and hasattr(p, "framework"):
        g, fw = p.guarantee, p.framework
    else:
        raise ParameterTypeError(f"parts[{i!r}]", p, "a (guarantee, framework) pair or a calibrated mechanism")
    if not isinstance(fw, Framework):
        raise ParameterTypeError(f"parts[{i!r}].framework", fw, "a puffer.Framework (the part's (S, Q, Theta_k))")
    if isinstance(g, PP):
        if g.delta != 0.0:
            raise ParameterError(f"parts[{i!r}].guarantee", g, "an RPP or a pure PP (delta = 0): Prop E.1 is stated "
                                 "for Renyi Pufferfish privacy")
    elif not isinstance(g, (RPP, RPPCurve)):
        raise ParameterTypeError(f"parts[{i!r}].guarantee", g, "an RPP, RPPCurve or pure PP guarantee")
    return g, fw


def _model_key(fw: Any) -> str:
    """A digest of what a framework says about its data, blind to every name: the secrets', the
    priors' and the states' labels can be renamed at will, the model (conditional laws, or a
    Markov chain's matrices, initial laws, values and length) cannot. Two parts with the same key
    are the same model of (most likely) the same data."""
    import hashlib

    import numpy as np

    from ..models import MarkovChainFramework

    def digest(*chunks: bytes) -> bytes:
        h = hashlib.sha256()
        for c in chunks:
            h.update(len(c).to_bytes(8, "little") + c)
        return h.digest()

    if isinstance(fw, MarkovChainFramework):
        priors = sorted(digest(np.ascontiguousarray(M).tobytes(), np.ascontiguousarray(pi).tobytes())
                        for M, pi in zip(fw.transitions, fw.initial_laws))
        body = [b"markov", repr((fw.length, fw.state_values.tolist())).encode(), *priors]
        if fw.time_varying:   # the matrices' layout is part of the model (one per step, or a period)
            body.insert(1, repr(("time-varying", fw.transitions.shape[1:], fw.period)).encode())
    else:
        per_theta = []
        for th in fw.thetas:
            laws = []
            for s in fw.secrets:
                law = fw.conditional(th, s)
                laws.append(digest(repr(fw.secret_probability(th, s)).encode(),
                                   b"" if law is None else np.ascontiguousarray(law.atoms).tobytes(),
                                   b"" if law is None else np.ascontiguousarray(law.probs).tobytes()))
            per_theta.append(digest(*sorted(laws)))
        body = [b"framework", repr(fw.dim).encode(), *sorted(per_theta)]
    return digest(*body).hex()


def compose_parallel(parts: Any, *, independent: bool = False) -> PP | RPP | RPPCurve:
    """Parallel composition of Rényi Pufferfish guarantees over independent parts of the data
    (Pierquin et al. 2024, Prop E.1): (alpha, max_k eps_k)-RPP.

    parts: (guarantee, framework) pairs or calibrated mechanisms, one per part X_k; guarantees
        are RPP at a common order, RPPCurves (composed at their common orders) or pure PP. Pure
        PP parts give pure PP (eps = max_k eps_k, Prop E.1 at alpha = inf); mixed with RPP parts,
        an eps-PP part counts as (alpha, eps)-RPP at every order (D_alpha <= D_inf). A mapping
        ``{what the part covers: part}`` names the parts (see below).
    independent: the caller's statement that the parts are independent under every prior
        (Theta = {prod_k theta_k}, each secret independent of the other parts' parameters). It
        cannot be read off separate frameworks, so it must be given explicitly.

    Checked: at least one part; the frameworks are distinct objects, their secrets pairwise
    disjoint (so every discriminative pair is about one part), and they are different models:
    names can be renamed away, so two parts whose frameworks are the same model up to the
    names of secrets, priors and states (e.g. one chain with ``states=`` renamed) are refused as
    a likely double use of the same data. Distinct data that share one model (two households
    with the same chain) are given as a mapping naming what each part covers, e.g.
    ``{"household 12": m12, "household 31": m31}``: the statement that they are different data.
    A common order.

    >>> import puffer
    >>> from puffer import models
    >>> fa, fb = models.correlated_pair(0.5, 0.3), models.correlated_pair(0.4, 0.2)
    >>> fb = puffer.Framework.from_conditionals(
    ...     {th: {("b", s): fb.conditional(th, s) for s in fb.secrets} for th in fb.thetas},
    ...     [(("b", a), ("b", c)) for a, c in fb.pairs])
    >>> puffer.compose_parallel([(puffer.RPP(2.0, 0.3), fa), (puffer.RPP(2.0, 0.7), fb)], independent=True)
    RPP(alpha=2.0, eps=0.7)
    >>> puffer.compose_parallel([(puffer.PP(0.3), fa), (puffer.PP(0.7), fb)], independent=True)
    PP(eps=0.7, delta=0.0)
    """
    if independent is not True:
        raise ParameterError("independent", independent, "True: Prop E.1 needs the parts to be independent under "
                             "every prior (Theta a product); puffer cannot check this from separate frameworks")
    named = isinstance(parts, dict)
    try:
        names = list(parts) if named else None
        items = list(parts.values()) if named else list(parts)
    except TypeError:
        raise ParameterTypeError("parts", parts, "a list of (guarantee, framework) pairs") from None
    if not items:
        raise ParameterError("parts", parts, "at least one part")
    ids = names if names is not None else list(range(len(items)))
    gs, fws = zip(*[_part(i, p) for i, p in zip(ids, items)])
    owner: dict[Any, Any] = {}
    models: dict[str, Any] = {}
    for k, fw in enumerate(fws):
        for j in range(k):
            if fws[j] is fw:
                raise ParameterError(f"parts[{ids[k]!r}].framework", fw,
                                     f"a framework for another part (same object as part {ids[j]!r})")
        for s in fw.secrets:
            if s in owner:
                raise ParameterError(f"parts[{ids[k]!r}].framework.secrets", s,
                                     f"secrets about part {ids[k]!r} only (also a secret of part {owner[s]!r}: a "
                                     "pair could relate two parts, Prop E.1 needs pairs within one part)")
            owner[s] = ids[k]
        key = _model_key(fw)
        if key in models and not named:
            raise ParameterError(
                f"parts[{k}].framework", fw,
                f"a model of another part of the data: it is the model of part {models[key]} up to the names of "
                "secrets, priors and states, which is most likely the same data twice (Prop E.1 needs disjoint "
                "parts). If these are different data with one model, name what each part covers: "
                "compose_parallel({'part A': ..., 'part B': ...}, independent=True)")
        models.setdefault(key, ids[k])
    refs = (Ref("pierquin2024", "Prop E.1"),)
    covers = f"; parts {[str(n) for n in names]}" if names is not None else ""
    worst = max(range(len(gs)), key=lambda i: gs[i].eps if not isinstance(gs[i], RPPCurve) else max(gs[i].eps))
    if all(isinstance(g, PP) for g in gs):
        prov = Provenance(mechanism="compose_parallel", theorem="parallel composition over independent parts "
                          "(alpha = inf: pure PP)", witness={"part": ids[worst]}, refs=refs,
                          notes=f"{len(gs)} parts; frameworks {[fw.digest()[:12] for fw in fws]}{covers}")
        return PP(gs[worst].eps, 0.0, prov)
    rpp = [g for g in gs if not isinstance(g, PP)]
    pp_eps = max((g.eps for g in gs if isinstance(g, PP)), default=0.0)   # eps-PP: (alpha, eps)-RPP for all alpha
    if all(isinstance(g, RPP) for g in rpp):
        alphas = {g.alpha for g in rpp}
        if len(alphas) != 1:
            raise ParameterError("parts", sorted(alphas), "RPP guarantees at one common order alpha")
        k = max(range(len(gs)), key=lambda i: gs[i].eps)
        prov = Provenance(mechanism="compose_parallel", theorem="parallel composition over independent parts",
                          witness={"part": ids[k]}, refs=refs,
                          notes=f"{len(gs)} parts; frameworks {[fw.digest()[:12] for fw in fws]}{covers}")
        return RPP(rpp[0].alpha, max(max(g.eps for g in rpp), pp_eps), prov)
    curves = [g if isinstance(g, RPPCurve) else RPPCurve((g.alpha,), (g.eps,)) for g in rpp]
    common = sorted(set(curves[0].alphas).intersection(*[set(c.alphas) for c in curves[1:]]))
    if not common:
        raise ParameterError("parts", [c.alphas for c in curves], "RPP curves sharing at least one order")
    eps = [max(max(c.eps[c.alphas.index(a)] for c in curves), pp_eps) for a in common]
    prov = Provenance(mechanism="compose_parallel", theorem="parallel composition over independent parts (per order)",
                      refs=refs, notes=f"{len(gs)} parts{covers}")
    return RPPCurve(tuple(common), tuple(eps), prov)
