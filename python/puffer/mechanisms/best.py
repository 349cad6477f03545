"""The least noise by default: the mechanism that needs the least noise for a target.

Every mechanism that applies to a framework and a privacy target,
calibrated, and the one whose noise has the smallest error.

:func:`best` calibrates the rows of ``puffer run``'s table (:func:`puffer.mechanisms.registry.build_mechanisms`
and, for a Markov chain, :func:`puffer.mechanisms.registry.markov_quilt_mechanisms`): the Wasserstein mechanism
(Song et al. 2017), the General Wasserstein Mechanism with Gaussian and Laplace noise (Pierquin et
al. 2024, Thm 3.3; for (eps, delta) the exact privacy profile, :mod:`puffer.noise.profile`), the
Kantorovich mechanism (Ding 2022, the better of Theorems 1 and 2; Theorem 3 for Gaussian noise),
the approximate GWM (Pierquin et al. 2024, Thm 4.3, its near radius), the distribution-aware GWM
(Thm 4.5) and the Markov Quilt Mechanism (Song et al. 2017). A row *applies* when its guarantee
implies the target: (eps, delta)-PP with ``delta``, (alpha, eps)-RPP with ``alpha``, eps-PP
otherwise (eps-PP implies both). Among those the smallest ``loss`` of the calibrated noise wins:
``"variance"`` (default: the variance of the noise added to the query, summed over its d
coordinates), ``"abs"`` (the expected absolute error, summed likewise) or a callable
``loss(noise) -> float`` of the noise object (``None`` for a row that adds none). Ties keep the
table's order. The result lists every row with why it lost or did not apply.

>>> import puffer
>>> s = puffer.mechanisms.best(puffer.models.correlated_pair(), eps=1.0, delta=1e-5)
>>> s
Selection('Kantorovich Thm 2 (Laplace)': Laplace(b=1.542...), variance 4.756; 7 candidates, target (1, 1e-05)-PP)
>>> print(s.table())
   mechanism                          noise            variance  ratio  why
   Wasserstein (Laplace)              Laplace(2)       8         1.68x  variance 1.68x the chosen
   GWM Gaussian, PP delta=1e-05       Gaussian(7.461)  55.67     11.7x  variance 11.7x the chosen
...
*  Kantorovich Thm 2 (Laplace)        Laplace(1.542)   4.756     1      least variance
...
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError, PufferError
from ..guarantees import Provenance
from ..refs import Ref

if TYPE_CHECKING:
    from ..framework import Framework
    from ._base import Mechanism

__all__ = ["best", "select", "selection_target", "Candidate", "Selection", "noise_loss", "meets"]

LOSSES = ("variance", "abs")


@dataclass(frozen=True)
class Candidate:
    """One row of a :class:`Selection`: its ``label`` (as ``puffer run`` prints it), the calibrated
    ``mechanism`` (None where it failed), ``loss``, ``status`` and ``reason``. ``status`` is
    "chosen", "lost" or "n/a" (did not apply, or failed with a puffer error: ``reason`` says
    which); ``loss`` is NaN where it was not evaluated."""

    label: str
    mechanism: Any
    loss: float
    status: str
    reason: str

    def __repr__(self) -> str:
        return f"Candidate({self.label!r}, {self.status}, loss={self.loss:.4g})"


@dataclass(frozen=True)
class Selection:
    """The chosen mechanism for a framework and target, with every candidate (see :func:`best`).

    ``mechanism``, ``label`` and ``loss`` are the winner's; ``rows`` every :class:`Candidate` in
    table order; ``target`` the (eps, delta, alpha) it was chosen for and ``loss_name`` what was
    minimised.
    ``release(...)`` is the winner's :meth:`~puffer.mechanisms.Mechanism.release`."""

    mechanism: Any
    label: str
    loss: float
    loss_name: str
    target: dict[str, Any]
    rows: tuple[Candidate, ...] = field(repr=False)

    def __repr__(self) -> str:
        return (f"Selection({self.label!r}: {self.mechanism.noise!r}, {self.loss_name} {self.loss:.4g}; "
                f"{len(self.rows)} candidates, target {target_text(self.target)})")

    def release(self, values: Any, **kwargs: Any) -> Any:
        """The winner's release (see :meth:`puffer.mechanisms.Mechanism.release`)."""
        return self.mechanism.release(values, **kwargs)

    def table(self) -> str:
        """Every candidate: its noise, loss (and ratio to the winner's) and why it lost or did not apply."""
        head = ["", "mechanism", "noise", self.loss_name, "ratio", "why"]
        lines = []
        for r in self.rows:
            m = r.mechanism
            noise = "-" if m is None else ("none" if m.noise is None else _noise_text(m.noise))
            ok = not math.isnan(r.loss)
            ratio = "-" if not ok else ("1" if r.status == "chosen" else _ratio(r.loss, self.loss))
            lines.append(["*" if r.status == "chosen" else "", r.label, noise,
                          f"{r.loss:.4g}" if ok else "-", ratio, r.reason])
        w = [max(len(x[i]) for x in lines + [head]) for i in range(len(head) - 1)]
        def fmt(row: list[str]) -> str:
            return ("  ".join(c.ljust(n) for c, n in zip(row, w)) + "  " + row[-1]).rstrip()

        return "\n".join([fmt(head), *[fmt(x) for x in lines]])

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: the chosen label, the loss's name, the target and every row's label, status,
        loss (None where not evaluated) and reason."""
        return {"chosen": self.label, "loss": self.loss_name, "target": dict(self.target),
                "rows": [{"label": r.label, "status": r.status, "loss": None if math.isnan(r.loss) else r.loss,
                          "reason": r.reason} for r in self.rows]}


# The function best() has this module's name, so ``puffer.mechanisms.best`` is the function and the
# module has no page of its own: its types are documented (and pickled) where users import them.
Candidate.__module__ = Selection.__module__ = "puffer.mechanisms"


def _ratio(v: float, best: float) -> str:
    if best == 0:
        return "inf" if v > 0 else "1"
    return f"{v / best:.3g}x"


def _noise_text(noise: Any) -> str:
    base = getattr(noise, "base", noise)
    d = getattr(noise, "d", 1)
    s = f"{type(base).__name__}({base.scale:.4g})"
    return s if d == 1 else f"{s} x {d}"


def selection_target(target: dict[str, Any]) -> dict[str, Any]:
    """The target a framework file's least-noise row is chosen for (``puffer run``, ``puffer noise``):
    (eps, delta)-PP when the file gives delta, else (alpha, eps)-RPP when it gives alpha, else eps-PP
    (the rows for the other targets are listed too)."""
    t = {"eps": target["eps"], "delta": target.get("delta"), "alpha": None}
    if t["delta"] is None:
        t["alpha"] = target.get("alpha")
    return t


def target_text(t: dict[str, Any]) -> str:
    if t.get("delta") is not None:
        return f"({t['eps']:g}, {t['delta']:g})-PP"
    if t.get("alpha") is not None:
        return f"({t['alpha']:g}, {t['eps']:g})-RPP"
    return f"{t['eps']:g}-PP"


def _moment(base: Any, loss: str) -> float:
    """The variance / E|N| of one coordinate of ``base`` noise (closed forms via scipy, a quadrature
    for Custom)."""
    import numpy as np

    from ..noise import Custom

    if isinstance(base, Custom):
        from scipy import integrate

        p = 2 if loss == "variance" else 1
        f = lambda x: abs(x) ** p * math.exp(float(base._safe(np.array([x]))[0]))  # noqa: E731
        v, _ = integrate.quad(f, -math.inf, math.inf, limit=400)
        return float(v) * base.scale ** p
    dist = getattr(base, "_dist", None)
    if dist is None:
        raise ParameterError("loss", loss, f"a callable loss: the {loss} of {base!r} is not known to puffer")
    d = dist()
    if loss == "variance":
        v = float(d.var())
    else:
        v = float(d.expect(abs)) if math.isfinite(float(d.mean())) else math.inf   # no mean: E|N| = inf
    return math.inf if math.isnan(v) else v


def noise_loss(noise: Any, loss: str | Callable[[Any], float] = "variance") -> float:
    """The loss of a mechanism's noise (``None``: no noise, loss 0 for the named losses)."""
    if callable(loss):
        v = loss(noise)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(float(v)) or float(v) < 0:
            raise ParameterError("loss", f"{v!r} for {noise!r}", "a loss callable returning a number >= 0 (inf allowed)")
        return float(v)
    if noise is None:
        return 0.0
    d = int(getattr(noise, "d", 1))
    return d * _moment(getattr(noise, "base", noise), loss)


