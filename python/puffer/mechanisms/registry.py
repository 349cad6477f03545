"""The registry of mechanism builders: the rows of ``puffer run``'s table.

Each row is a (label, constructor) pair for a framework and a privacy target.
:func:`puffer.mechanisms.best` calibrates these rows and keeps the one with the least loss; the
``puffer run`` and ``puffer audit`` commands and the publishing layer (a framework file as the
mechanism) list them, and :mod:`puffer.config` (which parses framework files) re-exports them. Rows needing delta appear only
when the target has ``delta``, the RPP rows only with ``alpha``: no privacy parameter is ever
defaulted. Each mechanism's module names the results it implements.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..framework import Framework
    from ._base import Mechanism

__all__ = ["build_mechanisms", "markov_quilt_mechanisms"]


def build_mechanisms(fw: Framework, target: dict[str, Any]) -> list[tuple[str, Callable[[], Mechanism]]]:
    """(label, constructor) for every mechanism that applies to ``fw`` and the target.

    Rows needing delta appear only when ``target`` has ``delta``, the RPP rows only with ``alpha``
    (no privacy parameter is ever defaulted). :func:`puffer.mechanisms.best` chooses among these
    rows (and the Markov quilt rows)."""
    from ..noise import Gaussian, Laplace
    from .kantorovich import Kantorovich, KantorovichGaussian
    from .wasserstein import (
        ApproximateWasserstein,
        DistributionAwareWasserstein,
        GeneralWasserstein,
        Wasserstein,
    )

    eps = target["eps"]
    delta, alpha = target.get("delta"), target.get("alpha")
    out: list[tuple[str, Callable[[], Mechanism]]] = [("Wasserstein (Laplace)", lambda: Wasserstein(fw, eps=eps))]
    if alpha is not None:
        out.append((f"GWM Gaussian, RPP alpha={alpha:g}",
                    lambda: GeneralWasserstein(fw, Gaussian, alpha=alpha, eps=eps)))
    if delta is not None:
        out.append((f"GWM Gaussian, PP delta={delta:g}",
                    lambda: GeneralWasserstein(fw, Gaussian, eps=eps, delta=delta)))
        out.append((f"GWM Laplace, PP delta={delta:g}",
                    lambda: GeneralWasserstein(fw, Laplace, eps=eps, delta=delta)))
    if fw.dim == 1:
        out.append(("Kantorovich Thm 2 (Laplace)", lambda: Kantorovich(fw, eps=eps, method="thm2")))
        if delta is not None:
            out.append(("Kantorovich Thm 3 Gaussian (tail)",
                        lambda: KantorovichGaussian(fw, eps=eps, delta=delta, variant="tail")))
            out.append((f"GAWM Laplace, delta={delta:g}",
                        lambda: ApproximateWasserstein(fw, Laplace, delta, eps=eps)))
        DA = DistributionAwareWasserstein
        if alpha is not None:
            out.append((f"DAGWM Gaussian, RPP alpha={alpha:g}",
                        lambda: DA.calibrate(fw, Gaussian(1.0), alpha=alpha, eps=eps)))
        if delta is not None:
            out.append((f"DAGWM Gaussian, PP delta={delta:g}",
                        lambda: DA.calibrate(fw, Gaussian(1.0), delta=delta, eps=eps)))
    return out


def markov_quilt_mechanisms(fw: Framework, target: dict[str, Any]) -> list[tuple[str, Callable[[], Mechanism]]]:
    """(label, constructor) of the Markov Quilt Mechanism rows (Song et al. 2017) that ``puffer
    run`` and ``puffer audit`` list after :func:`build_mechanisms` for a Markov-chain framework:
    MQMExact and MQMApprox, Laplace noise for the sum (and every other Lipschitz) query; none
    for other frameworks (the quilt needs a chain)."""
    from ..models import MarkovChainFramework
    from .markov_quilt import MarkovQuilt

    if not isinstance(fw, MarkovChainFramework):
        return []
    eps = target["eps"]
    rows: list[tuple[str, Callable[[], Mechanism]]] = [
        ("Markov quilt, MQMExact (Laplace)", lambda: MarkovQuilt(fw, eps=eps, method="exact"))]
    if not fw.time_varying:   # MQMApprox bounds the influence by one matrix's spectral gap
        rows.append(("Markov quilt, MQMApprox (Laplace)", lambda: MarkovQuilt(fw, eps=eps, method="approx")))
    return rows