def meets(guarantee: Any, target: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``guarantee`` implies the target (eps, delta)-PP / (alpha, eps)-RPP / eps-PP, and why not."""
    from ..guarantees import PP, RPP, ApproxRPP, RPPCurve

    eps, delta, alpha = target["eps"], target.get("delta"), target.get("alpha")
    tol = eps * 1e-12   # the targets' own rounding (a calibration meets eps to the last few ulps)
    if isinstance(guarantee, ApproxRPP) and math.isinf(guarantee.alpha):
        # (inf, eps, delta)-approximate RPP gives (eps, delta)-PP (Pierquin et al. 2024, Prop C.1)
        guarantee = PP(guarantee.eps, guarantee.delta, Provenance().cite(Ref("pierquin2024", "Prop C.1")))
    if isinstance(guarantee, PP):
        if guarantee.eps > eps + tol:
            return False, f"its eps {guarantee.eps:.4g} > {eps:g}"
        if guarantee.delta > (delta or 0.0):
            need = "pure eps-PP" if delta is None else f"delta <= {delta:g}"
            return False, f"its delta {guarantee.delta:g}: the target needs {need}"
        if alpha is not None and delta is None and guarantee.delta > 0:
            return False, "an (eps, delta) guarantee does not give Renyi PP"
        return True, ""
    if isinstance(guarantee, (RPPCurve, RPP)):
        if alpha is None or delta is not None:
            return False, "a Renyi guarantee: it gives (eps, delta)-PP only through a conversion, at a larger eps"
        e = guarantee.at(alpha).eps if isinstance(guarantee, RPPCurve) else (
            guarantee.eps if guarantee.alpha >= alpha else math.inf)
        return (e <= eps + tol, "" if e <= eps + tol else f"its eps at alpha={alpha:g} is {e:.4g} > {eps:g}")
    return False, f"a {type(guarantee).__name__} guarantee is not comparable with {target_text(target)}"


def select(rows: Sequence[tuple[str, Any]], target: dict[str, Any],
           loss: str | Callable[[Any], float] = "variance") -> Selection:
    """The :class:`Selection` among calibrated rows ``(label, mechanism or the PufferError it raised)``."""
    name = loss if isinstance(loss, str) else getattr(loss, "__name__", "loss")
    cands: list[list[Any]] = []
    for label, m in rows:
        if isinstance(m, BaseException):
            cands.append([label, None, math.nan, "n/a", f"did not apply: {m}"])
            continue
        ok, why = meets(m.guarantee, target)
        if not ok:
            cands.append([label, m, math.nan, "n/a", why])
            continue
        try:
            v = noise_loss(m.noise, loss)
        except PufferError as exc:
            cands.append([label, m, math.nan, "n/a", str(exc)])
            continue
        cands.append([label, m, v, "", ""])
    scored = [c for c in cands if c[3] == ""]
    if not scored:
        why = "; ".join(f"{c[0]}: {c[4]}" for c in cands)
        raise ParameterError("target", target_text(target), f"a target some mechanism meets ({why})")
    win = min(scored, key=lambda c: c[2])   # the first of equal losses: the table's order
    for c in scored:
        if c is win:
            c[3], c[4] = "chosen", f"least {name}"
        else:
            c[3] = "lost"
            c[4] = f"{name} {_ratio(c[2], win[2])} the chosen" if c[2] != win[2] else "tie (the earlier row is kept)"
    out = tuple(Candidate(*c) for c in cands)
    return Selection(win[1], win[0], win[2], name, dict(target), out)


def best(framework: Framework, eps: float, delta: float | None = None, alpha: float | None = None, *,
         loss: str | Callable[[Any], float] = "variance") -> Selection:
    """Every mechanism of ``puffer run``'s table for ``framework`` and the target, calibrated, and
    the one with the least ``loss``.

    The rows are those of :func:`puffer.mechanisms.registry.build_mechanisms` and, for a Markov
    chain, :func:`puffer.mechanisms.registry.markov_quilt_mechanisms`. A row *applies* when its
    guarantee implies the target: (eps, delta)-PP with ``delta``, (alpha, eps)-RPP with ``alpha``,
    eps-PP otherwise (eps-PP implies both). Among the rows that apply the smallest ``loss`` of the
    calibrated noise wins; ties keep the table's order (the earlier row). The result lists every
    row with why it lost or did not apply (:meth:`Selection.table`).

    Parameters
    ----------
    framework : Framework
        The framework (secrets, secret pairs and the adversary's beliefs Theta).
    eps : float
        The target's eps (> 0).
    delta : float, optional
        The target's delta, in (0, 1): the target is (eps, delta)-PP.
    alpha : float, optional
        A Rényi order > 1: the target is (alpha, eps)-RPP (not with ``delta``).
    loss : {"variance", "abs"} or callable
        What is minimised: ``"variance"`` (default: the variance of the noise added to the query,
        summed over its d coordinates), ``"abs"`` (the expected absolute error, summed likewise) or
        a callable ``loss(noise) -> float`` of the noise object (``None`` for a row that adds none).

    Returns
    -------
    Selection
        The chosen mechanism (``.mechanism``, ``.label``, ``.loss``) and every row
        (``.rows``, :class:`Candidate`; ``.table()`` prints them).
    """
    from ..framework import Framework
    from .registry import build_mechanisms, markov_quilt_mechanisms

    if not isinstance(framework, Framework):
        raise ParameterTypeError("framework", framework, "a puffer.Framework")
    e = V.positive("eps", eps)
    if delta is not None and alpha is not None:
        raise ParameterError("alpha", alpha, "None when delta is given (one target: (eps, delta)-PP or (alpha, eps)-RPP)")
    target = {"eps": e, "delta": None if delta is None else V.delta_open("delta", delta),
              "alpha": None if alpha is None else V.alpha("alpha", alpha)}
    if isinstance(loss, str):
        if loss not in LOSSES:
            raise ParameterError("loss", loss, f"one of {', '.join(LOSSES)} or a callable loss(noise) -> float")
    elif not callable(loss):
        raise ParameterTypeError("loss", loss, f"one of {', '.join(LOSSES)} or a callable loss(noise) -> float")
    spec = {k: v for k, v in target.items() if v is not None}
    return select(calibrate_rows(build_mechanisms(framework, spec) + markov_quilt_mechanisms(framework, spec)),
                  target, loss)


def calibrate_rows(todo: Sequence[tuple[str, Callable[[], Mechanism]]],
                   progress: Callable[[str], None] | None = None) -> list[tuple[str, Any]]:
    """(label, mechanism or the puffer error it raised) for each (label, constructor)."""
    out: list[tuple[str, Any]] = []
    for k, (label, make) in enumerate(todo, 1):
        if progress is not None:
            progress(f"[{k}/{len(todo)}] calibrating {label}")
        try:
            out.append((label, make()))
        except PufferError as exc:
            out.append((label, exc))
    return out
